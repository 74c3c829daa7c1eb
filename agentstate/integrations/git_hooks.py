"""git's `post-commit`, `post-checkout` and `post-merge` hooks: commits and branch switches on
the run log, and the import of teammates' shared facts (`agentstate sync --import-only`)
after a merge or pull and after a branch switch, when `.agentstate/shared/` exists.

`agentstate hooks install git` writes a small sh script for each hook into the folder git
runs hooks from (`core.hooksPath` when set, so a hook manager's folder is honoured). A hook
already there is renamed to `NAME.agentstate-prev` (bytes and mode untouched) and the script
runs it first, with the same arguments, and exits with its status: the previous hook keeps
working. Uninstalling deletes the script and renames the previous hook back, so the folder
is exactly as it was. The script never fails the git command: agentstate's part is `|| true`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput

if TYPE_CHECKING:
    from agentstate.store.db import Store

GIT_HOOKS = ("post-commit", "post-checkout", "post-merge")
MARKER = "# agentstate git hook"
PREV_SUFFIX = ".agentstate-prev"

SCRIPT = """#!/bin/sh
{marker} ({name}): records commits and branch switches on agentstate's current run and
# imports teammates' shared facts after a merge or a branch switch.
# Installed by `agentstate hooks install git`; `agentstate hooks uninstall git` removes it and
# puts back the previous hook, kept meanwhile as {name}{suffix} and still run first.
status=0
prev="$(dirname "$0")/{name}{suffix}"
if [ -x "$prev" ]; then
    "$prev" "$@"
    status=$?
fi
if command -v agentstate >/dev/null 2>&1; then
    agentstate hook git {name} "$@" </dev/null >/dev/null 2>&1 || true
fi
exit $status
"""


@dataclass
class GitHookState:
    name: str
    path: str
    installed: bool
    chained: bool  # a previous hook is kept and run first


def _git(root: Path, *args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                             check=False)
    except FileNotFoundError as exc:
        raise InvalidInput("git is not on PATH") from exc
    if out.returncode != 0:
        raise InvalidInput(f"{root} is not a git repository ({out.stderr.strip()})")
    return out.stdout.strip()


def hooks_dir(root: Path) -> Path:
    """Where git runs hooks from for this repository (core.hooksPath when set)."""
    where = Path(_git(root, "rev-parse", "--git-path", "hooks"))
    return where if where.is_absolute() else (root / where).resolve()


def is_ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def git_hooks_status(root: Path) -> list[GitHookState]:
    folder = hooks_dir(root)
    return [GitHookState(name, str(folder / name), is_ours(folder / name),
                         (folder / f"{name}{PREV_SUFFIX}").exists()) for name in GIT_HOOKS]


def install_git_hooks(root: Path) -> list[str]:
    """Install both hooks; returns what changed (nothing when already installed)."""
    folder = hooks_dir(root)
    changes = []
    for name in GIT_HOOKS:
        path, prev = folder / name, folder / f"{name}{PREV_SUFFIX}"
        if is_ours(path):
            continue
        if prev.exists() or prev.is_symlink():
            raise InvalidInput(f"{prev} already exists but {path} is not agentstate's hook; "
                               f"move one of them by hand (nothing was changed)")
    folder.mkdir(parents=True, exist_ok=True)
    for name in GIT_HOOKS:
        path, prev = folder / name, folder / f"{name}{PREV_SUFFIX}"
        if is_ours(path):
            continue
        if path.exists() or path.is_symlink():
            os.rename(path, prev)  # a rename keeps the bytes and the mode exactly
            changes.append(f"{path} → {prev.name} (still runs first)")
        temp = folder / f".{name}.agentstate.tmp"
        temp.write_text(SCRIPT.format(marker=MARKER, name=name, suffix=PREV_SUFFIX),
                        encoding="utf-8")
        temp.chmod(0o755)
        os.replace(temp, path)
        changes.append(f"{path} installed")
    return changes


def uninstall_git_hooks(root: Path) -> list[str]:
    """Remove our hooks and put the previous ones back exactly; returns what changed."""
    folder = hooks_dir(root)
    changes = []
    for name in GIT_HOOKS:
        path, prev = folder / name, folder / f"{name}{PREV_SUFFIX}"
        if not is_ours(path):
            continue
        if prev.exists() or prev.is_symlink():
            os.replace(prev, path)
            changes.append(f"{path} restored from {prev.name}")
        else:
            path.unlink()
            changes.append(f"{path} removed")
    return changes


# ---------------------------------------------------------------- recording


def git_event(root: Path, hook: str, args: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(text, meta) of the event for one git hook call, or None when there is nothing to say."""
    # A rebase replays commits and checks out detached heads: one event per step is noise.
    if "rebase" in os.environ.get("GIT_REFLOG_ACTION", ""):
        return None
    head = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    branch = None if head == "HEAD" else head
    if hook == "post-commit":
        sha, _, subject = _git(root, "log", "-1", "--format=%H%x00%s").partition("\0")
        text = f"commit {sha[:12]} on {branch or '(detached HEAD)'}: {subject}"
        return text, {"git": "commit", "sha": sha, "subject": subject, "branch": branch}
    if hook == "post-merge":
        return None  # nothing for the run log; the import follows (import_shared)
    if hook == "post-checkout":
        if len(args) < 3 or args[2] != "1":  # 0: a file checkout, not a branch switch
            return None
        previous, new = args[0], args[1]
        try:
            before = _git(root, "rev-parse", "--abbrev-ref", "@{-1}")
        except InvalidInput:
            before = None
        if before == branch and previous == new:
            return None
        text = (f"checkout: {before or previous[:12]} → {branch or '(detached HEAD)'} "
                f"at {new[:12]}")
        return text, {"git": "checkout", "from": previous, "to": new, "from_branch": before,
                      "branch": branch}
    raise InvalidInput(f"unknown git hook {hook!r}: expected {', '.join(GIT_HOOKS)}")


def record_git_hook(store: Store, hook: str, args: list[str]) -> str | None:
    """Log one git hook call on the current run; the event's ref (None: nothing logged)."""
    from agentstate.integrations.hooks import hook_principal
    from agentstate.runs.log import append_event, current_run

    found = git_event(store.work_tree, hook, args)
    run = current_run(store)
    if found is None or run is None:
        return None
    text, meta = found
    event = append_event(store, run.ref, "observation", text, source="tool:git", meta=meta,
                         claimed_by=hook_principal(store))
    return event.ref


def import_shared(store: Store, hook: str, args: list[str]) -> dict[str, Any] | None:
    """After a merge (pull) or a branch switch, import the shared folder as `agentstate sync
    --import-only` does, as the environment's principal. None when there is nothing to do.
    A failure is the hook runner's to log: the git command has already succeeded."""
    from agentstate.store.principals import resolve_principal
    from agentstate.sync import shared_path, sync

    if hook == "post-checkout" and (len(args) < 3 or args[2] != "1"):
        return None
    if hook not in ("post-merge", "post-checkout") or not shared_path(store).is_dir():
        return None
    result = sync(store, do_export=False, principal=resolve_principal(store))
    return {"imported": result.imported, "tombstoned": result.tombstoned,
            "contested": result.contested}
