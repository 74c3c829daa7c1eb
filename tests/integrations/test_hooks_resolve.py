"""Hooks that cannot fail silently: installed commands name an agentstate the client finds,
`hooks status` and `doctor` say when one does not, and Codex's trust and review steps are
reported and (with --trust) recorded the way Codex's own review does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentstate.integrations.agent_config import CODEX_EVENTS
from agentstate.integrations.codex_trust import handler_hash

VENV_AGENTSTATE = str(Path(sys.executable).parent / "agentstate")
BARE_PATH = "/usr/bin:/bin"  # a shell that never activated the venv


def run(repo: Path, *args: str, path: str = BARE_PATH, env: dict | None = None):
    full = dict(os.environ) | {"PATH": path} | (env or {})
    return subprocess.run([VENV_AGENTSTATE, *args], cwd=repo, env=full, capture_output=True,
                          text=True, timeout=120)


def status_of(repo: Path, agent: str, scope: str = "project", **kw) -> dict:
    out = run(repo, "hooks", "status", "--json", **kw)
    assert out.returncode == 0, out.stderr
    agents = json.loads(out.stdout)["data"]["agents"]
    return next(a for a in agents if a["agent"] == agent and a["scope"] == scope)


def test_install_off_path_writes_the_absolute_path_and_says_so(initialised):
    out = run(initialised, "hooks", "install", "claude-code")
    assert out.returncode == 0, out.stderr
    assert "not on this PATH" in out.stdout and VENV_AGENTSTATE in out.stdout
    settings = json.loads((initialised / ".claude" / "settings.json").read_text())
    commands = {h["command"] for groups in settings["hooks"].values() for g in groups
                for h in g["hooks"]}
    assert commands == {f"{VENV_AGENTSTATE} hook claude-code"}
    entry = status_of(initialised, "claude-code")
    assert entry["will_run"] is True and entry["unresolved"] == []


def test_a_bare_command_off_path_is_reported_by_status_and_doctor(initialised):
    path = initialised / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "agentstate hook claude-code"}]}]}}))
    entry = status_of(initialised, "claude-code")
    assert entry["will_run"] is False and entry["unresolved"] == ["agentstate"]
    human = run(initialised, "hooks", "status")
    assert "will NOT run: 'agentstate' is not found" in human.stdout
    doctor = run(initialised, "doctor")
    assert doctor.returncode == 1
    assert "FAIL hooks:claude-code:project" in doctor.stdout and "nothing is recorded" in \
        doctor.stdout
    # With the venv on PATH the same command resolves.
    on_path = f"{Path(sys.executable).parent}:{BARE_PATH}"
    assert status_of(initialised, "claude-code", path=on_path)["will_run"] is True
    # Installing again moves our old bare entry to the absolute path, without a duplicate.
    assert run(initialised, "hooks", "install", "claude-code").returncode == 0
    groups = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
    assert [h["command"] for g in groups for h in g["hooks"]] == [
        f"{VENV_AGENTSTATE} hook claude-code"]
    assert status_of(initialised, "claude-code")["will_run"] is True


def test_codex_install_says_what_codex_needs_and_trust_records_it(initialised, isolated_home):
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my settings\nmodel = "gpt-5.5"\n')
    out = run(initialised, "hooks", "install", "codex")
    assert out.returncode == 0, out.stderr
    assert "will not run yet" in out.stdout and "/hooks" in out.stdout and "--trust" in out.stdout
    hooks = json.loads((initialised / ".codex" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(CODEX_EVENTS) and "SessionEnd" in hooks
    assert hooks["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex's own limit
    entry = status_of(initialised, "codex")
    assert entry["will_run"] is False
    assert any("not trusted" in r for r in entry["reasons"])
    assert any(r.startswith("not reviewed") for r in entry["reasons"])

    trusted = run(initialised, "hooks", "install", "codex", "--trust")
    assert trusted.returncode == 0, trusted.stderr
    assert f"recorded in {config}" in trusted.stdout
    text = config.read_text()
    root = str(initialised.resolve())
    assert text.startswith('# my settings\nmodel = "gpt-5.5"\n')  # kept as it was
    assert f'[projects."{root}"]' in text and 'trust_level = "trusted"' in text
    for label in ("session_start", "user_prompt_submit", "post_tool_use", "pre_compact",
                  "stop", "session_end"):
        assert f'[hooks.state."{root}/.codex/hooks.json:{label}:0:0"]' in text
    assert status_of(initialised, "codex")["will_run"] is True
    again = run(initialised, "hooks", "install", "codex", "--trust")
    assert "trust already recorded; nothing changed" in again.stdout and config.read_text() == text

    # A hand edit of our command makes Codex skip it until reviewed again: status says so.
    path = initialised / ".codex" / "hooks.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 31
    path.write_text(json.dumps(data))
    entry = status_of(initialised, "codex")
    assert entry["will_run"] is False
    assert "changed since their review: Stop" in entry["reasons"]
    doctor = run(initialised, "doctor")
    assert "WARN hooks:codex:project" in doctor.stdout


def test_trust_is_the_owners_alone(initialised, isolated_home):
    refused = run(initialised, "hooks", "install", "codex", "--trust",
                  env={"CLAUDECODE": "1"})
    assert refused.returncode == 3, refused.stderr
    assert "own shell" in refused.stderr
    assert not (isolated_home / ".codex" / "config.toml").exists()
    assert not (initialised / ".codex").exists()  # refused before anything was written
    usage = run(initialised, "hooks", "install", "claude-code", "--trust")
    assert usage.returncode == 2 and "codex only" in usage.stderr


def test_trusted_hash_is_the_one_codex_0_171_accepts():
    # Values recorded by `hooks install codex --trust` that the real Codex 0.171.0 then ran
    # (tests/e2e/test_codex.py checks the same against the binary on every run).
    command = "/work/wt/e2e/.venv/bin/agentstate hook codex"
    assert handler_hash("PostToolUse", "Bash|apply_patch", {
        "type": "command", "command": command, "timeout": 30}) == (
        "sha256:172f9f10679c6c761250a60f442ed8b439ff03f8bb8fa5ac108831f6c990e648")
    assert handler_hash("SessionEnd", None, {
        "type": "command", "command": command, "timeout": 3}) == (
        "sha256:b016fbf04edb2882d57cbab4ef513b1dda7059b493308f2a6c271f055fd532dc")
