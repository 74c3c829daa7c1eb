"""The hook handler's parsing and records in process (quick, so `make mutation` sees them):
what a payload must hold, what an unknown event answers, and what a tool event keeps."""

from __future__ import annotations

import json

import pytest

from agentstate.errors import InvalidInput
from agentstate.integrations.hook_payload import parse_payload
from agentstate.integrations.hook_tool import tool_record
from agentstate.integrations.hooks import handle
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


# ---------------------------------------------------------------- how a tool call ended
# The flags tool_record derives from the client's word (a mutation run left them alive): who
# said what decides which failure signatures count, and an exit code never hides a failure
# event.

TRACEBACK = "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: odd\n"


def _bash(event: str, agent: str, response) -> dict:
    return tool_record(_payload(event, agent=agent, tool_name="Bash",
                                tool_input={"command": "python x.py"},
                                tool_response=response))[2]


def test_a_claude_success_report_is_believed_over_a_printed_traceback():
    # Claude Code reports every failed call as PostToolUseFailure: its PostToolUse is a
    # success, and a traceback alone (a program printing one it caught) does not outweigh it.
    meta = _bash("PostToolUse", "claude-code", TRACEBACK)
    assert (meta["failed"], meta["outcome"]) == (False, "client event")
    plain = _bash("PostToolUse", "claude-code", "done")
    assert (plain["failed"], plain["outcome"]) == (False, "client event")


def test_codex_says_nothing_so_the_output_decides_or_the_outcome_is_unknown():
    meta = _bash("PostToolUse", "codex", TRACEBACK)
    assert (meta["failed"], meta["outcome"]) == (True, "signature")
    plain = _bash("PostToolUse", "codex", "done")
    assert (plain["failed"], plain["outcome"]) == (None, "unknown")
    assert plain["exit_code"] is None  # a command without a stated code keeps None


@pytest.mark.parametrize("response", [{"stdout": "half", "interrupted": True},
                                      {"stdout": "half", "is_error": True}])
def test_a_response_that_says_it_failed_is_a_failure_even_from_claude(response):
    meta = _bash("PostToolUse", "claude-code", response)
    assert (meta["failed"], meta["outcome"]) == (True, "client event")


def test_a_failure_event_with_exit_code_zero_is_still_a_failure():
    meta = _bash("PostToolUseFailure", "claude-code", {"stdout": "x", "exit_code": 0})
    assert (meta["exit_code"], meta["failed"], meta["outcome"]) == (0, True, "exit code")
    ok = _bash("PostToolUse", "codex", {"stdout": "x", "exit_code": 0})
    assert (ok["exit_code"], ok["failed"]) == (0, False)


# ---------------------------------------------------------------- SessionStart in process

def _context(outcome) -> str:
    answer = json.loads(outcome.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    return answer["additionalContext"]


def test_session_start_without_a_run_says_how_one_starts(store):
    outcome = handle(store, _payload("SessionStart", cwd=str(store.work_tree)))
    assert outcome.run is None
    assert _context(outcome).startswith("agentstate: no active run in this repository yet.")


def test_session_start_of_a_sessions_run_is_its_resume_pack_as_the_agent_reads_it(store):
    from agentstate.memory.write import remember

    remember(store, "the owner keeps the release notes short", kind="preference",
             scope="user", principal="owner")
    remember(store, "keep each commit small", kind="preference", principal="owner")
    first = handle(store, _payload("UserPromptSubmit", cwd=str(store.work_tree),
                                   prompt="fix the flaky date test"))
    outcome = handle(store, _payload("SessionStart", cwd=str(store.work_tree)))
    assert outcome.run == first.run
    text = _context(outcome)
    assert text.startswith("agentstate resume pack")
    assert "fix the flaky date test" in text and "keep each commit small" in text
    assert "release notes short" not in text  # user scope: the agent may not read it


def test_session_start_shows_the_sessions_run_even_when_another_run_is_current(store):
    from agentstate.runs.log import current_run, start_run

    first = handle(store, _payload("UserPromptSubmit", cwd=str(store.work_tree),
                                   prompt="fix the flaky date test"))
    start_run(store, "an unrelated task started from the shell")
    assert current_run(store).ref != first.run
    outcome = handle(store, _payload("SessionStart", cwd=str(store.work_tree)))
    assert outcome.run == first.run
    text = _context(outcome)
    assert "fix the flaky date test" in text and "unrelated task" not in text


def test_a_tool_record_without_a_problems_list_still_returns_its_record():
    text, source, meta = tool_record(_payload("PostToolUse", tool_response=7))
    assert (text.startswith("tool"), source, meta["tool"]) == (True, "tool:tool", "tool")
