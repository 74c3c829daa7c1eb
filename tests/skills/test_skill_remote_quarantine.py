"""Issue 21, a registry that keeps only what it accepted: `skill pull` fetches into a
quarantine. A refused release leaves no object in the registry (its secret is in no git object
and in no backup), an accepted release's tag names a commit holding that skill only (a secret
in a sibling folder of the remote's commit never arrives), and a ref name no version can hold
is refused before the fetch without breaking later pulls."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.skills.test_skill_remote import Team
from tests.skills.test_skill_remote_hostile import _blob, _forge_release, git

SECRET = "ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"


@pytest.fixture
def team(tmp_path, monkeypatch) -> Team:
    return Team(tmp_path, monkeypatch)


def _objects(registry: Path) -> bytes:
    """Every object the registry holds, reachable or not, loose or packed (after a gc that
    keeps unreachable objects, as git's own default does for two weeks)."""
    git(registry, "gc", "--quiet")
    return subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                          cwd=registry, capture_output=True, check=True).stdout


def _backup_bytes(team: Team, where: Path, tmp: Path) -> bytes:
    archive = tmp / "backup.tar.gz"
    done = team.run(where, "backup", "--out", str(archive))
    assert done.exit_code == 0, done.stdout + done.stderr
    data = b""
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            if handle is not None:
                data += handle.read()
    bundle = [m for m in tarfile.open(archive).getnames() if m.endswith(".bundle")]
    if bundle:  # a git bundle is a pack: read its objects through git
        out = tmp / "unpacked"
        with tarfile.open(archive) as tar:
            tar.extractall(out, filter="data")
        scratch = tmp / "scratch.git"
        git(tmp, "init", "-q", "--bare", str(scratch))
        for name in bundle:
            git(scratch, "fetch", "-q", str(out / name), "+refs/*:refs/bundle/*")
        data += subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"],
                               cwd=scratch, capture_output=True, check=True).stdout
    return data


def test_a_refused_release_leaves_no_object_in_the_registry(team, tmp_path):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    team.json(a, "skill", "push")
    leak = _blob(team, f"export TOKEN={SECRET}\n".encode())
    _forge_release(team, "leaky", [f"100644 blob {leak}\tnotes.md"])
    got = team.json(b, "skill", "pull")
    assert got["pulled"] == ["skill:demo@v1"]
    assert "skill:leaky@v1" in [r["ref"] for r in got["refused"]]
    registry = b / ".agentstate" / "skills"
    objects = _objects(registry)
    assert SECRET.encode() not in objects
    assert leak.encode() not in subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch-check"], cwd=registry,
        capture_output=True, check=True).stdout
    assert SECRET.encode() not in _backup_bytes(team, b, tmp_path)


def test_an_accepted_release_brings_its_own_folder_only(team, tmp_path):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    registry_a = a / ".agentstate" / "skills"
    # The remote's release commit also holds a sibling folder with a secret in it.
    folder = git(registry_a, "rev-parse", "demo/v1^{commit}:demo")
    leak = _blob(team, f"TOKEN={SECRET}\n".encode())
    sibling = git(registry_a, "mktree", input_lines=f"100644 blob {leak}\tenv.txt\n")
    root = git(registry_a, "mktree",
               input_lines=f"040000 tree {folder}\tdemo\n040000 tree {sibling}\tprivate\n")
    commit = git(registry_a, "commit-tree", root, "-m", "demo with a neighbour")
    git(registry_a, "push", "-q", str(team.bare),
        f"{commit}:refs/agentstate/skills/tags/demo/v1")
    got = team.json(b, "skill", "pull")
    assert got["pulled"] == ["skill:demo@v1"], got
    registry_b = b / ".agentstate" / "skills"
    assert git(registry_b, "ls-tree", "--name-only", "demo/v1") == "demo"
    assert git(registry_b, "rev-parse", "demo/v1:demo") == folder
    assert SECRET.encode() not in _objects(registry_b)
    assert SECRET.encode() not in _backup_bytes(team, b, tmp_path)
    # Pulled again, and pushed back: the same release, no conflict.
    again = team.json(b, "skill", "pull")
    assert again["unchanged"] == ["skill:demo@v1"] and again["pulled"] == []
    assert team.json(b, "skill", "push")["pushed"] == []


def test_a_blob_over_the_limit_never_reaches_the_registry(team):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    team.json(a, "skill", "push")
    big = _blob(team, b"bulk-" + b"y" * 300_000)
    _forge_release(team, "bulky", [f"100644 blob {big}\tassets-big.txt"])
    config = b / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# max_file_bytes = 1048576",
                                                 "max_file_bytes = 2000"))
    got = team.json(b, "skill", "pull")
    assert "skill:bulky@v1" in [r["ref"] for r in got["refused"]]
    registry = b / ".agentstate" / "skills"
    listing = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check"],
                             cwd=registry, capture_output=True, check=True).stdout
    assert big.encode() not in listing


def test_a_version_no_integer_holds_is_refused_and_later_pulls_work(team):
    a, b = team.a, team.b
    team.publish(a, "demo", "Check that the demo target exists before working on it.")
    registry_a = a / ".agentstate" / "skills"
    commit = git(registry_a, "rev-parse", "demo/v1^{commit}")
    git(registry_a, "push", "-q", str(team.bare),
        f"{commit}:refs/agentstate/skills/tags/okname/v99999999999999999999")
    team.json(a, "skill", "push")
    for _ in range(2):
        got = team.run(b, "skill", "pull", "--json")
        assert got.exit_code == 0, got.stdout + got.stderr
        assert "Traceback" not in got.stdout + got.stderr
    data = json.loads(got.stdout)["data"]
    assert any("okname/v99999999999999999999" in r["ref"] for r in data["refused"])
    assert data["unchanged"] == ["skill:demo@v1"]
