"""Crash-safe publishing: real `skill publish` processes killed at each git step, then the next
command, `doctor` and `doctor --repair` put the registry and the database back in agreement."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentstate.errors import CorruptStore, Refused
from agentstate.skills.authoring import new_skill
from agentstate.skills.history import check_registry
from agentstate.skills.load import load_skill
from agentstate.skills.publishing import publish_skill
from agentstate.skills.revocation import revoke_skill
from agentstate.store.principals import resolve_principal
from tests.conftest import ROOT, author_scaffold


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def tags(path: Path) -> set[str]:
    return set(git(path, "tag", "-l").split())


def release_rows(store, name: str) -> list[tuple[int, str]]:
    return [(r["version"], r["status"]) for r in store.db.query(
        "SELECT version, status FROM skill_versions WHERE name = ? AND status != 'candidate' "
        "ORDER BY version", (name,))]


def journal_rows(store) -> int:
    return store.conn.execute("SELECT count(*) FROM skill_publish_journal").fetchone()[0]


def locks(path: Path) -> list[str]:
    git_dir = path / ".git"
    return sorted(str(p.relative_to(git_dir)) for p in git_dir.rglob("*.lock"))


def checks(cli) -> dict:
    done = cli("doctor", "--json")
    data = done.json().get("data") or done.json()
    return {c["name"]: c for c in data["checks"]}


@pytest.fixture
def demo(store):
    new_skill(store, "demo", description="Check that the demo target exists.",
              principal=resolve_principal(store))
    return author_scaffold(store.skills_path / "demo")


def _hooks(tmp_path: Path, how: str) -> dict[str, str]:
    """Git configuration (through the environment, for the killed process only) that kills
    the publish's whole process group — git included, so git's own lock files stay behind —
    while git holds them: `refs` in the ref transaction (HEAD.lock, the branch and tag
    locks), `index` while the shared index is rewritten (index.lock)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir(exist_ok=True)
    if how == "refs":
        script = hooks / "reference-transaction"
        script.write_text("#!/bin/sh\n[ \"$1\" = prepared ] || exit 0\n"
                          "grep -q refs/tags/ && kill -9 0\nexit 0\n")
        key, value = "core.hooksPath", str(hooks)
    else:
        script = hooks / "fsmonitor"
        script.write_text("#!/bin/sh\n[ -e .git/index.lock ] && kill -9 0\nexit 0\n")
        key, value = "core.fsmonitor", str(script)
    script.chmod(0o755)
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": key, "GIT_CONFIG_VALUE_0": value}


def _publish(repo: Path, env: dict[str, str], name: str = "demo") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentstate", "skill", "publish", name],
                          cwd=repo, env={**os.environ, **env}, capture_output=True, text=True,
                          start_new_session=True, timeout=120)


# where the process dies → (tag left, rows, lock files left); every case leaves a journal row
KILLS = {
    "journal": ({"AGENTSTATE_TEST_KILL_AT": "journal"}, False, []),
    "commit": ({"AGENTSTATE_TEST_KILL_AT": "commit"}, False, []),
    "refs": ("refs", False, ["HEAD.lock", "refs/heads/main.lock", "refs/tags/demo/v1.lock"]),
    "tag": ({"AGENTSTATE_TEST_KILL_AT": "tag"}, True, []),
    "index": ("index", True, ["index.lock"]),
    "row": ({"AGENTSTATE_TEST_KILL_AT": "row"}, True, []),
}


@pytest.mark.parametrize("where", list(KILLS))
def test_publish_killed_at_each_git_step_is_repaired(where, store, demo, repo, cli, tmp_path):
    how, tagged, stale = KILLS[where]
    env = how if isinstance(how, dict) else _hooks(tmp_path, how)
    head_before = git(store.skills_path, "rev-parse", "HEAD")
    killed = _publish(repo, env)
    assert killed.returncode == -signal.SIGKILL, (killed.stdout, killed.stderr)
    # What the crash left: a journal row always, never a row; a tag only from "tag" on.
    assert journal_rows(store) == 1
    assert release_rows(store, "demo") == []
    assert ("demo/v1" in tags(store.skills_path)) is tagged
    assert locks(store.skills_path) == stale
    if not tagged:
        assert git(store.skills_path, "rev-parse", "HEAD") == head_before

    found = checks(cli)
    assert found["publish"]["status"] == "fail"
    assert "interrupted publish of skill:demo@v1" in found["publish"]["detail"]
    if stale:
        assert f"git lock .git/{stale[0]}" in " ".join(found["publish"]["data"]["problems"])
    if tagged:
        assert found["registry"]["status"] == "fail"  # a tag with no row

    repaired = cli.json("doctor", "--repair")
    assert repaired["healthy"] is True, repaired
    verb = "finished" if tagged else "rolled back"
    assert any(verb in a and "skill:demo@v1" in a for a in repaired["repaired"])
    assert journal_rows(store) == 0 and locks(store.skills_path) == []
    assert check_registry(store) == []  # no tag without a row, no row without a tag
    assert cli.json("doctor")["healthy"] is True

    if tagged:  # finished: v1 is a release with everything the publish had checked
        assert release_rows(store, "demo") == [(1, "published")]
        assert load_skill(store, "demo", principal=resolve_principal(store)).version == 1
        with open(demo / "scripts" / "check.py", "a") as handle:
            handle.write("# v2\n")
    published = _publish(repo, {})
    assert published.returncode == 0, published.stderr
    version = 2 if tagged else 1
    assert f"skill:demo@v{version} published" in published.stdout
    assert release_rows(store, "demo")[-1] == (version, "published")
    assert {f"demo/v{v}" for v in range(1, version + 1)} <= tags(store.skills_path)
    assert git(store.skills_path, "--no-optional-locks", "status", "--porcelain") == ""
    assert check_registry(store) == []


@pytest.mark.parametrize("where", ["refs", "tag"])
def test_the_next_publish_recovers_without_doctor(where, store, demo, repo, tmp_path):
    """Any command that takes the registry lock finishes or rolls back first."""
    how = KILLS[where][0]
    killed = _publish(repo, how if isinstance(how, dict) else _hooks(tmp_path, how))
    assert killed.returncode == -signal.SIGKILL
    with open(demo / "scripts" / "check.py", "a") as handle:
        handle.write("# edited after the crash\n")
    again = _publish(repo, {})
    assert again.returncode == 0, again.stderr
    expected = [(1, "published"), (2, "published")] if where == "tag" else [(1, "published")]
    assert release_rows(store, "demo") == expected
    assert journal_rows(store) == 0 and locks(store.skills_path) == []
    assert check_registry(store) == []


def test_a_stale_lock_is_named_and_repaired(store, demo, cli):
    """No journal behind it (a killed user git): the error names the lock, not a tag."""
    lock = store.skills_path / ".git" / "index.lock"
    lock.write_text("")
    with pytest.raises(CorruptStore) as caught:
        publish_skill(store, "demo", principal=resolve_principal(store))
    message = caught.value.message
    assert ".git/index.lock" in message and "doctor --repair" in message
    assert "git tag -d" not in message and "already has tag" not in message
    assert "demo/v1" not in tags(store.skills_path) and journal_rows(store) == 0
    assert release_rows(store, "demo") == []

    found = checks(cli)
    assert found["publish"]["status"] == "fail" and "index.lock" in found["publish"]["detail"]
    fresh = cli("doctor", "--repair", "--json")  # a lock seconds old may be a running git's
    assert fresh.exit_code == 1 and lock.exists()
    assert any("left git lock" in a for a in fresh.json()["data"]["repaired"])
    old = time.time() - 3600
    os.utime(lock, (old, old))
    repaired = cli.json("doctor", "--repair")
    assert repaired["healthy"] is True and not lock.exists()
    assert publish_skill(store, "demo", principal=resolve_principal(store)).ref == "skill:demo@v1"


def test_an_existing_tag_is_reported_only_when_it_exists(store, demo):
    git(store.skills_path, "tag", "demo/v1")
    with pytest.raises(CorruptStore, match="already has tag demo/v1"):
        publish_skill(store, "demo", principal=resolve_principal(store))
    assert journal_rows(store) == 0 and release_rows(store, "demo") == []


def test_states_left_by_an_older_agentstate_are_repaired(store, demo, cli):
    """No journal: a commit with neither tag nor row, and a tag without a row."""
    path = store.skills_path
    git(path, "add", "demo")
    git(path, "commit", "-q", "-m", "demo v1: interrupted")
    orphan = git(path, "rev-parse", "HEAD")
    found = checks(cli)
    assert found["publish"]["status"] == "fail" and "no tag and no release row" in \
        found["publish"]["detail"]
    git(path, "tag", "demo/v1", orphan)
    found = checks(cli)
    assert "tag demo/v1 has no release row" in found["registry"]["detail"]
    repaired = cli.json("doctor", "--repair")
    assert repaired["healthy"] is True, repaired
    assert "demo/v1" not in tags(path) and git(path, "rev-parse", "HEAD") != orphan
    assert (path / "demo" / "SKILL.md").exists()  # the draft is untouched
    result = publish_skill(store, "demo",
                           principal=resolve_principal(store))  # not "nothing to commit"
    assert result.ref == "skill:demo@v1" and check_registry(store) == []


def test_a_missing_tag_is_recreated_at_the_recorded_commit(store, cli):
    git(store.skills_path, "tag", "-d", "verify-tests/v1")
    assert checks(cli)["registry"]["status"] == "fail"
    repaired = cli.json("doctor", "--repair")
    assert any("recreated tag verify-tests/v1" in a for a in repaired["repaired"])
    loaded = load_skill(store, "verify-tests", principal=resolve_principal(store))
    assert repaired["healthy"] is True and loaded.version == 1


def test_init_restores_shipped_skills_into_a_deleted_registry(store, demo, cli, repo):
    import shutil

    publish_skill(store, "demo", principal=resolve_principal(store))
    revoke_skill(store, "record-memory", "not wanted here", principal=resolve_principal(store))
    shutil.rmtree(store.skills_path)
    found = checks(cli)
    assert found["skills"]["status"] == "fail" and "agentstate init" in found["skills"]["detail"]

    created = cli.json("init")["created"]
    assert "skills/ (git repository)" in created
    restored = {line.split()[1] for line in created if "restored" in line}
    assert restored == {"skill:resume-task@v1", "skill:verify-tests@v1", "skill:record-memory@v1"}
    assert load_skill(store, "verify-tests", principal=resolve_principal(store)).version == 1
    assert load_skill(store, "resume-task", principal=resolve_principal(store)).version == 1
    # A version revoked here keeps its history (tag back) but stays revoked.
    assert release_rows(store, "record-memory") == [(1, "revoked")]
    assert "record-memory/v1" in tags(store.skills_path)
    with pytest.raises(Refused, match="revoked"):
        load_skill(store, "record-memory", principal=resolve_principal(store))
    assert cli.json("init")["changed"] is False  # a second init changes nothing

    # The user's own release is gone with the registry: doctor says so, --repair retires it.
    found = checks(cli)
    assert "skill:demo@v1 (published) has no tag demo/v1" in found["registry"]["detail"]
    repaired = cli.json("doctor", "--repair")
    assert repaired["healthy"] is True
    assert any("revoked skill:demo@v1: release content lost" in a for a in repaired["repaired"])
    assert release_rows(store, "demo") == [(1, "revoked")]


def test_the_kill_hook_is_ignored_outside_tests(store, demo, repo):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["AGENTSTATE_TEST_KILL_AT"] = "tag"
    done = subprocess.run([sys.executable, "-m", "agentstate", "skill", "publish", "demo"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert release_rows(store, "demo") == [(1, "published")]


def test_store_imports_no_domain():
    """Storage below the domains: agentstate/store/ imports none of them."""
    import ast

    allowed = {"store", "config", "config_template", "errors", "tokens",
               "lazy_re"}  # lazy_re: the bottom layer
    root = ROOT / "agentstate" / "store"
    offenders = []
    for file in root.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] == "agentstate" and len(parts) > 1 and parts[1] not in allowed:
                    offenders.append(f"{file.name}: {name}")
    assert offenders == []
