"""`agentstate import jsonl` and the reusable `import_events` path."""

from __future__ import annotations

import json
import sqlite3

import pytest

from agentstate.runs.importer import ImportLine, import_events
from agentstate.runs.log import list_events
from tests.conftest import run_agentstate


def _write(path, lines):
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n"
                            for ln in lines))
    return path


GOOD = [
    {"kind": "observation", "text": "tests fail on CI", "ts": "2026-01-10T08:00:00Z",
     "source": "tool:pytest", "meta": {"exit_code": 1}},
    {"kind": "question", "text": "which locale?", "id": "q1"},
    {"kind": "answer", "text": "de_DE", "resolves": "q1"},
    {"kind": "note", "text": "same text twice"},
    {"kind": "note", "text": "same text twice"},
]


def _count(repo) -> int:
    db = sqlite3.connect(repo / ".agentstate" / "state.db")
    return db.execute("SELECT count(*) FROM events").fetchone()[0]


def test_import_creates_a_run_and_is_idempotent(cli, initialised):
    path = _write(initialised / "session.jsonl", GOOD)
    first = cli.json("import", "jsonl", str(path))
    assert first["created_run"] is True
    assert (first["imported"], first["duplicates"], first["malformed"]) == (5, 0, 0)
    run = first["run"]
    shown = cli.json("run", "show", run)
    assert shown["run"]["goal"] == f"imported from {path}"
    events = cli.json("events", "--run", run)
    assert events[0]["ts"] == "2026-01-10T08:00:00.000000Z"
    assert events[0]["source"] == "tool:pytest" and events[0]["meta"] == {"exit_code": 1}
    assert events[1]["source"] == "tool:import"  # the default source of imported lines
    assert events[2]["resolves"] == events[1]["ref"]  # "q1" resolved within the file
    assert shown["open_questions"] == []

    again = cli.json("import", "jsonl", str(path))
    assert again["run"] == run and again["created_run"] is False
    assert (again["imported"], again["duplicates"]) == (0, 5)
    assert _count(initialised) == 5

    # The file grows (a transcript being appended to): only the new line is added.
    _write(path, [*GOOD, {"kind": "decision", "text": "pin the locale"}])
    grown = cli.json("import", "jsonl", str(path))
    assert (grown["imported"], grown["duplicates"], grown["run"]) == (1, 5, run)


def test_import_into_named_run_or_new_goal(cli, initialised):
    path = _write(initialised / "a.jsonl", GOOD[:1])
    run = cli.json("run", "start", "existing")["run"]["ref"]
    into = cli.json("import", "jsonl", str(path), "--run", run)
    assert into["run"] == run and into["imported"] == 1 and not into["created_run"]
    assert cli.json("import", "jsonl", str(path), "--run", run)["duplicates"] == 1
    fresh = cli.json("import", "jsonl", str(path), "--goal", "yesterday's session")
    assert fresh["created_run"] and fresh["run"] != run
    assert cli.json("run", "show", fresh["run"])["run"]["goal"] == "yesterday's session"
    assert cli("import", "jsonl", str(path), "--run", run, "--goal", "x").exit_code == 2


def test_malformed_lines_are_skipped_and_counted(initialised):
    path = _write(initialised / "mixed.jsonl", [
        GOOD[0], "not json at all", {"kind": "bogus", "text": "x"}, {"kind": "note"},
        "", {"kind": "note", "text": "fine", "meta": "not an object"},
        ["a", "list"], {"kind": "note", "text": "ok", "extra": 1},
        {"kind": "answer", "text": "no target"},
        {"kind": "note", "text": "key AKIAABCDEFGHIJKLMNOP"},
        {"kind": "note", "text": "last good line", "ts": "yesterday"},
        {"kind": "note", "text": "really the last good line"},
    ])
    proc = run_agentstate("import", "jsonl", str(path), "--json", cwd=initialised)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)["data"]
    assert data["imported"] == 2
    assert data["malformed"] == 8 and data["refused"] == 1
    assert "warning" in proc.stderr and "line 2" in proc.stderr
    assert "AKIA" not in proc.stderr + proc.stdout  # a refused value is never echoed
    assert {r["line"] for r in data["rejected"]} == {2, 3, 4, 6, 7, 8, 9, 10, 11}
    assert _count(initialised) == 2


def test_strict_imports_nothing_on_a_bad_line(initialised):
    path = _write(initialised / "bad.jsonl", [GOOD[0], GOOD[1], "{broken"])
    proc = run_agentstate("import", "jsonl", str(path), "--strict", cwd=initialised)
    assert proc.returncode == 1
    assert "line 3" in proc.stderr and "nothing imported" in proc.stderr
    assert "Traceback" not in proc.stderr
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # not even the run
    secret = _write(initialised / "secret.jsonl",
                    [GOOD[0], {"kind": "note", "text": "AKIAABCDEFGHIJKLMNOP"}])
    proc = run_agentstate("import", "jsonl", str(secret), "--strict", cwd=initialised)
    assert proc.returncode == 3 and "AKIA" not in proc.stderr
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_missing_file_and_ended_run(cli, initialised):
    result = cli("import", "jsonl", "nope.jsonl")
    assert result.exit_code == 1 and "no such file" in result.stderr
    path = _write(initialised / "s.jsonl", GOOD[:2])
    run = cli.json("import", "jsonl", str(path))["run"]
    cli.ok("run", "end", run)
    # Re-importing the same file: still idempotent, nothing to add, no error.
    assert cli.json("import", "jsonl", str(path))["duplicates"] == 2
    _write(path, [*GOOD[:2], GOOD[3]])
    result = cli("import", "jsonl", str(path))
    assert result.exit_code == 1 and "has ended" in result.stderr


def test_import_events_api_batches_and_identity(store):
    records = [{"kind": "note", "text": f"n{i}"} for i in range(23)]
    result = import_events(store, records, goal="api import", batch_size=5)
    assert result.imported == 23 and result.run
    again = import_events(store, records, run_ref=result.run, batch_size=5)
    assert (again.imported, again.duplicates) == (0, 23)
    # Identity by the source's own id: position changes do not matter then.
    lines = [ImportLine(position=100 + i, data={"kind": "note", "text": "x", "id": f"m{i}"})
             for i in range(3)]
    first = import_events(store, lines, run_ref=result.run)
    shifted = [ImportLine(position=i, data=line.data) for i, line in enumerate(lines)]
    second = import_events(store, shifted, run_ref=result.run)
    assert first.imported == 3 and second.duplicates == 3
    assert len(list_events(store, result.run)) == 26


def test_large_file_imports_with_progress(cli, initialised):
    path = initialised / "big.jsonl"
    with path.open("w") as handle:
        for i in range(3000):
            handle.write(json.dumps({"kind": "observation", "text": f"step {i} " + "x" * 80})
                         + "\n")
    assert path.stat().st_size > 256 * 1024
    data = cli.json("import", "jsonl", str(path))
    assert data["imported"] == 3000
    assert cli.json("import", "jsonl", str(path))["duplicates"] == 3000


def test_same_import_with_goal_twice_adds_nothing(cli, initialised):
    # The same command line run twice (a script re-run) must not create a second run with
    # copies of every event: the file's earlier import with this goal is found again.
    path = _write(initialised / "session.jsonl", GOOD)
    first = cli.json("import", "jsonl", str(path), "--goal", "Review the session")
    again = cli.json("import", "jsonl", str(path), "--goal", "Review the session")
    assert again["run"] == first["run"] and again["created_run"] is False
    assert (again["imported"], again["duplicates"]) == (0, 5)
    # Without --goal, the run that earlier import created is used, as `--help` says.
    plain = cli.json("import", "jsonl", str(path))
    assert plain["run"] == first["run"] and plain["imported"] == 0
    assert _count(initialised) == 5
    # Another goal asks for another run on purpose.
    other = cli.json("import", "jsonl", str(path), "--goal", "Another look")
    assert other["created_run"] and other["run"] != first["run"]


def test_simultaneous_imports_of_one_file_share_one_run(store, repo):
    """Import B looks for an earlier run before A has created one; A then imports the whole
    file; B must find A's run inside its own write transaction, not start a second one."""
    from agentstate.store.clock import IdSource
    from agentstate.store.db import open_store

    records = [{"kind": "note", "text": f"line {i}", "id": f"r{i}"} for i in range(5)]
    other = open_store(start=repo, ids=IdSource(seed=99))

    class ImportAFirst:
        def __iter__(self):
            # Runs after B's look-up and before B's first write transaction.
            first = import_events(other, records, origin="/shared/log.jsonl")
            assert first.created_run and first.imported == 5
            return iter(records)

    second = import_events(store, ImportAFirst(), origin="/shared/log.jsonl")
    other.close()
    assert not second.created_run
    assert (second.imported, second.duplicates) == (0, 5)
    runs = store.conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert runs == 1
    assert len(list_events(store, second.run)) == 5


EDITS = {
    "kind": "decision",
    "text": "tests fail on CI only on Tuesdays",
    "ts": "2026-01-11T08:00:00Z",
    "source": "tool:tox",
    "meta": {"exit_code": 2},
}


@pytest.mark.parametrize("field", sorted(EDITS))
def test_an_edited_record_is_imported_not_skipped_as_a_duplicate(store, field):
    """The import key covers every field: a record edited in its source (same id) is new."""
    original = {"kind": "observation", "text": "tests fail on CI", "id": "r1",
                "ts": "2026-01-10T08:00:00Z", "source": "tool:pytest", "meta": {"exit_code": 1}}
    first = import_events(store, [original], goal="edits")
    edited = {**original, field: EDITS[field]}
    second = import_events(store, [edited], run_ref=first.run)
    assert (second.imported, second.duplicates) == (1, 0), field
    stored = list_events(store, first.run)[-1]
    assert getattr(stored, field) == (EDITS[field] if field != "ts"
                                      else "2026-01-11T08:00:00.000000Z")
