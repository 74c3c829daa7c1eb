"""`agentstate hooks install|uninstall|status`: agents' settings files, AGENTS.md, git hooks."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentstate.integrations.agent_config import CLAUDE_EVENTS, CODEX_EVENTS, hook_command
from tests.conftest import git

# What install writes: this interpreter's agentstate by its absolute path.
CLAUDE_COMMAND = hook_command("claude-code")

FOREIGN = {
    "permissions": {"allow": ["Bash(make test)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [
            {"type": "command", "command": "echo hello from the team"}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [
            {"type": "command", "command": "prettier --write"}]}],
    },
}


def commands(settings: dict, event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_claude_install_merges_is_idempotent_and_uninstalls_only_ours(initialised, cli):
    path = initialised / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps(FOREIGN, indent=4))
    data = cli.json("hooks", "install", "claude-code")
    assert data["changed"] and set(data["events"]) == set(CLAUDE_EVENTS)
    settings = json.loads(path.read_text())
    assert settings["permissions"] == FOREIGN["permissions"]
    assert commands(settings, "SessionStart") == ["echo hello from the team", CLAUDE_COMMAND]
    assert commands(settings, "PostToolUse") == ["prettier --write", CLAUDE_COMMAND]
    group = settings["hooks"]["SessionStart"][1]
    assert group["matcher"] == "startup|resume|clear|compact"
    assert group["hooks"][0]["type"] == "command"
    assert "matcher" not in settings["hooks"]["Stop"][0]
    installed = path.read_bytes()
    again = cli.json("hooks", "install", "claude-code")
    assert again["changed"] is False and path.read_bytes() == installed
    removed = cli.json("hooks", "uninstall", "claude-code")
    assert removed["changed"]
    assert json.loads(path.read_text()) == FOREIGN
    assert cli.json("hooks", "uninstall", "claude-code")["changed"] is False
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind


def test_ours_shares_a_group_with_a_foreign_hook(initialised, cli):
    path = initialised / ".claude" / "settings.json"
    path.parent.mkdir()
    shared = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"},
                                            {"type": "command",
                                             "command": "agentstate hook claude-code"}]}]}}
    path.write_text(json.dumps(shared))
    cli.json("hooks", "uninstall", "claude-code")
    assert commands(json.loads(path.read_text()), "Stop") == ["notify-send done"]


@pytest.mark.parametrize("content", ['{"hooks": {', '{"hooks": []}', "[1, 2]"])
def test_invalid_settings_are_reported_and_never_written(initialised, cli, content):
    path = initialised / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(content)
    for command in ("install", "uninstall"):
        result = cli("hooks", command, "claude-code")
        assert result.exit_code == 1
        assert str(path) in result.stderr and "nothing was changed" in result.stderr
        assert path.read_text() == content
    assert list(path.parent.iterdir()) == [path]


def test_user_scope_and_codex(initialised, cli, isolated_home):
    cli.json("hooks", "install", "claude-code", "--user")
    user = isolated_home / ".claude" / "settings.json"
    assert commands(json.loads(user.read_text()), "UserPromptSubmit") == [CLAUDE_COMMAND]
    assert not (initialised / ".claude").exists()
    cli.json("hooks", "install", "codex")
    codex = json.loads((initialised / ".codex" / "hooks.json").read_text())
    assert set(codex["hooks"]) == set(CODEX_EVENTS)
    assert codex["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear"
    status = cli.json("hooks", "status")
    by = {(a["agent"], a["scope"]): a for a in status["agents"]}
    assert by[("claude-code", "user")]["missing"] == []
    assert by[("claude-code", "project")]["events"] == []
    assert by[("codex", "project")]["missing"] == []
    assert cli("hooks", "install", "git", "--user").exit_code == 2


def test_agents_md_block(initialised, cli):
    path = initialised / "AGENTS.md"
    path.write_text("# Agents\n\nUse tabs.\n")
    cli.json("hooks", "install", "agents-md")
    text = path.read_text()
    assert text.startswith("# Agents\n\nUse tabs.\n\n<!-- agentstate:begin")
    assert "agentstate resume" in text and text.endswith("<!-- agentstate:end -->\n")
    assert cli.json("hooks", "install", "agents-md")["changed"] is False
    path.write_text(text.replace("Use tabs.", "Use spaces.") + "\nMore notes.\n")
    cli.json("hooks", "uninstall", "agents-md")
    assert path.read_text() == "# Agents\n\nUse spaces.\n\nMore notes.\n"
    cli.json("hooks", "install", "agents-md")
    cli.json("hooks", "uninstall", "agents-md")
    assert path.read_text() == "# Agents\n\nUse spaces.\n\nMore notes.\n"


def test_agents_md_created_and_removed_when_it_held_only_the_block(initialised, cli):
    cli.json("hooks", "install", "agents-md")
    assert (initialised / "AGENTS.md").exists()
    cli.json("hooks", "uninstall", "agents-md")
    assert not (initialised / "AGENTS.md").exists()


def test_agents_md_broken_markers_are_reported_not_clobbered(initialised, cli):
    path = initialised / "AGENTS.md"
    cli.json("hooks", "install", "agents-md")
    broken = path.read_text().replace("<!-- agentstate:end -->", "")
    path.write_text(broken)
    for command in ("install", "uninstall"):
        result = cli("hooks", command, "agents-md")
        assert result.exit_code == 1 and "damaged agentstate block" in result.stderr
        assert path.read_text() == broken


# ---------------------------------------------------------------- git


def _env() -> dict:
    """git runs our hook script, which finds `agentstate` on PATH."""
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=60)


def _commit(repo: Path, name: str, subject: str) -> subprocess.CompletedProcess:
    (repo / name).write_text(subject + "\n")
    _git(repo, "add", name)
    return _git(repo, "commit", "-q", "-m", subject)


def test_git_hooks_chain_an_existing_hook_and_uninstall_restores_it(initialised, cli):
    hooks = initialised / ".git" / "hooks"
    previous = hooks / "post-commit"
    original = b"#!/bin/sh\necho ran >> \"$(git rev-parse --show-toplevel)/prev.log\"\nexit 7\n"
    previous.write_bytes(original)
    previous.chmod(0o750)
    cli.json("run", "start", "Ship week dates")
    data = cli.json("hooks", "install", "git")
    assert data["changed"] and data["path"] == str(hooks)
    assert cli.json("hooks", "install", "git")["changed"] is False
    done = _commit(initialised, "a.py", "Add week parsing")
    assert done.returncode == 0, done.stderr
    assert (initialised / "prev.log").read_text() == "ran\n"  # the previous hook still runs
    # ... and its exit status is the script's.
    status = subprocess.run([str(previous)], cwd=initialised, env=_env()).returncode
    assert status == 7
    found = cli.json("events")
    assert [e["text"] for e in found][-1].endswith("on main: Add week parsing")
    assert found[-1]["source"] == "tool:git"
    cli.json("hooks", "uninstall", "git")
    assert previous.read_bytes() == original
    assert stat.S_IMODE(previous.stat().st_mode) == 0o750
    assert sorted(p.name for p in hooks.iterdir() if not p.name.endswith(".sample")) == \
        ["post-commit"]


def test_git_hooks_honour_core_hooks_path(initialised, cli):
    _git(initialised, "config", "core.hooksPath", ".husky")
    (initialised / ".husky").mkdir()
    cli.json("run", "start", "Try a branch")
    data = cli.json("hooks", "install", "git")
    assert Path(data["path"]) == (initialised / ".husky").resolve()
    assert not (initialised / ".git" / "hooks" / "post-commit").exists()
    assert _git(initialised, "checkout", "-q", "-b", "feature").returncode == 0
    assert _commit(initialised, "b.py", "Feature work").returncode == 0
    texts = [e["text"] for e in cli.json("events")]
    assert any(t.startswith("checkout: main → feature") for t in texts), texts
    assert any(t.endswith("on feature: Feature work") for t in texts), texts
    status = cli.json("hooks", "status")
    assert all(h["installed"] for h in status["git"])


def test_git_hook_never_fails_the_git_command(initialised, cli, tmp_path, monkeypatch):
    # The failure is logged in the cache directory: a private one, not the session's shared one.
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "cache"))
    cli.json("hooks", "install", "git")
    # No active run: nothing recorded, nothing said.
    assert _commit(initialised, "c.py", "No run yet").returncode == 0
    cli.json("run", "start", "goal")
    db = initialised / ".agentstate" / "state.db"
    db.rename(tmp_path / "moved.db")  # the store is gone: the hook fails, git does not
    done = _commit(initialised, "d.py", "Store missing")
    assert done.returncode == 0 and done.stderr == ""
    (tmp_path / "moved.db").rename(db)
    doctor = json.loads(subprocess.run(
        [sys.executable, "-m", "agentstate", "doctor", "--json"], cwd=initialised,
        capture_output=True, text=True).stdout)
    hooks = next(c for c in doctor["data"]["checks"] if c["name"] == "hooks")
    assert hooks["status"] == "warn" and "git post-commit" in hooks["detail"]


def test_rebase_steps_and_file_checkouts_are_not_recorded(initialised, monkeypatch):
    from agentstate.integrations.git_hooks import git_event

    head = git(initialised, "rev-parse", "HEAD").strip()
    assert git_event(initialised, "post-checkout", [head, head, "0"]) is None  # a file
    text, meta = git_event(initialised, "post-commit", [])
    assert text == f"commit {head[:12]} on main: initial" and meta["sha"] == head
    monkeypatch.setenv("GIT_REFLOG_ACTION", "rebase (pick)")
    assert git_event(initialised, "post-commit", []) is None
