"""The shipped `.pre-commit-hooks.yaml` hook, run by the real pre-commit package.

pre-commit would install `language: python` hooks from the network; here the same hook
definition (id, files, pass_filenames...) is used as a `repo: local` hook whose entry is this
environment's `agentstate`, which is what an installed hook runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from agentstate.skills.authoring import write_scaffold
from tests.conftest import ROOT


def sh(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=120)


def test_hook_runs_as_pre_commit_runs_it(repo, tmp_path):
    [hook] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "agentstate-skill-validate"
    agentstate = Path(sys.executable).parent / "agentstate"
    local = dict(hook, language="system", entry=f"{agentstate} skill validate")
    local.pop("minimum_pre_commit_version", None)
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    write_scaffold(repo / "skills" / "good-skill", "good-skill", "A valid skill.")
    write_scaffold(repo / "skills" / "bad-skill", "bad-skill", "An invalid skill.")
    bad_md = repo / "skills" / "bad-skill" / "SKILL.md"
    bad_md.write_text(bad_md.read_text().replace("name: bad-skill", "name: Bad_Skill"))
    (repo / "scripts").mkdir()
    (repo / "scripts" / "build.sh").write_text("echo not a skill\n")  # matched, not a skill
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    sh(repo, "git", "add", "-A")

    run = sh(repo, sys.executable, "-m", "pre_commit", "run", "--all-files", env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "skills/bad-skill/SKILL.md:2: error:" in run.stdout
    assert "[name-chars]" in run.stdout and "[name-mismatch]" in run.stdout
    assert "good-skill" not in run.stdout.replace("ok  skills/good-skill", "")

    # Installed as a git hook, it blocks the commit; fixed, the commit goes through.
    assert sh(repo, sys.executable, "-m", "pre_commit", "install", env=env).returncode == 0
    blocked = sh(repo, "git", "commit", "-m", "add skills", env=env)
    assert blocked.returncode != 0 and "bad-skill/SKILL.md:2" in blocked.stdout + blocked.stderr
    bad_md.write_text(bad_md.read_text().replace("name: Bad_Skill", "name: bad-skill"))
    sh(repo, "git", "add", "-A")
    committed = sh(repo, "git", "commit", "-m", "add skills", env=env)
    assert committed.returncode == 0, committed.stdout + committed.stderr
    assert "validate agent skills" in committed.stdout + committed.stderr


def test_manifest_is_valid_for_pre_commit():
    done = sh(ROOT, sys.executable, "-m", "pre_commit", "validate-manifest",
              ".pre-commit-hooks.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
