"""`agentstate eval locomo`: reading, importing, every arm and metric on a hand-made
conversation whose right answers are known, bad input, and the one assembly path."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from agentstate.context import assemble
from agentstate.errors import InvalidInput, NotFound, UsageError
from agentstate.evals.arms import ABLATIONS, ARMS, Arms, PlainSearch, check_arms, or_query
from agentstate.evals.locomo import imported, load_conversations
from agentstate.evals.measure import question_recall, run_locomo
from agentstate.store.principals import resolve_principal
from agentstate.tokens import TokenCounter
from tests.conftest import FIXTURES, ROOT, run_agentstate

LOCOMO_FIXTURES = FIXTURES / "locomo"
TINY = LOCOMO_FIXTURES / "tiny.json"


def tiny():
    return load_conversations(TINY)[0]


def line_cost(text: str) -> int:
    return TokenCounter().count(text)


# ---------------------------------------------------------------- reading


def test_reading_turns_questions_and_what_is_skipped():
    conv = tiny()
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert conv.turns[0].text == "Alice: I adopted a greyhound named Biscuit last spring."
    assert conv.turns[2].text.endswith(
        "every morning. [image: a dog running on a sandy beach]")
    assert conv.turns[0].ts == "2023-05-01T09:15:00.000000Z"
    assert conv.turns[3].ts == "2023-06-03T18:40:00.000000Z"
    # 4 answerable with evidence; the adversarial one and the one without evidence skipped;
    # "D2:1; D9:9" is split, D9:9 names no turn.
    assert [q.evidence for q in conv.questions] == [["D1:1"], ["D2:3"], ["D1:1", "D2:1"],
                                                    ["D2:1"]]
    assert (conv.skipped_adversarial, conv.skipped_no_evidence, conv.unknown_evidence) == \
        (1, 1, 1)


def test_the_published_bundle_shape_is_read_too(tmp_path):
    data = json.loads(TINY.read_text())
    qa = data.pop("qa")
    bundle = tmp_path / "bundle.json"
    bundle.write_text(json.dumps([{"sample_id": "x", "conversation": data, "qa": qa}] * 2))
    convs = load_conversations(bundle)
    assert [c.name for c in convs] == ["bundle.json#1", "bundle.json#2"]
    assert [len(c.questions) for c in convs] == [4, 4]


def test_a_folder_reads_every_json_file_in_name_order(tmp_path):
    for name in ("b.json", "a.json"):
        shutil.copy(TINY, tmp_path / name)
    (tmp_path / "README.md").write_text("not a conversation")
    assert [c.name for c in load_conversations(tmp_path)] == ["a.json", "b.json"]


# ---------------------------------------------------------------- importing


def test_import_keeps_dia_id_text_and_session_date_and_removes_the_store():
    conv = tiny()
    with imported(conv) as data:
        root = data.store.root
        assert root.exists() and Path(tempfile.gettempdir()) in root.parents
        assert [e.meta["dia_id"] for e in data.events] == [t.dia_id for t in conv.turns]
        assert [e.text for e in data.events] == [t.text for t in conv.turns]
        assert data.events[0].ts == "2023-05-01T09:15:00.000000Z"
        assert data.refs_by_turn["D2:3"] == {data.events[5].ref}
        assert data.rejected == 0
    assert not root.exists()


def test_eval_keeps_only_its_report_in_the_users_store(initialised, cli, tmp_path,
                                                      monkeypatch):
    """The measuring happens in temporary stores; the user's store gains the report (the
    same JSON --json prints, for the ui's Eval page) and nothing else."""
    import sqlite3

    from agentstate.evals.results import latest_reports
    from agentstate.store.db import open_store

    def dump():
        conn = sqlite3.connect(initialised / ".agentstate" / "state.db")
        try:
            return [line for line in conn.iterdump() if "eval_reports" not in line]
        finally:
            conn.close()

    # A temporary folder of this test's own: other tests (in parallel) run evals too.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    before = dump()
    left = set(Path(tempfile.gettempdir()).glob("agentstate-eval-*"))
    result = cli.ok("eval", "locomo", str(TINY), "--budget", "500", "--arm", "full", "--json")
    assert dump() == before
    assert set(Path(tempfile.gettempdir()).glob("agentstate-eval-*")) == left
    assert "report kept in the store" in result.stderr
    store = open_store(initialised / ".agentstate")
    try:
        kept = latest_reports(store)
    finally:
        store.close()
    assert [k.kind for k in kept] == ["locomo"]
    assert kept[0].report == result.json()["data"]
    assert kept[0].arms == ["full"] and kept[0].budgets == [500]


def test_eval_outside_a_store_says_the_report_is_not_kept(cli, repo):
    result = cli.ok("eval", "locomo", str(TINY), "--budget", "500", "--arm", "full")
    assert "the report is not kept" in result.stderr
    assert not (repo / ".agentstate").exists()


# ---------------------------------------------------------------- metrics


def test_question_recall_is_the_share_of_evidence_turns_in_the_pack():
    by_turn = {"D1": {"evt:a"}, "D2": {"evt:b"}, "D3": {"evt:c", "evt:d"}}
    assert question_recall(["D1", "D2"], by_turn, {"evt:a"}) == 0.5
    assert question_recall(["D1", "D2", "D3"], by_turn, {"evt:d", "evt:b", "evt:a"}) == 1.0
    assert question_recall(["D3"], by_turn, {"evt:zzz"}) == 0.0


def test_plain_search_is_bm25_with_porter_stemming_over_non_stop_words():
    assert or_query("When did Bob start the cello?") == '"bob" OR "start" OR "cello"'
    search = PlainSearch(["Bob: I started learning the cello.", "Alice: a greyhound",
                          "Bob: cello cello cello, started again"])
    # "start" matches "started" only through the porter stemmer.
    assert sorted(search.ranked("start")) == [0, 2]
    assert search.ranked("the of and") == []
    search.close()


def _arms_budget(conv) -> int:
    """Room for exactly the two newest turns (D2:2, D2:3) and their newline."""
    return line_cost(conv.turns[4].text) + line_cost(conv.turns[5].text) + 1


def test_plain_search_finds_an_old_turn_that_recency_misses():
    conv = tiny()
    budget = _arms_budget(conv)
    with imported(conv) as data:
        arms = Arms(data.store, data.events)
        by_turn = data.refs_by_turn
        q_dog, q_teacher = conv.questions[0], conv.questions[1]
        recent = arms.pack("raw-history", q_dog.question, budget)
        assert recent.refs == {data.events[4].ref, data.events[5].ref}
        assert question_recall(q_dog.evidence, by_turn, recent.refs) == 0.0
        assert question_recall(q_teacher.evidence, by_turn, recent.refs) == 1.0
        searched = arms.pack("plain-search", q_dog.question, budget)
        assert data.events[0].ref in searched.refs
        assert question_recall(q_dog.evidence, by_turn, searched.refs) == 1.0
        for pack in (recent, searched):
            assert 0 < pack.tokens <= budget
        arms.close()


def test_every_metric_on_the_tiny_conversation():
    conv = tiny()
    budget = _arms_budget(conv)
    report = run_locomo(TINY, budgets=[budget, 2000])
    assert report.questions == 4
    assert report.by_category == {"multi-hop": 1, "temporal": 1, "open-domain": 0,
                                  "single-hop": 2}
    assert (report.skipped_adversarial, report.skipped_no_evidence, report.unknown_evidence) \
        == (1, 1, 1)
    recent = report.result("raw-history", budget)
    # Only D2:2 and D2:3 fit: the teacher question (single-hop) is found, nothing else.
    assert recent.recall == 0.25
    assert recent.by_category == {"multi-hop": 0.0, "temporal": 0.0, "open-domain": None,
                                  "single-hop": 0.5}
    # 5 evidence turns in all, 1 found: the other 4 were there but did not fit.
    assert recent.misses == {"budget": 4}
    # The assembled arms refuse a budget below the task's essentials (the run's goal and
    # drift summary alone need more than these 20 tokens): counted as errors, recall 0.
    starved = report.result("no-memory", budget)
    assert starved.errors == 4 and starved.recall == 0.0 and starved.misses == {}
    assert report.result("no-memory", 2000).misses == {"not retrieved": 5}
    searched = report.result("plain-search", budget)
    assert searched.by_category["single-hop"] == 1.0
    assert searched.by_category["temporal"] == 1.0
    # With the whole conversation in the budget every arm that reads history finds it all.
    for arm in ("full", "plain-search", "raw-history", "structured"):
        assert report.result(arm, 2000).recall == 1.0, arm
    none = report.result("no-memory", 2000)
    assert none.recall == 0.0 and none.errors == 0
    for row in report.results:
        assert row.tokens_mean <= row.budget
        assert row.p50_ms > 0 or row.errors == row.questions  # refused packs are not timed
        assert row.questions == 4


def test_full_arm_retrieves_old_evidence_at_a_small_budget(tmp_path):
    """Beyond the run's trajectory window, a turn reaches the pack only through retrieval."""
    data = json.loads(TINY.read_text())
    data["session_3_date_time"] = "8:00 am on 9 July, 2023"
    data["session_3"] = [{"speaker": "Bob", "dia_id": f"D3:{n}",
                          "text": f"Weather chat number {n}: cloudy again today."}
                         for n in range(1, 61)]
    longer = _write(tmp_path / "long.json", json.dumps(data))
    conv = load_conversations(longer)[0]
    with imported(conv) as imp:
        arms = Arms(imp.store, imp.events)
        full = arms.pack("full", conv.questions[0].question, 300)
        recent = arms.pack("raw-history", conv.questions[0].question, 300)
    assert imp.events[0].ref in full.refs
    assert imp.events[0].ref not in recent.refs


def test_only_whole_or_compressed_fragments_count_never_pointers(monkeypatch):
    real = assemble.build_context
    conv = tiny()
    with imported(conv) as data:
        target = data.events[0].ref

        def demoted(*args, **kwargs):
            pack = real(*args, **kwargs)
            for entry in pack.manifest:
                if entry.ref == target:
                    entry.decision = "pointer"
            return pack

        arms = Arms(data.store, data.events)
        assert target in arms.pack("full", conv.questions[0].question, 2000).refs
        monkeypatch.setattr(assemble, "build_context", demoted)
        assert target not in arms.pack("full", conv.questions[0].question, 2000).refs


def test_progress_callbacks_count_every_pack():
    seen = {"total": None, "done": 0}

    def start(total):
        seen["total"] = total

    def advance(n):
        seen["done"] += n

    run_locomo(TINY, arms=["raw-history", "plain-search"], budgets=[100, 200, 300],
               on_start=start, on_progress=advance)
    assert seen == {"total": 4 * 2 * 3, "done": 4 * 2 * 3}


def test_limit_questions_measures_the_first_n():
    report = run_locomo(TINY, arms=["raw-history"], budgets=[1000], limit_questions=2)
    assert report.questions == 2 and report.result("raw-history", 1000).questions == 2


# ---------------------------------------------------------------- the one assembly path


def test_assembled_arms_use_the_context_commands_assembly(monkeypatch):
    calls = []
    real = assemble.build_context

    def spy(*args, **kwargs):
        calls.append({k: v for k, v in kwargs.items()
                      if k in ("retrieval", "trajectory", "read_gate")})
        return real(*args, **kwargs)

    monkeypatch.setattr(assemble, "build_context", spy)
    run_locomo(TINY, arms=["full", "structured", "no-memory"], budgets=[500])
    assert len(calls) == 4 * 3
    assert calls[:3] == [{}, {"read_gate": False}, {"retrieval": False, "trajectory": False}]


def test_eval_measures_the_very_pack_that_context_prints(tmp_path):
    conv = tiny()
    question = conv.questions[2].question
    with imported(conv, root=tmp_path) as data:
        measured = Arms(data.store, data.events).pack("full", question, 400)
        now = data.store.now()
    proc = run_agentstate("--dir", str(tmp_path), "context", "--query", question,
                          "--budget", "400", "--json", cwd=tmp_path,
                          env={"AGENTSTATE_NOW": now})
    assert proc.returncode == 0, proc.stderr
    pack = json.loads(proc.stdout)["data"]
    assert pack["text_hash"] == measured.text_hash
    in_pack = {e["ref"] for e in pack["manifest"]
               if e["decision"] in ("included", "compressed") and e["ref"].startswith("evt:")}
    assert in_pack == measured.refs
    assert pack["tokens"] == measured.tokens


def test_structured_arm_keeps_what_the_read_gate_drops(store):
    from agentstate.runs.log import append_event, start_run

    run, _ = start_run(store, "notes")
    first = append_event(store, run.ref, "note", "the parser rejects tabs in YAML keys")
    append_event(store, run.ref, "note", "tabs are fine", supersedes=first.ref)
    gated = assemble.build_context(store, query="parser tabs YAML", budget=2000, save=False,
                                   trajectory=False, principal=resolve_principal(store))
    open_ = assemble.build_context(store, query="parser tabs YAML", budget=2000, save=False,
                                   trajectory=False, read_gate=False,
                                   principal=resolve_principal(store))
    decision = {e.ref: e.decision for e in gated.manifest}
    assert decision[first.ref] == "dropped"
    assert {e.ref: e.decision for e in open_.manifest}[first.ref] == "included"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("setup, message", [
    (lambda d: d / "missing", "no such file or folder"),
    (lambda d: d, "no conversation files"),
    (lambda d: _write(d / "x.json", '{"hello": 1}'), "expected a LoCoMo conversation"),
    (lambda d: _write(d / "x.json", '{"qa": [], '), "not valid JSON"),
    (lambda d: _write(d / "x.json", "[]"), "empty list"),
    (lambda d: _write(d / "x.json", json.dumps({"session_1": [], "qa": [],
                                                "session_1_date_time": "yesterday"})),
     "is not a date"),
])
def test_bad_input_is_one_line_exit_1(tmp_path, cli, setup, message):
    target = setup(tmp_path)
    result = cli("eval", "locomo", str(target))
    assert result.exit_code == 1
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_bad_options(cli):
    for args, code, message in [
        (("--arm", "magic"), 2, "unknown arm 'magic'"),
        (("--budget", "0"), 1, "positive number of tokens"),
        (("--budget", "-5"), 1, "positive number of tokens"),
        (("--budget", "lots"), 2, "whole number of tokens"),
    ]:
        result = cli("eval", "locomo", str(TINY), *args)
        assert result.exit_code == code, (args, result.stderr)
        assert message in result.stderr, args
    with pytest.raises(UsageError):
        check_arms(["full", "nope"])
    with pytest.raises(NotFound):
        load_conversations(Path("/nonexistent/locomo"))
    with pytest.raises(InvalidInput):
        run_locomo(TINY, budgets=[0])


def test_help_names_every_arm_and_ablation_and_answer_visible(cli):
    # The help is where a user learns which arms exist: each one accepted must be named.
    text = " ".join(cli.ok("eval", "locomo", "--help").stdout.split())
    for arm in ARMS + ABLATIONS:
        assert arm in text, arm
    assert "Answer-visible" in text


def test_errors_come_in_the_json_envelope(cli):
    result = cli("eval", "locomo", "/nonexistent/locomo", "--json")
    assert result.exit_code == 1
    payload = result.json()
    assert payload["ok"] is False and payload["error"]["code"] == "not_found"


# ---------------------------------------------------------------- output


def test_json_envelope_and_table(cli):
    data = cli.json("eval", "locomo", str(TINY), "-b", "300", "-b", "100", "--arm",
                    "raw-history", "--arm", "full")
    assert data["budgets"] == [100, 300] and data["arms"] == ["raw-history", "full"]
    assert {(r["arm"], r["budget"]) for r in data["results"]} == {
        ("raw-history", 100), ("raw-history", 300), ("full", 100), ("full", 300)}
    assert set(data["results"][0]) >= {"recall", "by_category", "tokens_mean", "p50_ms"}
    table = cli.ok("eval", "locomo", str(TINY), "--arm", "plain-search").stdout
    assert "plain-search" in table and "8,000" in table and "single-hop" in table


def test_plot_needs_matplotlib_and_says_so(cli, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    result = cli("eval", "locomo", str(TINY), "--plot", str(tmp_path / "r.png"))
    assert result.exit_code == 1
    assert "pip install 'matplotlib>=3.7'" in result.stderr and "agentstate-cli" in result.stderr
    assert not (tmp_path / "r.png").exists()


def test_plot_file_is_checked_before_the_run(cli, tmp_path):
    result = cli("eval", "locomo", str(TINY), "--plot", str(tmp_path / "nowhere" / "r.png"))
    assert result.exit_code == 1 and "does not exist" in result.stderr
    result = cli("eval", "locomo", str(TINY), "--plot", str(tmp_path / "r.txt"))
    assert result.exit_code == 1 and ".png" in result.stderr


def test_plot_draws_a_png(cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "recall.png"
    cli.ok("eval", "locomo", str(TINY), "-b", "200", "-b", "800", "--plot", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------- the real data


def _locomo_dir() -> Path | None:
    explicit = os.environ.get("AGENTSTATE_LOCOMO_DIR")
    candidates = [Path(explicit)] if explicit else []
    root = ROOT
    candidates += [root.parent / "shared" / "eval" / "locomo-dev",
                   root.parent.parent / "shared" / "eval" / "locomo-dev"]
    return next((c for c in candidates if (c / "26.json").is_file()), None)


def test_real_locomo_sample():
    folder = _locomo_dir()
    if folder is None:
        pytest.skip("LoCoMo dev data not found (../shared/eval/locomo-dev or "
                    "AGENTSTATE_LOCOMO_DIR)")
    report = run_locomo(folder, arms=["plain-search", "raw-history"], budgets=[1000],
                        limit_questions=60)
    assert len(report.conversations) == 5 and report.questions == 60
    searched = report.result("plain-search", 1000).recall
    recent = report.result("raw-history", 1000).recall
    assert searched > 0.4 and recent < 0.2 and searched > recent


def test_recall_without_the_read_gate_returns_what_the_gate_withholds(store):
    """The `structured` arm's memory side: a forgotten memory is withheld by the gate and
    comes back, flagged, only when the gate is switched off."""
    from agentstate.memory.forget import forget
    from agentstate.memory.recall import recall
    from agentstate.memory.write import remember

    stored = remember(store, "the cache lives in /var/cache/app", kind="fact",
                      principal=resolve_principal(store))
    forget(store, stored.ref, principal=resolve_principal(store))
    gated = recall(store, "cache lives", principal=resolve_principal(store))
    assert gated.hits == [] and gated.withheld == {"forgotten": 1}
    open_ = recall(store, "cache lives", gate=False, principal=resolve_principal(store))
    assert [h.text for h in open_.hits] == ["the cache lives in /var/cache/app"]
    assert "included:forgotten" in open_.hits[0].flags
    pack = assemble.build_context(store, query="cache lives", budget=2000, save=False,
                                  no_run=True, read_gate=False, principal=resolve_principal(store))
    assert "/var/cache/app" in pack.text
    assert "/var/cache/app" not in assemble.build_context(
        store, query="cache lives", budget=2000, save=False, no_run=True,
        principal=resolve_principal(store)).text
