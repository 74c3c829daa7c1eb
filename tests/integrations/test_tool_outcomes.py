"""How a tool call ended, whatever the client sends (issue 19, build item 2): through the real
`agentstate hook` command, then what `resume` shows the next session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentstate.integrations.tool_outcome import (
    judge,
    signature_verdict,
    strip_claude_exit,
    strip_client_wrapper,
)
from tests.conftest import FIXTURES, run_agentstate

OUTCOMES = FIXTURES / "hooks" / "outcomes"
CODEX_FAILURE = (OUTCOMES / "codex_pytest_failure.txt").read_text()
PYTEST_FAILURE = (OUTCOMES / "pytest_failure_no_code.txt").read_text()


def tool_payload(agent: str, cwd: Path, response, *, call: str = "call_1",
                 command: str = "pytest -q", event: str = "PostToolUse", **extra) -> dict:
    data = {"session_id": f"{agent}-s1", "cwd": str(cwd), "hook_event_name": event,
            "tool_name": "Bash", "tool_use_id": call, "tool_input": {"command": command},
            "transcript_path": str(cwd / "none.jsonl"), **extra}
    if response is not None:
        data["tool_response"] = response
    return data


def send(cli, agent: str, data: dict | str) -> None:
    raw = data if isinstance(data, str) else json.dumps(data)
    result = cli("hook", agent, input=raw)
    assert result.exit_code == 0 and result.stdout == "", result.stderr


def tools(cli) -> list[dict]:
    return [e for e in cli.json("events", "--all") if e["kind"] == "tool"]


def resume(cli) -> str:
    return cli.ok("resume").stdout


def test_codex_string_output_with_its_exit_line_is_a_failure(initialised, cli):
    """Codex's tool_response is the text the model saw: header, then `Output:`."""
    send(cli, "codex", tool_payload("codex", initialised, CODEX_FAILURE))
    [tool] = tools(cli)
    meta = tool["meta"]
    assert (meta["exit_code"], meta["failed"], meta["outcome"]) == (1, True, "client text")
    assert tool["text"] == "Bash exit 1: assert 2 == 3 ($ pytest -q)"
    # The excerpt starts with the command's output, not Codex's wrapper.
    assert meta["excerpt"].splitlines()[0] == "..F"
    assert "Chunk ID" not in meta["excerpt"] and "Wall time" not in meta["excerpt"]
    pack = resume(cli)
    assert "Failing tool results" in pack and tool["ref"] in pack
    assert "assert 2 == 3" in pack


def test_output_without_exit_code_is_judged_by_the_runner_summary(initialised, cli):
    send(cli, "codex", tool_payload("codex", initialised, PYTEST_FAILURE))
    [tool] = tools(cli)
    assert tool["meta"]["failed"] is True and tool["meta"]["outcome"] == "signature"
    assert tool["meta"]["exit_code"] is None
    assert "Failing tool results" in resume(cli)


def test_claude_code_stdout_only_failure_is_not_ok(initialised, cli):
    """A PostToolUse carrying only stdout with a failing summary: failed, not `ok`."""
    send(cli, "claude-code", tool_payload("claude-code", initialised,
                                          {"stdout": PYTEST_FAILURE, "stderr": "",
                                           "interrupted": False}))
    [tool] = tools(cli)
    assert tool["meta"]["failed"] is True and "→ ok" not in tool["text"]
    assert "Failing tool results" in resume(cli)


def test_unknown_outcome_is_unknown_and_keeps_an_earlier_failure_open(initialised, cli):
    send(cli, "codex", tool_payload("codex", initialised, CODEX_FAILURE, call="c1"))
    # The same command again, and this time the client says nothing usable.
    send(cli, "codex", tool_payload("codex", initialised, "collected 3 items\n", call="c2"))
    first, second = tools(cli)
    assert second["meta"]["failed"] is None and second["meta"]["outcome"] == "unknown"
    assert second["meta"]["exit_code"] is None
    assert second["text"] == "Bash: $ pytest -q → outcome unknown"
    pack = resume(cli)
    # Unknown is not a pass: the failure stays in the section, the unknown call is not in it.
    assert "Failing tool results" in pack and first["ref"] in pack
    failing = pack.split("Failing tool results", 1)[1].split("\n## ", 1)[0]
    assert second["ref"] not in failing


def test_a_later_pass_closes_a_hook_failure(initialised, cli):
    """The hook's failure headline and its passing headline differ; the command in meta ties
    them, so a fixed test leaves the section."""
    send(cli, "codex", tool_payload("codex", initialised, CODEX_FAILURE, call="c1"))
    passing = CODEX_FAILURE.replace("code 1", "code 0")
    send(cli, "codex", tool_payload("codex", initialised, passing, call="c2"))
    assert "Failing tool results" not in resume(cli)


def test_claude_code_failure_excerpt_is_the_output_not_a_stderr_label(initialised, cli):
    error = "Exit code 1\n" + PYTEST_FAILURE
    send(cli, "claude-code", tool_payload("claude-code", initialised, None,
                                          event="PostToolUseFailure", error=error))
    [tool] = tools(cli)
    meta = tool["meta"]
    assert (meta["exit_code"], meta["failed"], meta["outcome"]) == (1, True, "client text")
    first = meta["excerpt"].splitlines()[0]
    assert first == "..F", meta["excerpt"]
    assert "[stderr]" not in meta["excerpt"] and "Exit code 1" not in meta["excerpt"]


def test_claude_code_success_report_stays_ok(initialised, cli):
    send(cli, "claude-code", tool_payload("claude-code", initialised,
                                          {"stdout": " M src/a.py\n", "stderr": ""},
                                          command="git status --short"))
    [tool] = tools(cli)
    assert tool["meta"]["failed"] is False and tool["meta"]["outcome"] == "client event"
    assert tool["text"].endswith("→ ok")


@pytest.mark.parametrize("response, problem", [
    (42, "tool_response is a int"),
    (None, "no tool_response"),
])
def test_odd_payload_is_recorded_as_far_as_understood(initialised, response, problem):
    """A shape the handler does not know: one line in the hook-error log, exit 0, recorded,
    and never `ok` (a real subprocess: what the client runs)."""
    data = tool_payload("codex", initialised, response)
    data["tool_input"] = "pytest -q"  # a string where an object was
    proc = run_agentstate("hook", "codex", cwd=initialised, input=json.dumps(data))
    assert proc.returncode == 0 and proc.stdout == ""
    log = (initialised / ".agentstate" / "hook-errors.log").read_text().splitlines()
    assert len(log) == 1
    line = json.loads(log[0])
    assert problem in line["error"] and "tool_input is a str" in line["error"]
    shown = run_agentstate("events", "--all", "--json", cwd=initialised)
    [tool] = [e for e in json.loads(shown.stdout)["data"] if e["kind"] == "tool"]
    assert tool["meta"]["failed"] is None and "ok" not in tool["text"]


# ---------------------------------------------------------------- the rules themselves


@pytest.mark.parametrize("text, verdict", [
    ("F\nFAILED t.py::test_a - assert 1\n1 failed in 0.1s", True),
    ("....\n4 passed in 0.1s", False),
    ("===== 3 passed, 1 skipped in 0.20s =====", False),
    ("Ran 3 tests in 0.001s\n\nFAILED (failures=1)", True),
    ("Ran 3 tests in 0.001s\n\nOK", False),
    ("Tests:       1 failed, 4 passed, 5 total", True),
    ("Tests:       5 passed, 5 total", False),
    ("--- FAIL: TestParse (0.00s)\nFAIL\texample.com/p\t0.01s", True),
    ("ok  \texample.com/p\t0.01s", False),
    ("test result: FAILED. 1 passed; 1 failed; 0 ignored", True),
    ("test result: ok. 2 passed; 0 failed; 0 ignored", False),
    ("error[E0308]: mismatched types\n --> src/main.rs:3:5", True),
    ("src/a.c:3:5: error: expected ';' before '}' token", True),
    ("src/a.ts(3,5): error TS2322: Type 'string' is not assignable", True),
    ("make: *** [Makefile:4: test] Error 2", True),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad", True),
    ("hello world", None),
])
def test_signatures(text, verdict):
    assert signature_verdict(text) is verdict


def test_a_traceback_does_not_overrule_a_client_success_report():
    text = "Traceback (most recent call last):\nKeyError: 'x'\nretrying… done"
    assert judge(text, client_failed=False).failed is False
    assert judge(text).failed is True


def test_wrappers():
    body, code = strip_client_wrapper(CODEX_FAILURE)
    assert code == 1 and body.startswith("..F")
    assert strip_client_wrapper("Exit code: 0\nWall time: 1 seconds\nOutput:\nok") == ("ok", 0)
    assert strip_client_wrapper("Output:\nno header") == ("Output:\nno header", None)
    assert strip_claude_exit("Exit code 2\nboom") == ("boom", 2)
    assert strip_claude_exit("Exit codes differ") == ("Exit codes differ", None)
