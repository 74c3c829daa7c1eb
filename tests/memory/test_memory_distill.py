"""`run distill`: confirmed things become proposals with evidence; guesses never do."""

from __future__ import annotations

from tests.memory.test_memory_gate import log, start_run


def _tool_event(store, run_ref, command, exit_code):
    from agentstate.runs.log import append_event

    # The shape the tool layer logs: a summary line, argv and the exit code in meta.
    return append_event(store, run_ref, "tool", f"$ {command} → exit {exit_code} in 0.42s",
                        source=f"tool:{command.split()[0]}",
                        meta={"command": command.split(), "exit_code": exit_code,
                              "allowed": True, "timed_out": False},
                        allow_system_kinds=True).ref


def test_distill_proposes_confirmed_facts_only(cli, initialised):
    from agentstate.store.db import open_store

    run = start_run(cli)
    hyp = log(cli, "hypothesis", "maybe the redis cache is stale", "--run", run)
    log(cli, "diagnosis", "the cache key omits the tenant id", "--run", run, "--resolves", hyp)
    question = log(cli, "question", "which settings file is loaded in CI?", "--run", run)
    log(cli, "answer", "settings/ci.py", "--run", run, "--resolves", question)
    verify = log(cli, "verify", "run the tenant tests", "--run", run)
    log(cli, "verified", "tenant tests pass", "--run", run, "--resolves", verify)
    bad = log(cli, "verify", "run the load test", "--run", run)
    log(cli, "failed", "load test times out", "--run", run, "--resolves", bad)
    log(cli, "note", "temporary patch idea: sleep 1s", "--run", run)
    store = open_store(start=initialised)
    try:
        ok = _tool_event(store, run, "make test", 0)
        _tool_event(store, run, "make lint", 2)
        _tool_event(store, run, "ls -la", 0)
    finally:
        store.close()
    cli.ok("run", "end", run, "--status", "done")

    data = cli.json("run", "distill", run)
    texts = [p["text"] for p in data["proposals"]]
    assert texts == [
        "the cache key omits the tenant id",
        "which settings file is loaded in CI? — settings/ci.py",
        "Verified: run the tenant tests — tenant tests pass",
        "`make test` works in this repository (exit 0)",
    ]
    joined = " ".join(texts)
    for never in ("redis cache is stale", "load test", "sleep 1s", "make lint", "ls -la"):
        assert never not in joined
    assert data["proposals"][0]["evidence"][1] == hyp
    assert data["proposals"][3]["key"] == "test-command"
    assert data["proposals"][3]["evidence"] == [ok]
    assert data["accepted"] == []
    assert cli.json("memory", "list") == []  # nothing stored without --accept

    accepted = cli.json("run", "distill", run, "--accept")["accepted"]
    assert [a["status"] for a in accepted] == ["active"] * 4
    hit = cli.json("recall", "cache key tenant")["hits"][0]
    assert hit["source"].startswith("evt:") and len(hit["evidence"]) == 2
    again = cli.json("run", "distill", run, "--accept")["accepted"]
    assert [a["action"] for a in again] == ["deduplicated"] * 4


def test_distill_unknown_run(cli, initialised):
    assert cli("run", "distill", "run:abcdabcdab").exit_code == 1
    assert cli("run", "distill", "nonsense").exit_code == 1
