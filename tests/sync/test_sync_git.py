"""Two clones of one repository share facts through commits, pulls and merges (real git)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import Cli, git


@pytest.fixture
def team(tmp_path, monkeypatch):
    """A bare remote and two clones, A (which set agentstate up) and B."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(a))
    (a / "README.md").write_text("demo\n")
    cli = Cli()
    monkeypatch.chdir(a)
    cli.ok("--dir", str(a), "init")
    git(a, "add", "-A")
    git(a, "commit", "-q", "-m", "set up agentstate")
    git(a, "push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(remote), str(b))
    cli.ok("--dir", str(b), "init")
    return Team(cli, a, b)


class Team:
    def __init__(self, cli: Cli, a: Path, b: Path) -> None:
        self.cli, self.a, self.b = cli, a, b

    def run(self, clone: Path, *args: str) -> dict:
        return self.cli.json("--dir", str(clone), *args)

    def share(self, clone: Path, message: str) -> dict:
        """sync, commit the shared folder, push (pulling first, as a teammate would)."""
        data = self.run(clone, "sync")
        git(clone, "add", ".agentstate")
        git(clone, "commit", "-q", "--allow-empty", "-m", message)
        git(clone, "pull", "-q", "--no-rebase", "origin", "main")
        git(clone, "push", "-q", "origin", "main")
        return data

    def pull(self, clone: Path) -> dict:
        git(clone, "pull", "-q", "--no-rebase", "origin", "main")
        return self.run(clone, "sync")

    def recall(self, clone: Path, query: str) -> list[str]:
        return [h["text"] for h in self.run(clone, "recall", query)["hits"]]


FACT = "integration tests need the docker daemon running"


def test_init_keeps_the_shared_folder_tracked_and_the_database_ignored(team):
    a = team.a
    team.run(a, "remember", FACT, "--kind", "fact", "--source", "user")
    team.run(a, "sync")
    ignored = subprocess.run(["git", "check-ignore", ".agentstate/state.db",
                              ".agentstate/history.key", ".agentstate/shared/memories.jsonl"],
                             cwd=a, capture_output=True, text=True).stdout.split()
    assert ".agentstate/state.db" in ignored and ".agentstate/history.key" in ignored
    assert ".agentstate/shared/memories.jsonl" not in ignored
    attr = git(a, "check-attr", "merge", ".agentstate/shared/memories.jsonl")
    assert attr.strip().endswith("merge: union")


def test_a_fact_travels_and_a_forget_follows_it(team):
    a, b = team.a, team.b
    team.run(a, "remember", FACT, "--kind", "fact", "--source", "user")
    assert team.share(a, "share a fact")["exported"] == 1
    pulled = team.pull(b)
    assert pulled["imported"] == 1
    assert FACT in team.recall(b, "docker daemon")
    pack = team.cli.json("--dir", str(b), "context", "--query", "docker daemon tests")
    assert FACT in pack["text"]
    # Idempotent: a second sync changes nothing and writes nothing.
    again = team.run(b, "sync")
    assert (again["imported"], again["exported"], again["files_written"]) == (0, 0, [])

    team.run(a, "forget", "--query", "docker daemon")
    assert team.share(a, "forget the fact")["exported_tombstones"] == 1
    assert team.pull(b)["tombstoned"] == 1
    assert FACT not in team.recall(b, "docker daemon")
    # Tombstones win for good: B's next export does not bring the fact back, and A's
    # import of B's (unchanged) records does not either.
    assert team.share(b, "b syncs")["exported"] == 0
    team.pull(a)
    assert FACT not in team.recall(a, "docker daemon")


def test_a_purge_erases_the_text_on_the_other_clone(team):
    a, b = team.a, team.b
    secretish = "the staging database lives on host db-staging-7 port 6543"
    team.run(a, "remember", secretish, "--kind", "fact", "--source", "user")
    team.share(a, "share")
    team.pull(b)
    assert secretish in team.recall(b, "staging database host")

    team.run(a, "forget", "--query", "staging database host", "--purge")
    shared = a / ".agentstate" / "shared"
    team.share(a, "purge")
    tomb = (shared / "tombstones.jsonl").read_text()
    assert '"type":"purge"' in tomb and "db-staging-7" not in tomb
    assert "db-staging-7" not in (shared / "memories.jsonl").read_text()
    result = team.pull(b)
    assert result["tombstoned"] == 1 and result["refs"]["purged"]
    assert result["files_written"] == []  # nothing about the purged record is written back
    assert git(b, "status", "--porcelain", ".agentstate") == ""
    assert secretish not in team.recall(b, "staging database host")
    for name in ("state.db", "state.db-wal"):
        path = b / ".agentstate" / name
        if path.exists():
            assert b"db-staging-7" not in path.read_bytes(), name
    assert "db-staging-7" not in (b / ".agentstate" / "shared" / "memories.jsonl").read_text()


def test_concurrent_exports_merge_by_union_without_losing_a_record(team):
    a, b = team.a, team.b
    facts_a = [f"service alpha{i} listens on port {8000 + i}" for i in range(3)]
    facts_b = [f"service beta{i} writes logs to /var/log/beta{i}" for i in range(3)]
    for text in facts_a:
        team.run(a, "remember", text, "--kind", "fact", "--source", "user")
    for text in facts_b:
        team.run(b, "remember", text, "--kind", "fact", "--source", "user")
    team.share(a, "a's facts")
    team.run(b, "sync")
    git(b, "add", ".agentstate")
    git(b, "commit", "-q", "-m", "b's facts")
    # Both teammates inserted lines into the same sorted files: without merge=union this
    # is a textual conflict; with it git keeps every line.
    git(b, "pull", "-q", "--no-rebase", "origin", "main")
    lines = (b / ".agentstate" / "shared" / "memories.jsonl").read_text().splitlines()
    assert len(lines) == 6 and not any(line.startswith("<<<<<<<") for line in lines)
    assert team.run(b, "sync")["imported"] == 3
    git(b, "push", "-q", "origin", "main")
    team.pull(a)
    for text in facts_a + facts_b:
        assert text in team.recall(a, text) and text in team.recall(b, text)


def test_a_rival_value_for_the_same_key_is_contested_not_an_overwrite(team):
    a, b = team.a, team.b
    team.run(a, "remember", "tests run with make test", "--kind", "fact", "--key",
             "test-command", "--source", "user")
    team.share(a, "a")
    team.pull(b)
    # Both change the value independently.
    team.run(a, "remember", "tests run with make check", "--kind", "fact", "--key",
             "test-command", "--source", "user")
    team.run(b, "remember", "tests run with pytest -q", "--kind", "fact", "--key",
             "test-command", "--source", "user")
    team.share(a, "a changes it")
    team.run(b, "sync")
    git(b, "add", ".agentstate")
    git(b, "commit", "-q", "-m", "b changes it")
    result = team.pull(b)
    assert result["contested"] == 1
    listed = {m["text"]: m["status"] for m in team.run(b, "memory", "list")}
    assert listed["tests run with pytest -q"] == "active"  # B's own value stays current
    assert listed["tests run with make check"] == "contested"


def test_the_git_hooks_import_after_a_pull_and_never_fail_it(team):
    import os
    import sys

    a, b = team.a, team.b
    team.run(b, "hooks", "install", "git")
    team.run(a, "remember", FACT, "--kind", "fact", "--source", "user")
    team.share(a, "share a fact")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                                f"{os.environ.get('PATH', '')}")
    pulled = subprocess.run(["git", "pull", "-q", "--no-rebase", "origin", "main"], cwd=b,
                            env=env, capture_output=True, text=True, timeout=120)
    assert pulled.returncode == 0, pulled.stderr
    assert FACT in team.recall(b, "docker daemon")  # imported by post-merge, no sync typed
    # A shared file broken by hand: the import fails, the pull does not.
    team.run(a, "forget", "--query", "docker daemon")
    team.share(a, "forget")
    with (a / ".agentstate" / "shared" / "tombstones.jsonl").open("a") as handle:
        handle.write("{not json\n")
    git(a, "commit", "-q", "-am", "broken by hand")
    git(a, "push", "-q", "origin", "main")
    pulled = subprocess.run(["git", "pull", "-q", "--no-rebase", "origin", "main"], cwd=b,
                            env=env, capture_output=True, text=True, timeout=120)
    assert pulled.returncode == 0
    errors = [e["error"] for e in team.run(b, "hooks", "status")["errors"]]
    assert any("tombstones.jsonl line 2: not valid JSON" in e for e in errors), errors
    assert FACT in team.recall(b, "docker daemon")  # nothing half-applied
