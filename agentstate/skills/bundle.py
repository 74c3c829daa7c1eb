"""The skills registry as one file: a git bundle of every ref (branches and `NAME/vN` tags),
for `agentstate backup`/`restore`. Plain git commands: a bundle is git's own format, and
`git bundle verify`/`fetch` check it before anything is written to a work tree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from agentstate.errors import AgentStateError, InvalidInput

GIT_TIMEOUT = 300


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=GIT_TIMEOUT, check=False)


def bundle_registry(registry: Path, out: Path) -> int:
    """Write every ref of `registry` into the bundle `out`; returns the number of refs
    (0, and no file, when the registry is missing or has no commit yet)."""
    if not (registry / ".git").exists():
        return 0
    refs = _git(registry, "for-each-ref", "--format=%(refname)").stdout.split()
    if not refs:
        return 0
    done = _git(registry, "bundle", "create", str(out), "--all")
    if done.returncode != 0:
        raise AgentStateError(f"cannot bundle the skills registry: {_last(done.stderr)}")
    return len(refs)


def unbundle_registry(bundle: Path, registry: Path) -> int:
    """Make `registry` (a new folder) a repository holding the bundle's refs, with `main`
    checked out; returns the number of refs. A damaged bundle is InvalidInput."""
    registry.mkdir(parents=True, exist_ok=False)
    steps = (("init", "-q", "-b", "main"),
             ("config", "user.name", "agentstate"),
             ("config", "user.email", "agentstate@localhost"),
             ("bundle", "verify", "-q", str(bundle)),
             ("fetch", "-q", "--update-head-ok", str(bundle), "+refs/*:refs/*"))
    for step in steps:
        done = _git(registry, *step)
        if done.returncode != 0:
            if step[0] in ("bundle", "fetch"):
                raise InvalidInput(f"the backup's skills bundle is damaged: {_last(done.stderr)}")
            raise AgentStateError(f"git {step[0]} failed: {_last(done.stderr)}")
    if _git(registry, "rev-parse", "-q", "--verify", "refs/heads/main").returncode == 0:
        done = _git(registry, "checkout", "-q", "-f", "main")
        if done.returncode != 0:
            raise AgentStateError(f"git checkout failed: {_last(done.stderr)}")
    return len(_git(registry, "for-each-ref", "--format=%(refname)").stdout.split())


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "git failed"
