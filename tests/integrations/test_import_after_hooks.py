"""One import path that knows what the hooks already wrote (issue 19 build item 3, issue 24
item 2): after a hooked session, the README's import commands add nothing twice; a folder
takes only this repository's sessions; an import never moves the current run unless asked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentstate.runs.lookups import (
    HOOK_CALL_SQL,
    HOOK_PROMPT_SQL,
    hook_logged_call,
    hook_logged_prompt,
)
from agentstate.store.db import open_store

PROMPT = "Fix the rounding bug in money.py\nThe test test_rounding fails."
FAILURE = "Exit code 1\nFAILED tests/test_money.py::test_rounding - assert 2 == 3\n1 failed in 0.1s"


def hook(cli, agent: str, data: dict) -> None:
    result = cli("hook", agent, input=json.dumps(data))
    assert result.exit_code == 0 and result.stdout == "", result.stderr


def hooked_session(cli, agent: str, repo: Path, session: str) -> None:
    """What the installed hooks record during a session: its prompt and a failing call."""
    base = {"session_id": session, "cwd": str(repo), "transcript_path": str(repo / "no.jsonl")}
    hook(cli, agent, {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    if agent == "claude-code":
        hook(cli, agent, {**base, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
                          "tool_use_id": "toolu_1", "tool_input": {"command": "pytest -q"},
                          "error": FAILURE})
    else:
        hook(cli, agent, {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                          "tool_use_id": "call_1", "tool_input": {"command": "pytest -q"},
                          "tool_response": "Process exited with code 1\nOutput:\n"
                                           + FAILURE.split("\n", 1)[1]})


def claude_transcript(folder: Path, session: str, cwd: Path) -> Path:
    common = {"sessionId": session, "cwd": str(cwd), "timestamp": "2026-01-15T09:00:00Z"}
    lines = [
        {**common, "type": "user", "uuid": "u1",
         "message": {"role": "user", "content": PROMPT}},
        {**common, "type": "assistant", "uuid": "a1", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Running the tests first."},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash",
             "input": {"command": "pytest -q"}}]}},
        {**common, "type": "user", "uuid": "u2", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": FAILURE,
             "is_error": True}]}},
        {**common, "type": "assistant", "uuid": "a2", "message": {"role": "assistant",
                                                                  "content": "round_half is off"}},
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def codex_rollout(folder: Path, session: str, cwd: Path) -> Path:
    ts = "2026-01-15T09:00:00Z"
    lines = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": session, "cwd": str(cwd)}},
        {"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": PROMPT}]}},
        {"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "call_1",
            "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"]})}},
        {"timestamp": ts, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_1",
            "output": "Process exited with code 1\nOutput:\n" + FAILURE.split("\n", 1)[1]}},
        {"timestamp": ts, "type": "response_item", "payload": {
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "round_half is off"}]}},
    ]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2026-01-15T09-00-00-{session}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def all_events(cli) -> list[dict]:
    return cli.json("events", "--all")


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_import_after_a_hooked_session_adds_nothing_twice(initialised, cli, tmp_path, agent):
    session = f"{agent}-0001"
    hooked_session(cli, agent, initialised, session)
    before = all_events(cli)
    [run_before] = cli.json("run", "list")
    folder = tmp_path / "transcripts" / "project"
    write = claude_transcript if agent == "claude-code" else codex_rollout
    path = write(folder, session, initialised)

    first = cli.json("import", agent, str(path))
    # The assistant's words: what the hooks missed (two messages in the Claude Code file).
    added = 2 if agent == "claude-code" else 1
    assert first["total"]["imported"] == added
    assert first["files"][0]["skipped_reasons"]["already logged by a hook"] == 2
    assert first["files"][0]["run"] == run_before["ref"]  # the hooks' run, not a new one
    # The README's folder form, and the file again: nothing more.
    for again in (cli.json("import", agent, str(folder)), cli.json("import", agent, str(path))):
        assert again["total"]["imported"] == 0
    found = all_events(cli)
    assert len(found) == len(before) + added
    prompts = [e for e in found if e["kind"] == "observation"
               and (e["source"] == "user" or e["source"].startswith("prompt:"))]
    tools = [e for e in found if e["kind"] == "tool"]
    assert len(prompts) == 1 and len(tools) == 1
    assert len(cli.json("run", "list")) == 1


def test_the_already_logged_check_is_an_indexed_look_up(initialised, cli):
    hooked_session(cli, "claude-code", initialised, "s-idx")
    store = open_store(str(initialised / ".agentstate"))
    try:
        assert hook_logged_call(store, "s-idx", "toolu_1") is not None
        assert hook_logged_call(store, "s-idx", "toolu_2") is None
        assert hook_logged_call(store, "other", "toolu_1") is None
        plan = " ".join(str(row[-1]) for row in store.conn.execute(
            "EXPLAIN QUERY PLAN " + HOOK_CALL_SQL, ("s-idx", "toolu_1")))
        assert "events_hook_call" in plan, plan
        plan = " ".join(str(row[-1]) for row in store.conn.execute(
            "EXPLAIN QUERY PLAN " + HOOK_PROMPT_SQL, ("s-idx", "x")))
        assert "events_hook_prompt" in plan, plan
        assert hook_logged_prompt(store, "s-idx", "x") is None
    finally:
        store.close()


def test_the_catch_up_does_not_read_the_run(initialised, cli, tmp_path, monkeypatch):
    """The Stop hook's catch-up asks the index, never lists the run's events."""
    import agentstate.runs.log as log

    session = "s-stop"
    hooked_session(cli, "claude-code", initialised, session)
    folder = Path.home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-",
                                                             str(initialised.resolve()))
    path = claude_transcript(folder, session, initialised)

    def no_scan(*args, **kwargs):
        raise AssertionError("list_events called by a hook")

    original = log.list_events
    monkeypatch.setattr(log, "list_events", no_scan)
    result = cli("hook", "claude-code", input=json.dumps({
        "session_id": session, "cwd": str(initialised), "transcript_path": str(path),
        "hook_event_name": "Stop"}))
    monkeypatch.setattr(log, "list_events", original)
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    events = all_events(cli)
    assert len([e for e in events if e["kind"] == "tool"]) == 1
    assert len([e for e in events
                if e["source"] == "user" or e["source"].startswith("prompt:")]) == 1


def test_a_folder_takes_only_this_repositorys_sessions(initialised, cli, tmp_path):
    elsewhere = tmp_path / "other-project"
    elsewhere.mkdir()
    folder = tmp_path / "sessions"
    codex_rollout(folder / "2026" / "01" / "15", "mine-1", initialised / "src")
    foreign = codex_rollout(folder / "2026" / "01" / "14", "theirs-1", elsewhere)
    cli.ok("run", "start", "my own work")
    [current] = cli.json("run", "list")

    data = cli.json("import", "codex", str(folder))
    assert [Path(f["file"]).name for f in data["files"]] == [
        "rollout-2026-01-15T09-00-00-mine-1.jsonl"]
    assert data["total"]["other_projects"] == 1
    assert data["other_projects"] == [{"file": str(foreign), "cwd": str(elsewhere)}]
    human = cli.ok("import", "codex", str(folder)).stdout
    assert "skipped 1 session(s) of other projects" in human and foreign.name in human
    # The current run did not move.
    assert cli.json("run", "show")["run"]["ref"] == current["ref"]

    every = cli.json("import", "codex", str(folder), "--all-projects")
    theirs = next(f for f in every["files"] if f["session"] == "theirs-1")
    mine = next(f for f in every["files"] if f["session"] == "mine-1")
    assert theirs["run"] not in (mine["run"], current["ref"]) and theirs["imported"] > 0
    assert cli.json("run", "show")["run"]["ref"] == current["ref"]


def test_make_current_moves_the_current_run(initialised, cli, tmp_path):
    cli.ok("run", "start", "my own work")
    path = codex_rollout(tmp_path / "s", "mine-2", initialised)
    data = cli.json("import", "codex", str(path), "--make-current")
    assert cli.json("run", "show")["run"]["ref"] == data["files"][0]["run"]
