"""The work-tree drift of a run as plain data and as the lines a pack shows.

`drift_dict` asks runs/worktree.py how the work tree moved since the run's last recorded
version (a checkpoint, else the run's start); `drift_summary` is the one line every pack
keeps (essentials.py), `drift_details` the commits and files listed when a budget has room.
A drift recorded by an older agentstate (no `files`, no `still`) is read as it was written.
"""

from __future__ import annotations

from typing import Any

from agentstate.runs.checkpoint import recorded_version
from agentstate.runs.log import Run
from agentstate.store.db import Store

MAX_LISTED = 15  # commits or files listed in the drift details; the rest are counted


def minute(ts: str) -> str:
    """A stored timestamp to the minute: enough to order things, short in a pack."""
    return f"{ts[:16]}Z" if len(ts) >= 16 else ts


def drift_dict(store: Store, run: Run) -> dict[str, Any]:
    """How the work tree moved since the run's last recorded version, as plain data."""
    from agentstate.runs.worktree import drift

    recorded, label = recorded_version(store, run)
    if label.startswith("run start"):
        label = f"run start {minute(run.created)}"  # short: it is in every pack
    moved = drift(store.work_tree, recorded)
    return {
        "since": label,
        "known": moved.known,
        "any": moved.any,
        "recorded": {"branch": recorded.branch, "head": recorded.head,
                     "dirty_files": list(recorded.dirty_files)},
        "head_moved": moved.head_moved,
        "from_head": moved.from_head,
        "to_head": moved.to_head,
        "commits": moved.commits,
        "history_rewritten": moved.history_rewritten,
        "lost_commits": moved.lost_commits,
        "branch_changed": moved.branch_changed,
        "from_branch": moved.from_branch,
        "to_branch": moved.to_branch,
        "uncommitted": moved.uncommitted,
        "changed_files": moved.changed_files,
        "files": [_file(kind, path, moved.renamed_from) for kind, path in moved.files],
        "still": [_file(kind, path, moved.renamed_from) for kind, path in moved.still],
    }


def _file(kind: str, path: str, renamed_from: dict[str, str]) -> dict[str, str]:
    entry = {"kind": kind, "path": path}
    if path in renamed_from:
        entry["from"] = renamed_from[path]
    return entry


def _file_line(f: dict[str, Any]) -> str:
    return f"{f['kind']} {f['from']} → {f['path']}" if f.get("from") else \
        f"{f['kind']} {f['path']}"


def _file_counts(drift: dict[str, Any]) -> str:
    from agentstate.runs.worktree import FILE_KINDS

    # Drift from before `files` existed lists only paths.
    files = drift.get("files") or [{"kind": "modified", "path": p}
                                   for p in drift.get("changed_files") or []
                                   if "still" not in drift]
    counts = {k: sum(f["kind"] == k for f in files) for k in FILE_KINDS}
    text = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    still = len(drift.get("still") or [])
    if still:  # uncommitted at the recorded version already: not new
        text += f"{'; ' if text else ''}{still} still uncommitted as recorded"
    return text


def drift_summary(drift: dict[str, Any]) -> str:
    """One line that names the recorded version and everything that moved since."""
    since = drift.get("since", "the recorded version")
    recorded = drift.get("recorded") or {}
    where = (f"{recorded.get('branch') or '(no branch)'} @ "
             f"{(recorded.get('head') or '(no commit)')[:12]}")
    head = f"- since {since} ({where})"
    if not drift.get("known"):
        return f"{head}: unknown (not a git work tree)"
    if not drift.get("any"):
        return f"{head}: no drift (HEAD, branch and uncommitted changes as recorded)"
    changes = []
    if drift.get("branch_changed"):
        changes.append(f"branch changed: {drift.get('from_branch') or '(detached HEAD)'} → "
                       f"{drift.get('to_branch') or '(detached HEAD)'}")
    if drift.get("head_moved") and drift.get("history_rewritten"):
        lost = drift.get("lost_commits")
        gone = (f"{len(lost)} commit(s) no longer on it" if lost is not None
                else "the old commits are no longer in the repository")
        changes.append(f"history rewritten: HEAD {(drift.get('from_head') or '')[:12]} → "
                       f"{(drift.get('to_head') or '(no commit)')[:12]}, {gone}, "
                       f"{len(drift.get('commits') or [])} new commit(s)")
    elif drift.get("head_moved"):
        changes.append(f"HEAD moved to {(drift.get('to_head') or '(no commit)')[:12]}, "
                       f"{len(drift.get('commits') or [])} commit(s)")
    state = drift.get("uncommitted", "unchanged")
    if state != "unchanged":
        counts = _file_counts(drift)
        words = {"appeared": "uncommitted changes appeared", "changed": "uncommitted changes "
                 "changed", "cleaned": "uncommitted changes cleaned (committed or discarded)"}
        changes.append(words.get(state, state) + (f": {counts}" if counts else ""))
    return f"{head}: " + "; ".join(changes)


def _listing(lines: list[str], what: str) -> list[str]:
    shown = [f"  - {line}" for line in lines[:MAX_LISTED]]
    if len(lines) > MAX_LISTED:
        shown.append(f"  - … and {len(lines) - MAX_LISTED} more {what}")
    return shown


def drift_details(drift: dict[str, Any]) -> str:
    """The summary with the commits since the recorded version and each file by kind."""
    lines = [drift_summary(drift)]
    if drift.get("known") and drift.get("any"):
        lines += _listing([f"commit no longer on the branch {c}"
                           for c in drift.get("lost_commits") or []], "commits")
        lines += _listing([f"commit {c}" for c in drift.get("commits") or []], "commits")
        files = drift.get("files") or [{"kind": "modified", "path": p}
                                       for p in drift.get("changed_files") or []
                                       if "still" not in drift]
        lines += _listing([_file_line(f) for f in files], "files")
        still = drift.get("still") or []
        lines += _listing([f"still {_file_line(f)} (uncommitted as recorded)" for f in still],
                          "files")
        before = set(recorded_files(drift))
        gone = sorted(before - {f["path"] for f in files} - {f["path"] for f in still})
        if gone and drift.get("uncommitted", "unchanged") != "unchanged":
            lines += _listing([f"no longer uncommitted (committed or reverted) {p}"
                               for p in gone], "files")
    return "\n".join(lines)


def recorded_files(drift: dict[str, Any]) -> list[str]:
    return list((drift.get("recorded") or {}).get("dirty_files") or [])
