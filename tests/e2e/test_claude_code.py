"""Claude Code (the real client, pinned in tests/e2e/clients.py) with agentstate's hooks and
MCP server, against the scripted model: what the next session's model receives."""

from __future__ import annotations

import json
from pathlib import Path

from agentstate.integrations.agent_config import install_agent_hooks
from agentstate.tokens import raw_counts
from tests.e2e.clients import CLAUDE_CODE
from tests.e2e.conftest import helpers_running
from tests.e2e.model_server import Text
from tests.e2e.sessions import (
    FAILING_TEST,
    PASSING,
    TELLING,
    capture_shim,
    captured,
    mcp_call,
    request_text,
    run_claude,
    save_captures,
    shell_call,
    tool_results,
)

# The hook events Claude Code 2.1.332 fired in these sessions (docs/integrations.md lists
# them per version). PostToolUse fires for the passing command, PostToolUseFailure for the
# failing test; PreCompact needs a compaction, which a short session never reaches.
FIRED = {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop",
         "SessionEnd"}
NOT_EXERCISED = {"PreCompact"}


def _install(project) -> None:
    out = project.agentstate("hooks", "install", "claude-code")
    assert "installed" in out.stdout
    settings = project.root / ".claude" / "settings.json"
    # The same entries, pointed at a pass-through shim that keeps each payload.
    change = install_agent_hooks("claude-code", settings, program=str(capture_shim(project)))
    assert change.changed


def test_a_failing_test_reaches_the_next_session_with_its_ref(claude_bin, project, model,
                                                               hook_helper):
    _install(project)
    model.script(shell_call(FAILING_TEST), shell_call(PASSING),
                 Text("The parser test fails: expected 3 got 4."))
    run_claude(claude_bin, project, model, "Fix the date parser; run its test first")
    save_captures(project, "claude-code", CLAUDE_CODE.version)
    first = model.model.main_requests()
    assert len(first) == 3
    # The failing output reached the model in session 1 (the tool really ran).
    assert any(TELLING in r for r in tool_results(first[1].body))
    events = project.events()
    failed = [e for e in events if e["kind"] == "tool" and e["meta"].get("failed")]
    assert failed, events
    assert TELLING in failed[0]["text"] or TELLING in (failed[0]["meta"].get("excerpt") or "")

    # Session 2, with the MCP server: its first request carries the resume pack (the
    # SessionStart hook); its resume tool call returns the pack text, not an envelope.
    model.script(mcp_call("resume", {"budget": 700}), Text("Resuming the parser fix."))
    run_claude(claude_bin, project, model, "continue", mcp=True)
    save_captures(project, "claude-code", CLAUDE_CODE.version)
    second = model.model.main_requests()
    opening = request_text(second[0].body)
    assert "agentstate resume pack" in opening
    assert TELLING in opening
    assert failed[0]["ref"] in opening
    # Once: the pack names the failure once, not once per copy the store holds.
    assert opening.count(failed[0]["ref"]) == 1

    results = tool_results(second[1].body)
    assert results, second[1].body.get("messages")
    pack = results[-1]
    assert not pack.lstrip().startswith("{"), pack[:300]  # the pack, not the JSON envelope
    assert TELLING in pack
    assert raw_counts("cl100k_base", [pack])[0] <= 700

    fired = {p.get("hook_event_name") for p in captured(project)}
    assert FIRED <= fired, fired
    # The hooks started agentstate's hook helper, which ran the hooks after the first.
    assert helpers_running(hook_helper), "no hook helper was started by the hooks"


def test_importing_the_transcript_adds_no_duplicates(claude_bin, project, model):
    _install(project)
    model.script(shell_call(FAILING_TEST), Text("It fails."))
    run_claude(claude_bin, project, model, "Run the parser test")
    before = project.events()
    transcript = next(p["transcript_path"] for p in captured(project)
                      if p.get("transcript_path"))
    assert Path(transcript).is_file()
    project.agentstate("import", "claude-code", transcript)
    # The README's folder form too.
    project.agentstate("import", "claude-code", str(Path(transcript).parent))
    after = project.events()
    calls = [e["meta"].get("tool_use_id") or e["meta"].get("call_id") for e in after
             if e["kind"] == "tool"]
    calls = [c for c in calls if c]
    assert len(calls) == len(set(calls)), json.dumps(after, indent=1)[:4000]
    prompts = [e["text"] for e in after if e["kind"] == "observation"
               and (e["source"] == "user" or e["source"].startswith("prompt:"))]
    assert prompts.count("Run the parser test") == 1, prompts
    tools_before = [e for e in before if e["kind"] == "tool"]
    tools_after = [e for e in after if e["kind"] == "tool"]
    assert len(tools_after) == len(tools_before)


def test_hooks_run_when_agentstate_is_off_the_agents_path(claude_bin, project, model):
    """Installed from a venv the agent's shell never activated: the hook commands name
    agentstate by its absolute path, so they run anyway (a bare `agentstate` would fail on
    every event, recording nothing)."""
    bare = "/usr/bin:/bin"
    out = project.agentstate("hooks", "install", "claude-code", path=bare)
    assert "not on this PATH" in out.stdout
    status = json.loads(project.agentstate("hooks", "status", "--json", path=bare).stdout)
    entry = next(a for a in status["data"]["agents"]
                 if a["agent"] == "claude-code" and a["scope"] == "project")
    assert entry["will_run"] is True, entry
    model.script(Text("Noted."))
    run_claude(claude_bin, project, model, "Remember: the parser must accept ISO weeks",
               path=bare)
    prompts = [e for e in project.events()
               if e["kind"] == "observation" and e["meta"].get("hook") == "UserPromptSubmit"]
    assert [e["text"] for e in prompts] == ["Remember: the parser must accept ISO weeks"]
    assert "agentstate resume pack" in request_text(model.model.main_requests()[0].body) or \
        "no active run" in request_text(model.model.main_requests()[0].body)
