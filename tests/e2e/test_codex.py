"""Codex CLI (the real client, pinned in tests/e2e/clients.py) with agentstate's hooks and
MCP server, against the scripted model: what Codex needs before it runs the hooks, and what
the next session's model receives."""

from __future__ import annotations

import json
from pathlib import Path

from agentstate.integrations.agent_config import install_agent_hooks
from agentstate.integrations.codex_trust import trust_codex_hooks
from agentstate.tokens import raw_counts
from tests.e2e.clients import CODEX
from tests.e2e.conftest import helpers_running
from tests.e2e.model_server import Text, ToolSearch
from tests.e2e.sessions import (
    AGENTSTATE,
    FAILING_TEST,
    TELLING,
    capture_shim,
    captured,
    codex_home,
    mcp_call,
    request_text,
    run_codex,
    save_captures,
    shell_call,
    tool_results,
    write_codex_config,
)

# The hook events Codex 0.171.0 fired in these sessions (docs/integrations.md lists them
# per version). PreCompact needs a compaction, which a short session never reaches.
FIRED = {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"}


def _install(project, model, *, trust: bool = True) -> dict:
    write_codex_config(project, model)
    args = ["hooks", "install", "codex"] + (["--trust"] if trust else [])
    out = project.agentstate(*args)
    hooks = project.root / ".codex" / "hooks.json"
    # The same entries, pointed at a pass-through shim that keeps each payload; the trust
    # recorded again for them, as `--trust` would.
    install_agent_hooks("codex", hooks, program=str(capture_shim(project)))
    if trust:
        trust_codex_hooks(project.root, hooks, config_path=codex_home(project) / "config.toml")
    status = project.json("hooks", "status")
    entry = next(a for a in status["agents"] if a["agent"] == "codex" and a["scope"] == "project")
    return {"stdout": out.stdout, "status": entry}


def test_untrusted_hooks_do_not_run_and_status_says_so(codex_bin, project, model):
    installed = _install(project, model, trust=False)
    assert "codex: the hooks will not run yet" in installed["stdout"]
    assert "--trust" in installed["stdout"] and "/hooks" in installed["stdout"]
    status = installed["status"]
    assert status["will_run"] is False
    assert any("not trusted" in r for r in status["reasons"])
    model.script(shell_call(FAILING_TEST), Text("It fails."))
    run_codex(codex_bin, project, model, "Run the parser test")
    assert captured(project) == []  # Codex skipped every hook, as status said it would
    assert [e for e in project.events() if e["kind"] == "tool"] == []


def test_trust_lets_every_installed_hook_run(codex_bin, project, model):
    """`--trust` records what Codex's review would: the real binary then runs every hook
    (a wrong trust key or hash and Codex skips them, silently)."""
    installed = _install(project, model)
    assert installed["status"]["will_run"] is True, installed["status"]
    model.script(shell_call(FAILING_TEST), Text("It fails."))
    session = run_codex(codex_bin, project, model, "Run the parser test")
    save_captures(project, "codex", CODEX.version)
    fired = {p.get("hook_event_name") for p in captured(project)}
    assert fired == FIRED, (fired, session.stderr[-2000:])
    hooked = [e for e in project.events() if e["kind"] == "tool" and e["meta"].get("hook")]
    assert [e["meta"]["hook"] for e in hooked] == ["PostToolUse"]


def test_a_failing_test_reaches_the_next_session_with_its_ref(codex_bin, project, model,
                                                               hook_helper):
    installed = _install(project, model)
    config = codex_home(project) / "config.toml"
    assert f"recorded in {config}" in installed["stdout"]
    assert "trusted_hash" in installed["stdout"] and "trust_level" in installed["stdout"]
    assert installed["status"]["will_run"] is True, installed["status"]

    model.script(shell_call(FAILING_TEST), Text("The parser test fails: expected 3 got 4."))
    session1 = run_codex(codex_bin, project, model, "Fix the date parser; run its test first")
    save_captures(project, "codex", CODEX.version)
    first = model.model.main_requests()
    assert any(TELLING in r for r in tool_results(first[1].body)), tool_results(first[1].body)
    events = project.events()
    tools = [e for e in events if e["kind"] == "tool"]
    assert tools, events
    failed = [e for e in tools if e["meta"].get("failed")]
    # Codex's PostToolUse carries the output as a plain string without an exit code: the
    # failure must still be recorded as one (not `ok`).
    assert failed, tools

    # Session 2, with the MCP server (added to the user's config beside the trust keys): its
    # first request carries the resume pack (the SessionStart hook). Codex 0.171 offers MCP
    # tools only through its client-side tool search; the model searches until agentstate's
    # server is up, calls `resume`, and the result it reads is the pack text within budget.
    with config.open("a") as handle:
        handle.write(f"\n[mcp_servers.agentstate]\ncommand = {json.dumps(str(AGENTSTATE))}\n"
                     'args = ["mcp"]\nstartup_timeout_sec = 60\n')
    model.script(ToolSearch("agentstate resume", until="mcp__agentstate"),
                 mcp_call("resume", {"budget": 700}), Text("Resuming the parser fix."))
    run_codex(codex_bin, project, model, "continue")
    save_captures(project, "codex", CODEX.version)
    second = model.model.main_requests()
    opening = request_text(second[0].body)
    assert "agentstate resume pack" in opening
    assert failed[0]["ref"] in opening
    assert opening.count(failed[0]["ref"]) == 1
    assert TELLING in opening

    results = tool_results(second[-1].body)
    assert results, second[-1].body.get("input")
    pack = results[-1]
    assert not pack.lstrip().startswith("{"), pack[:300]  # the pack, not the JSON envelope
    assert TELLING in pack and failed[0]["ref"] in pack
    assert raw_counts("cl100k_base", [pack])[0] <= 700

    fired = {p.get("hook_event_name") for p in captured(project)}
    assert FIRED <= fired, (fired, session1.stdout, session1.stderr)
    # The hooks started agentstate's hook helper, which ran the hooks after the first.
    assert helpers_running(hook_helper), "no hook helper was started by the hooks"


def test_importing_the_rollout_adds_no_duplicates(codex_bin, project, model):
    _install(project, model)
    model.script(shell_call(FAILING_TEST), Text("It fails."))
    run_codex(codex_bin, project, model, "Run the parser test")
    before = project.events()
    rollout = next(p["transcript_path"] for p in captured(project) if p.get("transcript_path"))
    assert Path(rollout).is_file()
    project.agentstate("import", "codex", rollout)
    after = project.events()
    tools_before = [e for e in before if e["kind"] == "tool"]
    tools_after = [e for e in after if e["kind"] == "tool"]
    assert len(tools_after) == len(tools_before), json.dumps(after, indent=1)[:4000]
    prompts = [e["text"] for e in after if e["kind"] == "observation"
               and (e["source"] == "user" or e["source"].startswith("prompt:"))]
    assert prompts.count("Run the parser test") == 1, prompts
