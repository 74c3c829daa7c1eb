"""The hook handler's parsing and records in process (quick, so `make mutation` sees them):
what a payload must hold, what an unknown event answers, and what a tool event keeps."""

from __future__ import annotations

import json

import pytest

from agentstate.errors import InvalidInput
from agentstate.integrations.hooks import handle, parse_payload, tool_record
from agentstate.runs.log import get_run, list_events


def _payload(event: str, agent: str = "claude-code", **fields):
    return parse_payload(agent, json.dumps({"session_id": "s-1", "hook_event_name": event,
                                            **fields}))


def test_an_unknown_agent_is_named_with_the_known_ones():
    with pytest.raises(InvalidInput, match=r"unknown agent 'vim': expected .*claude-code"):
        parse_payload("vim", "{}")


@pytest.mark.parametrize("raw,message", [
    ("[1, 2]", "the hook input is not a JSON object"),
    ('{"session_id": "s"}', "the hook input has no hook_event_name"),
    ('{"hook_event_name": "Stop"}', "the hook input has no session_id"),
])
def test_a_payload_without_what_a_hook_needs_says_what_is_missing(raw, message):
    with pytest.raises(InvalidInput) as caught:
        parse_payload("claude-code", raw)
    assert caught.value.message == message


@pytest.mark.parametrize("value", [7, ["a.jsonl"], {"p": 1}, ""])
def test_a_transcript_path_that_is_not_a_string_is_ignored(value):
    assert _payload("Stop", transcript_path=value).transcript_path is None
    assert _payload("Stop", transcript_path="t.jsonl").transcript_path == "t.jsonl"


def test_an_event_that_is_not_recorded_says_so(store):
    outcome = handle(store, _payload("Notification", cwd=str(store.work_tree)))
    assert outcome.skipped == "Notification is not recorded" and outcome.events == []


def test_a_long_first_line_makes_a_goal_cut_with_an_ellipsis(store):
    prompt = "refactor " + "the parser module " * 30
    outcome = handle(store, _payload("UserPromptSubmit", cwd=str(store.work_tree),
                                     prompt=prompt))
    goal = get_run(store, outcome.run).goal
    assert len(goal) == 200 and goal.endswith("…") and goal.startswith("refactor the parser")


def test_a_failure_event_without_an_exit_code_is_a_failure():
    text, _, meta = tool_record(_payload("PostToolUseFailure", tool_name="Bash",
                                         tool_input={"command": "make lint"},
                                         tool_response="lint found 3 problems"))
    assert meta["failed"] is True and meta["outcome"] == "client event"
    ok_text, _, ok = tool_record(_payload("PostToolUse", tool_name="Bash",
                                          tool_input={"command": "make lint"},
                                          tool_response="all clean"))
    assert ok["failed"] is False and text != ok_text


def test_a_tool_event_keeps_its_call_id_and_file_path():
    _, _, codex = tool_record(_payload("PostToolUse", agent="codex", tool_name="shell",
                                       call_id="call_7", tool_input={"command": ["ls"]},
                                       tool_response="a\nb"))
    assert codex["tool_use_id"] == "call_7"
    problems: list[str] = []
    _, _, edit = tool_record(_payload("PostToolUse", tool_name="Edit", tool_use_id="toolu_1",
                                      tool_input={"file_path": "src/app.py"},
                                      tool_response={"stdout": ""}), problems)
    assert (edit["tool_use_id"], edit["path"]) == ("toolu_1", "src/app.py")
    _, _, unnamed = tool_record(_payload("PostToolUse", tool_response="x"), problems)
    assert unnamed["tool"] == "tool" and "no tool_name" in problems


def test_a_tool_event_is_stored_in_the_sessions_run(store):
    handle(store, _payload("UserPromptSubmit", cwd=str(store.work_tree), prompt="run lint"))
    outcome = handle(store, _payload("PostToolUseFailure", cwd=str(store.work_tree),
                                     tool_name="Bash", tool_input={"command": "make lint"},
                                     tool_response="3 problems"))
    [event] = [e for e in list_events(store, outcome.run) if e.kind == "tool"]
    assert event.meta["failed"] is True and event.meta["command"] == "make lint"
