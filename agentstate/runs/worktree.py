"""The version of the work tree a run saw: branch, HEAD, and a fingerprint of uncommitted changes.

Uses the git command line (not GitPython) so the run log stays fast to start. Outside a git
work tree every field is None and drift is reported as unknown.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _git(cwd: Path, *args: str) -> str | None:
    # Imported here: the run log imports this module for WorkTree, and a hook that records a
    # tool call into an existing run runs no git at all.
    import subprocess

    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, check=False,
        )
    except (FileNotFoundError, NotADirectoryError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "surrogateescape")


def is_git_work_tree(path: Path) -> bool:
    return (_git(path, "rev-parse", "--is-inside-work-tree") or "").strip() == "true"


@dataclass(frozen=True)
class WorkTree:
    """A recorded version of the work tree (all None, no files, outside git)."""

    branch: str | None = None
    head: str | None = None
    dirty_fingerprint: str | None = None
    dirty_files: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The JSON form stored in checkpoint pointers and shown by `resume`."""
        return {"branch": self.branch, "head": self.head,
                "dirty_fingerprint": self.dirty_fingerprint,
                "dirty_files": list(self.dirty_files)}


def _snapshot(path: Path) -> dict[str, Any] | None:
    """The snapshot from ONE `git status --porcelain=v2 --branch` call; None outside git.

    One subprocess instead of four keeps `resume` fast: branch, HEAD and the changed files
    all come from the same status output.
    """
    status = _git(path, "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all")
    if status is None:
        return None
    branch = head = None
    files: list[str] = []
    kinds: list[tuple[str, str]] = []  # (kind, path); a path can be both deleted and untracked
    origins: dict[str, str] = {}  # a renamed path → the path it had before
    digest = hashlib.sha256()
    entries = status.split("\0")
    renamed_to: str | None = None
    for entry in entries:
        if renamed_to is not None:  # the original path of a rename or copy
            origins[renamed_to] = entry
            renamed_to = None
            continue
        if not entry:
            continue
        if entry.startswith("# branch.oid "):
            oid = entry[len("# branch.oid "):]
            head = None if oid == "(initial)" else oid
            continue
        if entry.startswith("# branch.head "):
            name = entry[len("# branch.head "):]
            branch = None if name == "(detached)" else name
            continue
        if entry.startswith("#") or entry.startswith("! "):
            continue
        if entry.startswith("1 "):
            name = entry.split(" ", 8)[8]
            kind = _change_kind(entry[2:4])
        elif entry.startswith("2 "):
            name = entry.split(" ", 9)[9]
            renamed_to = name
            kind = "renamed"
        elif entry.startswith("u "):
            name = entry.split(" ", 10)[10]
            kind = "conflicted"
        elif entry.startswith("? "):
            name = entry[2:]
            kind = "untracked"
        else:
            continue
        if name.startswith(".agentstate/"):
            continue
        files.append(name)
        kinds.append((kind, name))
        # The status entry carries modes and index hashes; the file content covers edits
        # to an already-dirty file.
        digest.update(entry.encode("utf-8", "surrogateescape") + b"\0")
        target = path / name
        if target.is_file():
            digest.update(hashlib.sha256(target.read_bytes()).digest())
    fingerprint = digest.hexdigest()[:16] if files else None
    return {"branch": branch, "head": head, "dirty_fingerprint": fingerprint,
            "dirty_files": sorted(files), "file_kinds": sorted(kinds, key=lambda k: k[1]),
            "origins": origins}


# How drift names an uncommitted change, in the order a summary counts them.
FILE_KINDS = ("modified", "added", "deleted", "renamed", "conflicted", "untracked")


def _change_kind(xy: str) -> str:
    """An ordinary status entry's two-letter XY code (index, work tree) as one word: a staged
    new file is `added`, a removal on either side `deleted`, anything else `modified`."""
    if "D" in xy:
        return "deleted"
    if xy[0] == "A":
        return "added"
    return "modified"


def snapshot(path: Path) -> WorkTree:
    """Branch, HEAD, dirty fingerprint and dirty files of the work tree at `path`.

    The fingerprint hashes the status entries and the current content of every changed or
    untracked file, so editing an already-dirty file again changes it. Outside a git work
    tree every field is None.
    """
    found = _snapshot(path)
    if found is None:
        return WorkTree()
    # The file kinds are for drift; a recorded version keeps the paths.
    return WorkTree(found["branch"], found["head"], found["dirty_fingerprint"],
                    tuple(found["dirty_files"]))


@dataclass
class Drift:
    """How the work tree moved since a recorded version."""

    known: bool
    head_moved: bool = False
    from_head: str | None = None
    to_head: str | None = None
    commits: list[str] = field(default_factory=list)  # "abc1234 subject", oldest first
    history_rewritten: bool = False
    # After a rewrite: the commits of the recorded HEAD that the new HEAD no longer holds
    # ("abc1234 subject", oldest first); None when git no longer has the old HEAD to tell.
    lost_commits: list[str] | None = None
    branch_changed: bool = False
    from_branch: str | None = None
    to_branch: str | None = None
    uncommitted: str = "unchanged"  # unchanged | appeared | changed | cleaned
    changed_files: list[str] = field(default_factory=list)
    # The uncommitted files now that were not uncommitted in the recorded version, each with
    # its kind (one of FILE_KINDS), sorted by path.
    files: list[tuple[str, str]] = field(default_factory=list)
    # Uncommitted now and already in the recorded version: not new, though maybe edited since.
    still: list[tuple[str, str]] = field(default_factory=list)
    # A renamed path → the path it had before (`renamed old → new`).
    renamed_from: dict[str, str] = field(default_factory=dict)

    @property
    def any(self) -> bool:
        return self.head_moved or self.branch_changed or self.uncommitted != "unchanged"


def drift(path: Path, recorded: WorkTree) -> Drift:
    """Compare the current work tree with a recorded snapshot."""
    now = _snapshot(path)
    if now is None:
        return Drift(known=False)
    result = Drift(
        known=True, from_head=recorded.head, to_head=now["head"],
        from_branch=recorded.branch, to_branch=now["branch"],
    )
    result.branch_changed = recorded.branch != now["branch"]
    if recorded.head != now["head"]:
        result.head_moved = True
        old, new = recorded.head, now["head"]
        if old and new:
            import subprocess

            is_ancestor = subprocess.run(
                ["git", "merge-base", "--is-ancestor", old, new], cwd=path,
                capture_output=True, check=False,
            ).returncode == 0
            result.history_rewritten = not is_ancestor
            if is_ancestor:
                result.commits = _log(path, f"{old}..{new}")
            elif _git(path, "cat-file", "-e", f"{old}^{{commit}}") is not None:
                # A rewrite (amend, rebase, reset): what is new on the branch and what left
                # it, both counted from where the two histories meet, never from the root.
                result.commits = _log(path, new, "--not", old)
                result.lost_commits = _log(path, old, "--not", new)
            else:
                # The old HEAD is gone from the repository (garbage-collected): only the
                # newest commit can be named truthfully.
                result.commits = _log(path, "-n", "1", new)
        elif new:
            result.commits = _log(path, new)
    old_fp, new_fp = recorded.dirty_fingerprint, now["dirty_fingerprint"]
    if old_fp != new_fp:
        if old_fp is None:
            result.uncommitted = "appeared"
        elif new_fp is None:
            result.uncommitted = "cleaned"
        else:
            result.uncommitted = "changed"
        result.changed_files = now["dirty_files"]
        before = set(recorded.dirty_files)
        result.files = [(k, p) for k, p in now["file_kinds"] if p not in before]
        result.still = [(k, p) for k, p in now["file_kinds"] if p in before]
        result.renamed_from = {p: o for p, o in now["origins"].items()
                               if p in result.changed_files}
    return result


# At most this many commits are named in each direction (the rest are not read at all).
MAX_COMMITS = 50


def _log(path: Path, *revs: str) -> list[str]:
    """`abc1234 subject` per commit, oldest first, the newest MAX_COMMITS of them."""
    out = _git(path, "log", "--format=%h %s", "-n", str(MAX_COMMITS), *revs) or ""
    return [line for line in reversed(out.splitlines()) if line]
