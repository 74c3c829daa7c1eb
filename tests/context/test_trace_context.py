"""`agentstate trace REF` in every direction: pack, memory, event, skill version, run."""

from __future__ import annotations

import pytest


def walk(node):
    yield node
    for child in node["children"]:
        yield from walk(child)


def find(node, relation, ref=None):
    return [n for n in walk(node) if n["relation"] == relation
            and (ref is None or n["ref"] == ref)]


@pytest.fixture
def world(cli, initialised):
    run = cli.json("run", "start", "verify the tests pass after the parser change",
                   "-c", "do not touch the public API")["run"]["ref"]
    obs = cli.json("log", "observation", "make check (pytest) passed: 212 tests in 9.1s",
                   "--source", "tool:pytest")["ref"]
    old = cli.json("log", "decision", "use make test as the test entry")["ref"]
    newer = cli.json("log", "decision", "use make check as the test entry",
                     "--supersedes", old)["ref"]
    mem = cli.json("remember", "the repository's tests pass with make check", "--kind", "fact",
                   "--evidence", obs)["ref"]
    load = cli.json("skill", "load", "verify-tests")
    pack = cli.json("context", "--budget", "3000",
                    "--query", "verify tests pass make check")
    return {"run": run, "obs": obs, "old": old, "newer": newer, "mem": mem, "load": load,
            "pack": pack}


def test_trace_pack_to_fragments_memory_versions_and_evidence(cli, world):
    tree = cli.json("trace", world["pack"]["ref"])
    assert tree["ref"] == world["pack"]["ref"]
    assert tree["detail"]["text_hash"] == world["pack"]["text_hash"]
    fragments = {n["ref"]: n for n in tree["children"] if n["relation"] == "fragment"}
    assert set(fragments) == {e["ref"] for e in world["pack"]["manifest"]}
    memory = fragments[world["mem"]]
    assert memory["detail"]["decision"] == "included"
    version = find(memory, "memory version", world["mem"])[0]
    evidence = find(version, "evidence", world["obs"])
    assert evidence and "tool:pytest" in evidence[0]["summary"]


def test_trace_memory_versions_evidence_and_packs(cli, world):
    tree = cli.json("trace", world["mem"])
    assert find(tree, "version", world["mem"])
    assert find(tree, "evidence", world["obs"])
    uses = find(tree, "considered in", world["pack"]["ref"])
    assert uses and uses[0]["detail"]["decision"] == "included"
    # a correction: the old version shows as superseded, the new one is current
    corrected = cli.json("memory", "correct", world["mem"], "the tests pass with make ci")
    tree = cli.json("trace", world["mem"].split("@")[0])
    versions = {n["ref"]: n for n in tree["children"] if "version" in n["relation"]}
    assert versions[world["mem"]]["detail"]["status"] == "superseded"
    assert versions[corrected["ref"]]["detail"]["status"] == "active"
    assert tree["detail"]["current"] == [corrected["ref"]]


def test_trace_event_packs_and_memories_drawn_from_it(cli, world):
    tree = cli.json("trace", world["obs"])
    assert tree["detail"]["text"] == "make check (pytest) passed: 212 tests in 9.1s"
    assert find(tree, "drawn into", world["mem"])
    assert find(tree, "considered in", world["pack"]["ref"])
    # a superseded event is reported stale, with what replaced it
    stale = cli.json("trace", world["old"])
    assert stale["detail"]["superseded_by"] == world["newer"]
    assert "STALE" in stale["summary"]


def test_trace_skill_version_to_runs_that_loaded_it(cli, world):
    ref = world["load"]["ref"]
    assert ref.startswith("skill:verify-tests@v")
    tree = cli.json("trace", ref)
    loaded = find(tree, "loaded by", world["run"])
    assert loaded and loaded[0]["detail"]["event"] == world["load"]["event"]
    # the bare name lists every version
    assert cli.json("trace", "skill:verify-tests")["detail"]["versions"]


def test_trace_run_packs_loads_and_memories(cli, world):
    tree = cli.json("trace", world["run"])
    [pack] = find(tree, "pack", world["pack"]["ref"])
    detail = pack["detail"]
    assert list(detail) == ["pack", "created", "budget", "tokens", "text_hash"]
    assert (detail["pack"], detail["budget"], detail["text_hash"]) == (
        world["pack"]["ref"], 3000, world["pack"]["text_hash"])
    assert pack["summary"] == f"{detail['tokens']}/3000 tokens, {detail['created'][:19]}"
    assert find(tree, "loaded skill", world["load"]["ref"])
    assert find(tree, "memory drawn from it", world["mem"])
    # and the skill-load event leads back to the skill version
    event_tree = cli.json("trace", world["load"]["event"])
    assert find(event_tree, "loaded", world["load"]["ref"])


def test_trace_never_assembled_is_visible(cli, world):
    other = cli.json("remember", "the docs build with mkdocs", "--kind", "fact")["ref"]
    tree = cli.json("trace", other)
    assert not find(tree, "considered in", world["pack"]["ref"])
    assert any("no context pack considered it" in n["summary"] for n in walk(tree))


def test_trace_human_tree(cli, world):
    out = cli.ok("trace", world["pack"]["ref"]).stdout
    assert out.startswith(world["pack"]["ref"])
    assert "├── fragment: " in out and world["mem"] in out and world["obs"] in out


BAD_REFS = [
    ("foo", "malformed ref"),
    ("evt:zzzzzzzz", "no event"),
    ("mem:zzzzzzzz", "no memory"),
    ("pack:zzzzzzzz", "no pack"),
    ("run:zzzzzzzz", "no run"),
    ("skill:nope", "no skill"),
    ("skill:verify-tests@v99", "no skill version"),
]


def test_trace_bad_refs(cli, initialised):
    for ref, needle in BAD_REFS:
        result = cli("trace", ref)
        assert result.exit_code == 1, ref
        assert needle in result.stderr and "Traceback" not in result.stderr, ref
        assert cli("trace", ref, "--json").json()["ok"] is False


def test_trace_and_explain_show_each_fragments_stored_note(cli, world):
    """The manifest's note (why a fragment ranks where it does, what a duplicate repeats)
    is stored with the pack: `trace` shows the note the pack's manifest had."""
    noted = [(e["ref"], e["note"]) for e in world["pack"]["manifest"] if e["note"]]
    assert noted  # search hits say their rank
    tree = cli.json("trace", world["pack"]["ref"])
    # One row per manifest row, in order (an event can be two candidates).
    fragments = [n for n in tree["children"] if n["relation"] == "fragment"]
    assert [(n["ref"], n["detail"]["note"]) for n in fragments] == \
        [(e["ref"], e["note"]) for e in world["pack"]["manifest"]]
    for node in fragments:
        assert node["detail"]["note"] in node["summary"]
    explained = cli.ok("context", "--budget", "200", "--query", "verify tests pass make check",
                       "--explain").stdout
    assert "note" in explained and "of the best" in explained
