"""Tried as a new user would: a store with a few hundred events across three runs, a
contradicted fact, a contested one and a forgotten one; `context --budget 2000`."""

from __future__ import annotations

import pytest

from agentstate.config import TokenSettings
from agentstate.runs.log import append_event, end_run, start_run
from agentstate.tokens import counter_for

KINDS = ["observation", "note", "decision", "observation", "note"]


def fill(store, run, topic: str, n: int) -> list:
    events = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        source = "tool:pytest" if kind == "observation" else "user"
        events.append(append_event(store, run.ref, kind,
                                   f"{topic} step {i}: checked module {topic}_{i % 17}; "
                                   f"result {'ok' if i % 3 else 'needs a look'}",
                                   source=source))
    return events


@pytest.fixture
def history(store, cli):
    ci, _ = start_run(store, "set up CI for the service", ["CI must stay under ten minutes"])
    fill(store, ci, "ci", 110)
    end_run(store, ci.ref, "done")
    db, _ = start_run(store, "migrate the database schema", ["no downtime"])
    fill(store, db, "schema", 110)
    end_run(store, db.ref, "done")
    run, _ = start_run(store, "fix the flaky login test",
                       ["never push to main", "keep python 3.10 support"])
    events = fill(store, run, "login", 100)
    append_event(store, run.ref, "question", "which command runs the suite, what is the "
                 "login timeout, and does the session fixture need a shim?")
    append_event(store, run.ref, "verify", "run the login test twenty times in a row")
    # Evidence must be about the fact it backs: what a tool saw of the timeout.
    timeout = append_event(store, run.ref, "observation",
                           "auth/settings.py: login timeout = 10 seconds", source="tool:grep")
    return {"run": run, "events": events, "timeout": timeout}


def test_new_user_scenario(cli, history):
    run = history["run"]
    timeout_evt = history["timeout"].ref
    # A fact, then the user corrects it: v2 current, v1 superseded.
    first = cli.json("remember", "the suite runs with tox -e py311", "--kind", "fact",
                     "--key", "test-command")
    cli.json("memory", "correct", first["ref"], "the suite runs with nox -s tests")
    # A contested fact: the model disagrees with the user; the user's value stays current.
    cli.json("remember", "the login timeout is 5 seconds", "--kind", "fact",
             "--key", "login-timeout")
    contested = cli.json("remember", "the login timeout is 10 seconds", "--kind", "fact",
                         "--key", "login-timeout", "--source", "model",
                         "--evidence", timeout_evt)
    assert contested["status"] == "contested"
    # A fact that will be forgotten; before that it is assembled.
    shim = cli.json("remember", "the session fixture needs the legacy auth shim",
                    "--kind", "fact")
    before = cli.json("context", "--budget", "2000")
    assert "legacy auth shim" in before["text"]
    cli.json("forget", shim["ref"], "--reason", "shim removed")

    data = cli.json("context", "--budget", "2000")
    text = data["text"]
    counter = counter_for(TokenSettings())
    assert counter.count(text) == data["tokens"] <= 2000
    # the current fact, never the superseded value, never the forgotten one
    assert "nox -s tests" in text
    assert "tox -e py311" not in text
    assert "legacy auth shim" not in text
    assert all(not e["ref"].startswith(shim["ref"].split("@")[0]) for e in data["manifest"])
    # the contested value is flagged, beside the current one
    line = next(x for x in text.splitlines() if "10 seconds" in x)
    assert "CONTESTED" in line and contested["ref"] in line
    current = next(x for x in text.splitlines() if "5 seconds" in x)
    assert "contested by" in current
    entry = next(e for e in data["manifest"] if e["ref"] == contested["ref"])
    assert "contested" in entry["flags"]
    # the goal and the constraints are kept, byte for byte, at the top
    assert text.startswith("## Goal\n- [" + run.ref + "] fix the flaky login test\n\n"
                           "## Constraints (must be respected)\n")
    for constraint in ("never push to main", "keep python 3.10 support"):
        assert constraint in text
    # evidence from the other runs competes; the index says how to fetch the rest
    assert "agentstate events --run " + run.ref in text
    assert len(data["manifest"]) > 40
    # the read gate's withheld counts are reported, not the withheld text
    assert "superseded" in data["withheld"] or "forgotten" in data["withheld"]
    # the task state closes the pack
    tail = text[text.index("## Task state"):]
    assert "run the login test twenty times" in tail and "need a shim?" in tail

