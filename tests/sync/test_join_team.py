"""The README's and docs/team.md's team sequences, as typed, on real git repositories: a bare
origin and two or three clones, both orders of `init` and pull, a branch switch, a merge of
conflicting facts, and a pull that brings records from a newer agentstate."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentstate.store.principals import resolve_principal
from tests.conftest import Cli, git

FACT = "integration tests need the docker daemon running"
OTHER = "the staging database is reset every night at 02:00"


def _env() -> dict:
    # The git hooks call `agentstate` by name: the one of this interpreter.
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}")


def sh_git(clone: Path, *args: str) -> subprocess.CompletedProcess:
    """git as a user types it (hooks run); the result, for the test to check."""
    return subprocess.run(["git", *args], cwd=clone, env=_env(), capture_output=True,
                          text=True, timeout=120)


class Team:
    """A bare origin with one commit and any number of clones (the test's teammates)."""

    def __init__(self, tmp: Path, monkeypatch) -> None:
        self.tmp, self.cli, self.monkeypatch = tmp, Cli(), monkeypatch
        self.origin = tmp / "origin.git"
        git(tmp, "init", "-q", "--bare", "-b", "main", str(self.origin))
        seed = self.clone("seed")
        (seed / "README.md").write_text("demo\n")
        git(seed, "add", "README.md")
        git(seed, "commit", "-q", "-m", "initial")
        git(seed, "push", "-q", "origin", "main")

    def clone(self, name: str) -> Path:
        git(self.tmp, "clone", "-q", str(self.origin), name)
        return self.tmp / name

    def run(self, clone: Path, *args: str):
        """The CLI in the clone's working directory (no --dir: found the way a user's is)."""
        self.monkeypatch.chdir(clone)
        return self.cli(*args)

    def ok(self, clone: Path, *args: str):
        result = self.run(clone, *args)
        assert result.exit_code == 0, (clone.name, args, result.stdout, result.stderr)
        return result

    def json(self, clone: Path, *args: str):
        return json.loads(self.ok(clone, *args, "--json").stdout)["data"]

    def share(self, clone: Path, message: str) -> None:
        """README: `agentstate sync && git add .agentstate && git commit && git push`."""
        self.ok(clone, "sync")
        git(clone, "add", ".agentstate")
        git(clone, "commit", "-q", "-m", message)
        pulled = sh_git(clone, "pull", "-q", "--no-rebase", "origin", "main")
        assert pulled.returncode == 0, pulled.stderr
        git(clone, "push", "-q", "origin", "main")

    def pull(self, clone: Path) -> None:
        pulled = sh_git(clone, "pull", "-q", "--no-rebase", "origin", "main")
        assert pulled.returncode == 0, pulled.stderr  # never "untracked … would be overwritten"

    def facts(self, clone: Path) -> dict[str, str]:
        return {m["text"]: m["status"] for m in self.json(clone, "memory", "list")}


@pytest.fixture
def team(tmp_path, monkeypatch) -> Team:
    return Team(tmp_path, monkeypatch)


def _remember(team: Team, clone: Path, text: str, key: str | None = None) -> None:
    extra = ("--key", key) if key else ()
    team.ok(clone, "remember", text, "--kind", "fact", "--source", "user", *extra)


def test_init_commits_nothing_a_teammate_also_creates(team):
    """`git add .agentstate` after init stages nothing; after sync, only shared/."""
    a = team.clone("a")
    team.ok(a, "init")
    assert git(a, "status", "--porcelain", "--untracked-files=all") == ""
    before_sync = git(a, "check-attr", "merge", ".agentstate/shared/memories.jsonl")
    assert before_sync.strip().endswith("merge: union")  # init set the clone up already
    _remember(team, a, FACT)
    team.ok(a, "sync")
    git(a, "add", ".agentstate")
    staged = git(a, "diff", "--cached", "--name-only").split()
    assert staged and all(p.startswith(".agentstate/shared/") for p in staged), staged
    attr = git(a, "check-attr", "merge", ".agentstate/shared/memories.jsonl")
    assert attr.strip().endswith("merge: union")  # from the clone's own .git/info/attributes
    ignored = git(a, "check-ignore", ".agentstate/state.db", ".agentstate/config.toml",
                  ".agentstate/history.key", ".agentstate/.gitignore").split()
    assert len(ignored) == 4


def test_team_md_sequence_teammate_who_ran_init_first(team):
    """docs/team.md, B had run `init` earlier: the pull merges cleanly, the fact arrives."""
    a, b = team.clone("a"), team.clone("b")
    team.ok(b, "init")  # B first
    team.ok(a, "init")
    _remember(team, a, FACT)
    team.ok(a, "sync")
    git(a, "add", ".agentstate")  # the README's `git add .agentstate`
    git(a, "commit", "-q", "-m", "share facts")
    git(a, "push", "-q", "origin", "main")
    team.pull(b)
    assert team.json(b, "sync")["imported"] == 1
    assert team.facts(b)[FACT] == "active"


def test_readme_sequence_teammate_who_never_ran_init(team):
    """A fresh clone: the first command sets the store up and imports, no `init` typed."""
    a = team.clone("a")
    team.ok(a, "init")
    team.ok(a, "hooks", "install", "git")
    _remember(team, a, FACT)
    team.share(a, "share facts")
    _publish(team, a, "check-format")
    assert team.json(a, "skill", "push")["pushed"] == ["skill:check-format@v1"]
    b = team.clone("b")
    assert not (b / ".agentstate" / "state.db").exists()
    first = team.run(b, "recall", "docker daemon", "--json")
    assert first.exit_code == 0, first.stderr
    assert "set up this clone's store" in first.stderr and "1 shared fact imported" in first.stderr
    assert [h["text"] for h in json.loads(first.stdout)["data"]["hits"]] == [FACT]
    assert (b / ".agentstate" / "skills" / ".git").is_dir()  # as init makes it
    assert team.json(b, "skill", "pull")["pulled"] == ["skill:check-format@v1"]
    assert "skill:check-format@v1" in {s["ref"] for s in team.json(b, "skill", "list")}
    # B's clone is now a normal store: its own facts go back the same way
    _remember(team, b, OTHER)
    team.share(b, "b shares")
    team.pull(a)  # A installed the git hooks: post-merge imports, nothing typed
    assert team.facts(a)[OTHER] == "active"
    assert "set up" not in team.ok(b, "recall", "docker").stderr  # once only


def _publish(team: Team, clone: Path, name: str) -> None:
    from agentstate.skills.authoring import new_skill
    from agentstate.skills.publishing import publish_skill
    from agentstate.store.db import open_store
    from tests.conftest import author_scaffold

    store = open_store(clone / ".agentstate")
    try:
        new_skill(store, name, description="Check the formatting before a commit.",
                  principal=resolve_principal(store))
        author_scaffold(store.skills_path / name)
        publish_skill(store, name, principal=resolve_principal(store))
    finally:
        store.close()


def test_a_claude_code_session_in_a_fresh_clone_sets_the_store_up(team):
    """The hook settings may be committed with the repository: the first hook of a session
    in a fresh clone sets the store up (and imports) instead of failing every hook."""
    from tests.conftest import run_agentstate
    from tests.integrations.test_hooks_handler import context_of, payload

    a = team.clone("a")
    team.ok(a, "init")
    team.ok(a, "hooks", "install", "claude-code")
    _remember(team, a, FACT)
    team.ok(a, "sync")
    git(a, "add", ".agentstate", ".claude")
    git(a, "commit", "-q", "-m", "share facts and the agent's hooks")
    git(a, "push", "-q", "origin", "main")
    b = team.clone("b")
    started = run_agentstate("hook", "claude-code", cwd=b, input=json.dumps(
        payload("claude-code", "session_start_startup", b)))
    assert started.returncode == 0, started.stderr
    assert (b / ".agentstate" / "state.db").exists()
    assert "agentstate" in context_of(started) and "no .agentstate store" not in started.stderr
    assert team.facts(b)[FACT] == "active"


def test_pull_first_then_init_and_init_first_then_pull(team):
    """Both orders for a clone that shares nothing yet: A's facts reach B either way."""
    a = team.clone("a")
    team.ok(a, "init")
    _remember(team, a, FACT)
    team.share(a, "one")
    b = team.clone("b")
    team.pull(b)
    # init after the pull: the shared files are adopted (imported), not replaced
    assert "1 shared fact imported" in team.json(b, "init")["created"]
    assert team.facts(b)[FACT] == "active"
    assert team.json(b, "sync")["imported"] == 0
    assert git(b, "status", "--porcelain") == ""  # nothing of B's own became a change
    c = team.clone("c")
    team.ok(c, "init")  # imports FACT, which came with the clone
    _remember(team, a, OTHER)
    team.share(a, "two")
    team.pull(c)
    assert set(team.facts(c)) == {FACT}  # not imported until asked (no hooks in C) ...
    team.ok(c, "sync")
    assert set(team.facts(c)) == {FACT, OTHER}  # ... then both


def test_three_teammates_and_a_merge_of_conflicting_facts(team):
    """A, B and C each init; A and B state rival values for one key on diverged histories:
    git merges the shared files by union, and the import marks the rival value contested."""
    a, b, c = team.clone("a"), team.clone("b"), team.clone("c")
    for clone in (a, b, c):
        team.ok(clone, "init")
        team.ok(clone, "hooks", "install", "git")
    _remember(team, a, "tests run with pytest -q", key="test-command")
    _remember(team, a, FACT)
    team.share(a, "a")
    _remember(team, b, "tests run with make check", key="test-command")
    team.ok(b, "sync")
    git(b, "add", ".agentstate")
    git(b, "commit", "-q", "-m", "b")
    team.pull(b)  # a real merge of both exports: no conflict markers, post-merge imports
    assert "<<<<<<<" not in (b / ".agentstate" / "shared" / "memories.jsonl").read_text()
    listed = team.facts(b)
    assert listed["tests run with make check"] == "active"  # B's own value stays current
    assert listed["tests run with pytest -q"] == "contested"
    assert listed[FACT] == "active"
    git(b, "push", "-q", "origin", "main")
    team.pull(c)
    seen = team.facts(c)
    assert {FACT, "tests run with pytest -q", "tests run with make check"} <= set(seen)
    assert sorted(seen.values()).count("contested") == 1


def test_a_branch_switch_imports_that_branch_and_keeps_the_current_run(team):
    a, b = team.clone("a"), team.clone("b")
    for clone in (a, b):
        team.ok(clone, "init")
    team.ok(b, "hooks", "install", "git")
    git(a, "switch", "-q", "-c", "feature")
    _remember(team, a, FACT)
    team.ok(a, "sync")
    git(a, "add", ".agentstate")
    git(a, "commit", "-q", "-m", "feature fact")
    git(a, "push", "-q", "origin", "feature")
    run = team.json(b, "run", "start", "review the feature")["run"]["ref"]
    assert sh_git(b, "fetch", "-q", "origin").returncode == 0
    switched = sh_git(b, "switch", "-q", "feature")
    assert switched.returncode == 0, switched.stderr
    assert team.facts(b)[FACT] == "active"  # post-checkout imported the branch's records
    assert team.json(b, "run", "show")["run"]["ref"] == run
    assert any("checkout" in e["text"] for e in team.json(b, "events"))


def _newer_records(clone: Path) -> None:
    """A shared folder as a newer agentstate would write it: format version 2."""
    shared = clone / ".agentstate" / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    line = {"v": 2, "type": "memory", "id": "0" * 32, "text": "from the future"}
    (shared / "memories.jsonl").write_text(json.dumps(line) + "\n")
    git(clone, "add", ".agentstate/shared")
    git(clone, "commit", "-q", "-m", "records from a newer agentstate")
    git(clone, "push", "-q", "origin", "main")


def test_a_fresh_clone_of_records_from_a_newer_agentstate_creates_nothing(team):
    a = team.clone("a")
    _newer_records(a)
    b = team.clone("b")
    result = team.run(b, "recall", "anything", "--json")
    assert result.exit_code == 1
    message = json.loads(result.stdout)["error"]["message"]
    assert "came with the repository" in message and "upgrade agentstate" in message
    assert "nothing was created" in message and "memories.jsonl line 1" in message
    assert sorted(p.name for p in (b / ".agentstate").iterdir()) == ["shared"]
    assert git(b, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_pull_of_records_from_a_newer_agentstate_leaves_the_store_untouched(team):
    a, b = team.clone("a"), team.clone("b")
    team.ok(b, "init")
    team.ok(b, "hooks", "install", "git")
    _remember(team, b, OTHER)
    db = b / ".agentstate" / "state.db"
    before = sqlite3.connect(db).execute("SELECT * FROM memories").fetchall()
    _newer_records(a)
    team.pull(b)  # the post-merge import fails in the hook log, never the pull
    result = team.run(b, "sync", "--import-only")
    assert result.exit_code == 1 and "upgrade agentstate" in result.stderr
    assert sqlite3.connect(db).execute("SELECT * FROM memories").fetchall() == before
    errors = [e["error"] for e in team.json(b, "hooks", "status")["errors"]]
    assert any("upgrade agentstate" in e for e in errors), errors


def test_an_older_clone_store_is_brought_forward_by_init(team):
    """A store made by an earlier version (untracked .gitignore and .gitattributes beside it):
    `init` rewrites them, so the teammate's pull no longer collides."""
    from agentstate.store.db import OLD_GITIGNORE

    a, b = team.clone("a"), team.clone("b")
    team.ok(b, "init")
    (b / ".agentstate" / ".gitignore").write_text(OLD_GITIGNORE)
    (b / ".agentstate" / ".gitattributes").write_text(
        "# agentstate: shared records merge by union (one record per line).\n"
        "shared/*.jsonl merge=union\n")
    # what an earlier version's teammate committed with `git add .agentstate`
    team.ok(a, "init")
    (a / ".agentstate" / ".gitignore").write_text(OLD_GITIGNORE)
    git(a, "add", "-f", ".agentstate/.gitignore", ".agentstate/config.toml")
    git(a, "commit", "-q", "-m", "old-style set-up")
    git(a, "push", "-q", "origin", "main")
    assert sh_git(b, "pull", "-q", "--no-rebase", "origin", "main").returncode != 0
    team.ok(b, "init")
    assert not (b / ".agentstate" / ".gitattributes").exists()
    team.pull(b)
