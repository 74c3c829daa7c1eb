"""`skill pull` from a remote someone tampered with: releases whose trees no checkout may
hold, or that are bigger than the skill limits, are refused one by one (listed, no tag, no
row) before anything is written, and the rest of the pull goes on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.skills.test_skill_remote import Team


@pytest.fixture
def team(tmp_path, monkeypatch) -> Team:
    return Team(tmp_path, monkeypatch)


def git(cwd: Path, *args: str, input_lines: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, input=input_lines).stdout.strip()


def _forge_release(team, name: str, extra: list[str]) -> str:
    """Push to the remote a release of `name` copied from a's v1 of `demo`, with the raw
    tree entries `extra` (mktree lines) added to its folder; returns the commit."""
    registry = team.a / ".agentstate" / "skills"
    folder = git(registry, "rev-parse", "demo/v1^{commit}:demo")
    entries = git(registry, "ls-tree", folder).splitlines()
    tree = git(registry, "mktree", input_lines="\n".join(entries + extra) + "\n")
    root = git(registry, "mktree", input_lines=f"040000 tree {tree}\t{name}\n")
    commit = git(registry, "commit-tree", root, "-m", f"forged {name}")
    git(registry, "push", "-q", str(team.bare),
        f"{commit}:refs/agentstate/skills/tags/{name}/v1")
    return commit


def _blob(team, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], input=data, check=True,
                          capture_output=True, cwd=team.a / ".agentstate" / "skills"
                          ).stdout.decode().strip()


def test_a_release_with_a_dotdot_tree_is_refused_and_the_rest_is_pulled(team):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    team.json(a, "skill", "push")
    registry = a / ".agentstate" / "skills"
    payload = _blob(team, b"echo owned\n")
    inner = git(registry, "mktree", input_lines=f"100644 blob {payload}\tPWNED.txt\n")
    up = git(registry, "mktree", input_lines=f"040000 tree {inner}\t..\n")
    _forge_release(team, "evil", [f"040000 tree {up}\t.."])
    got = team.run(b, "skill", "pull", "--json")
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)["data"]
    assert data["pulled"] == ["skill:demo@v1"]
    [refusal] = [r for r in data["refused"] if r["ref"] == "skill:evil@v1"]
    assert "a path no checkout may hold" in refusal["reasons"][0]
    assert team.tag(b, "evil/v1") is None and team.rows(b, "evil") == []


def test_a_release_over_the_size_limits_is_refused_before_it_is_written(team):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    big = _blob(team, b"x" * 3000)
    _forge_release(team, "bulky", [f"100644 blob {big}\tassets-big.txt"])
    sub = git(a / ".agentstate" / "skills", "rev-parse", "demo/v1^{commit}")
    _forge_release(team, "nested", [f"160000 commit {sub}\tvendored"])
    config = b / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# max_file_bytes = 1048576",
                                                 "max_file_bytes = 2000"))
    got = team.json(b, "skill", "pull")
    reasons = {r["ref"]: r["reasons"] for r in got["refused"]}
    assert reasons["skill:bulky@v1"] == ["bulky/assets-big.txt is 3000 bytes (at most 2000)"]
    assert "not a file or symlink (git mode 160000)" in reasons["skill:nested@v1"][0]
    assert team.rows(b, "bulky") == [] and team.rows(b, "nested") == []


def test_a_password_holding_an_at_sign_never_reaches_a_message(tmp_path):
    from agentstate.skills.remote_git import one_line, resolve_remote

    url = "https://ana:pa@ss@w0rd@git.example.com/team.git"
    remote = resolve_remote(tmp_path, url, push=True)
    assert remote.url == url  # git still gets them
    assert remote.display == "https://git.example.com/team.git"
    said = one_line(f"fatal: unable to access '{url}/': The requested URL returned error: 403")
    assert "w0rd" not in said and "ana" not in said and "@" not in said
    assert "git.example.com/team.git" in said

