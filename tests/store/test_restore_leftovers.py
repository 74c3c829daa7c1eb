"""Issue 21, restore stages inside the store: a restore killed mid-way leaves its staging copy
(the backup's whole database) only inside `.agentstate/`, git-ignored, never in the
repository root where `git add -A` would commit it; `doctor` reports leftovers and `doctor
--repair` removes them (old `.agentstate.restoring-*/` folders in the root included)."""

from __future__ import annotations

import signal
import subprocess
import sys

KILLED = """
import os, signal, sys
import agentstate.maintenance.restore as restore
def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
restore._reapply = killed
from agentstate.entry import main
sys.argv = ["agentstate", "restore", sys.argv[1], "--force"]
main()
"""


def _untracked(repo) -> str:
    return subprocess.run(["git", "add", "-A", "--dry-run"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout


def test_a_killed_restore_leaves_nothing_in_the_repository_root(cli, initialised, tmp_path):
    cli.ok("remember", "the release train leaves on tuesdays", "--kind", "fact")
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path / "b.tar.gz")],
                          cwd=initialised, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert list(initialised.glob(".agentstate.*")) == []
    staged = list((initialised / ".agentstate").glob(".restoring-*"))
    assert len(staged) == 1 and (staged[0] / "state.db").exists()
    assert ".restoring-" not in _untracked(initialised)

    report = cli("doctor", "--json").json()
    [check] = [c for c in report["data"]["checks"] if c["name"] == "restore"]
    assert check["status"] == "warn" and ".restoring-" in check["detail"]
    cli("doctor", "--repair")
    assert list((initialised / ".agentstate").glob(".restoring-*")) == []
    after = cli("doctor", "--json").json()
    [check] = [c for c in after["data"]["checks"] if c["name"] == "restore"]
    assert check["status"] == "ok"
    # The store itself is untouched by the killed restore.
    assert cli.json("recall", "release train")["hits"]


def test_doctor_removes_an_old_staging_folder_from_the_repository_root(cli, initialised):
    old = initialised / ".agentstate.restoring-0123456789"
    old.mkdir()
    (old / "state.db").write_bytes(b"SQLite format 3\x00 purged text")
    report = cli("doctor", "--json").json()
    [check] = [c for c in report["data"]["checks"] if c["name"] == "restore"]
    assert check["status"] == "warn"
    cli("doctor", "--repair")
    assert not old.exists()


def test_a_completed_restore_leaves_no_staging(cli, initialised, tmp_path):
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    cli.ok("restore", str(tmp_path / "b.tar.gz"), "--force")
    assert list((initialised / ".agentstate").glob(".restoring-*")) == []
    assert list(initialised.glob(".agentstate.*")) == []
    assert ".restoring-" in (initialised / ".agentstate" / ".gitignore").read_text()
