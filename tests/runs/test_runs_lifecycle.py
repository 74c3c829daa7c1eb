"""The run lifecycle through the CLI: start, log, list, show, events, checkpoint, end."""

from __future__ import annotations

import sqlite3

from tests.conftest import git


def _ref(cli, *args: str) -> str:
    return cli.json(*args)["ref"]


def test_run_lifecycle(cli, initialised):
    started = cli.json("run", "start", "fix the parser", "-c", "keep the API")
    run = started["run"]["ref"]
    assert run.startswith("run:") and len(started["constraints"]) == 1
    assert started["run"]["head"] == git(initialised, "rev-parse", "HEAD").strip()
    assert started["run"]["branch"] == "main"

    q = _ref(cli, "log", "question", "which locale does CI use?")
    a = _ref(cli, "log", "answer", "C.UTF-8", "--resolves", q, "--source", "tool:ci",
             "--meta", "job=42")
    v = _ref(cli, "log", "verify", "run the parser tests 50 times")

    listed = cli.json("run", "list")
    assert [r["ref"] for r in listed] == [run]
    assert listed[0]["events"] == 4 and listed[0]["current"] is True

    shown = cli.json("run", "show", run)
    assert shown["counts"] == {"answer": 1, "constraint": 1, "question": 1, "verify": 1}
    assert shown["open_questions"] == []  # answered
    assert [i["ref"] for i in shown["pending_verifications"]] == [v]
    human = cli.ok("run", "show").stdout
    assert "pending verifications: 1" in human and v in human

    events = cli.json("events", "--run", run)
    assert [e["kind"] for e in events] == ["constraint", "question", "answer", "verify"]
    answer = events[2]
    assert set(answer) >= {"ref", "kind", "text", "source", "ts", "meta", "resolves",
                           "supersedes"}
    assert answer["ref"] == a and answer["resolves"] == q and answer["source"] == "tool:ci"
    assert answer["meta"] == {"job": "42"}
    assert [e["ref"] for e in cli.json("events", "--kind", "verify")] == [v]
    assert [e["kind"] for e in cli.json("events", "--limit", "2")] == ["answer", "verify"]

    ended = cli.json("run", "end", run, "--status", "done")
    assert ended["status"] == "done" and ended["ended"]
    assert cli.json("run", "list", "--status", "done")[0]["ref"] == run
    assert cli.json("run", "list", "--status", "active") == []
    # events of a finished run are still readable by ref
    assert len(cli.json("events", "--run", run)) == 4


def test_events_across_runs_and_current_run(cli, initialised):
    first = cli.json("run", "start", "one")["run"]["ref"]
    cli.ok("log", "note", "in one")
    second = cli.json("run", "start", "two")["run"]["ref"]
    cli.ok("log", "note", "in two")
    assert [e["text"] for e in cli.json("events")] == ["in two"]  # the current run
    assert [e["run"] for e in cli.json("events", "--all")] == [first, second]
    assert cli.json("events", "--run", first)[0]["text"] == "in one"


def test_checkpoint_stores_pointers_and_snapshot(cli, initialised):
    run = cli.json("run", "start", "goal", "-c", "c1")["run"]["ref"]
    q = _ref(cli, "log", "question", "open?")
    v = _ref(cli, "log", "verify", "check it")
    d = _ref(cli, "log", "diagnosis", "the cause")
    (initialised / "work.py").write_text("x = 1\n")
    cp = cli.json("checkpoint", "--note", "half way")
    assert cp["ref"].startswith("evt:") and cp["run"] == run
    assert cp["note"] == "half way"
    state = cp["state"]
    assert state["open_questions"] == [q]
    assert state["pending_verifications"] == [v]
    assert state["diagnoses"] == [d]
    assert state["goal"] == "goal" and len(state["constraints"]) == 1
    assert state["last_event_seq"] == 4  # the constraint, q, v, d
    assert cp["event_seq"] == 5  # the checkpoint event itself
    assert cp["worktree"]["dirty_files"] == ["work.py"]
    # The snapshot reads back as the same JSON object it always was, in the pointers too.
    assert list(cp["worktree"]) == ["branch", "head", "dirty_fingerprint", "dirty_files"]
    assert state["worktree"] == cp["worktree"] and cp["worktree"]["head"]
    # It is also a `checkpoint` event in the timeline.
    kinds = [e["kind"] for e in cli.json("events")]
    assert kinds[-1] == "checkpoint"
    shown = cli.json("run", "show")
    assert shown["last_checkpoint"]["ref"] == cp["ref"]
    assert shown["recorded_version"]["since"] == f"checkpoint {cp['ref']}"
    assert shown["recorded_version"]["dirty_files"] == ["work.py"]


def test_supersedes_replaces_in_working_state(cli, initialised):
    cli.ok("run", "start", "goal")
    old = _ref(cli, "log", "constraint", "use python 3.10")
    new = _ref(cli, "log", "constraint", "use python 3.11", "--supersedes", old)
    pack = cli.json("resume")
    texts = [c["text"] for c in pack["constraints"]]
    assert texts == ["use python 3.11"]
    assert pack["constraints"][0]["replaces"] == old
    assert new in pack["text"] and old in pack["text"]  # "replaces evt:old" shown
    assert "use python 3.10" not in pack["text"]


def test_run_end_twice_fails_and_changes_nothing(cli, initialised):
    run = cli.json("run", "start", "goal")["run"]["ref"]
    cli.ok("run", "end", run, "--status", "abandoned")
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    before = db.execute("SELECT status, ended, updated FROM runs").fetchall()
    result = cli("run", "end", run, "--status", "done")
    assert result.exit_code == 1
    assert "already ended" in result.stderr and "\n" not in result.stderr.strip()
    assert db.execute("SELECT status, ended, updated FROM runs").fetchall() == before


def test_run_end_without_a_ref_twice_ends_nothing_else(cli, initialised):
    """Two active runs; `run end` twice: the second exits 1 and the other run stays active.
    The current run is one rule for every command: after it ends there is none, and `log`,
    `checkpoint`, `exec` and the git hooks' events do not move to another active run."""
    other = cli.json("run", "start", "an older task")["run"]["ref"]
    current = cli.json("run", "start", "this task")["run"]["ref"]
    assert cli.json("run", "end")["ref"] == current
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    before = db.execute("SELECT id, status, ended, updated FROM runs ORDER BY id").fetchall()
    again = cli("run", "end", "--json")
    assert again.exit_code == 1, again.stdout
    message = again.json()["error"]["message"]
    assert f"the most recent, {current}, is done" in message and other in message
    assert db.execute("SELECT id, status, ended, updated FROM runs ORDER BY id").fetchall() \
        == before
    assert cli.json("run", "show", other)["run"]["status"] == "active"
    # the same rule for writes and for what `run list` stars
    assert cli("log", "note", "where does this go?").exit_code == 1
    assert cli("checkpoint", "--note", "x").exit_code == 1
    assert not any(r["current"] for r in cli.json("run", "list"))
    assert cli.json("events", "--run", other) == []  # nothing landed on the other run
    # naming the other run still works, and a new start makes a current run again
    assert cli.json("run", "end", other)["status"] == "done"
    fresh = cli.json("run", "start", "next")["run"]["ref"]
    assert cli.json("log", "note", "here")["run"] == fresh


def test_run_end_rejects_unknown_status(cli, initialised):
    run = cli.json("run", "start", "goal")["run"]["ref"]
    result = cli("run", "end", run, "--status", "finished", "--json")
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "invalid_input"
    assert cli.json("run", "show", run)["run"]["status"] == "active"


def test_links_stay_within_one_run(cli, initialised):
    # Working state is derived per run: an answer logged in run B (the current run, because
    # --run was forgotten) must not silently close run A's question while appearing only in B.
    run_a = cli.json("run", "start", "run A")["run"]["ref"]
    q = _ref(cli, "log", "question", "which locale?")
    v = _ref(cli, "log", "verify", "run the tests")
    cli.json("run", "start", "run B")
    for args in (("answer", "C.UTF-8", "--resolves", q), ("verified", "ok", "--resolves", v),
                 ("constraint", "a rule", "--supersedes", q)):
        result = cli("log", *args)
        assert result.exit_code == 1, result.stdout
        assert run_a in result.stderr and "--run" in result.stderr
    shown = cli.json("run", "show", run_a)
    assert [e["ref"] for e in shown["open_questions"]] == [q]
    assert [e["ref"] for e in shown["pending_verifications"]] == [v]
    # With --run naming the right run it works.
    cli.ok("log", "answer", "C.UTF-8", "--resolves", q, "--run", run_a)


def test_events_of_a_kind_across_runs_are_read_by_run(store):
    """`events --all --kind` (m063 dropped `events_kind`): the events of that kind in every
    run, newest N or all, found through (run, kind, seq) rather than a scan of the log."""
    from datetime import timedelta

    from agentstate.runs.log import append_event, list_events, start_run

    made = []
    for name in ("one", "two", "three"):
        run, _ = start_run(store, name)
        for n in range(4):
            store.clock.advance(timedelta(seconds=1))
            made.append(append_event(store, run.ref, "decision" if n % 2 else "note",
                                     f"{name} {n}"))
    decisions = [e.ref for e in made if e.kind == "decision"]
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        assert [e.ref for e in list_events(store, kind="decision")] == decisions
        assert [e.ref for e in list_events(store, kind="decision", limit=2)] == decisions[-2:]
    finally:
        store.conn.set_trace_callback(None)
    assert "events_kind" not in {row[0] for row in store.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index'")}
    for sql in (s for s in statements if s.startswith("SELECT * FROM events")):
        plan = " ".join(row[3] for row in store.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        assert "SEARCH events USING INDEX events_run_kind_seq (run=? AND kind=?)" in plan, plan
