"""What an interrupted or damaged registry looks like, and how `doctor --repair` mends it.

`inspect_publishing` (read-only, for `doctor`) and `repair_registry` (with the lock held)
cover the states a killed publish can leave, with or without a journal row (older agentstate
versions kept none):
- an interrupted publish in the journal → finished or rolled back (skills.journal.recover);
- a git lock file with no running publish behind it → removed once it is older than
  STALE_LOCK_SECONDS (a user's git may hold one for a moment);
- a `<name>/v<N>` tag with no release row and no journal → deleted: nothing records that its
  content passed the checks (the content is still the draft; publish it again);
- commits at the branch tip that no tag reaches (an older agentstate killed between commit and
  tag) → the branch is reset to the newest tagged commit; the work tree keeps the drafts;
- a release row whose tag is missing → the tag is recreated when the recorded commit still
  holds the recorded tree; when the content is gone (a deleted registry), the shipped skills
  are restored by `init`, and any other such version is marked revoked with LOST_REASON
  (it can never be loaded again; its row stays as history).
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.skills import journal, registry
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

STALE_LOCK_SECONDS = 60.0
LOST_REASON = "release content lost: its commit is no longer in the skills registry"
_RELEASE_TAG = re.compile(r"[a-z0-9-]+/v[0-9]+")


@dataclass
class PublishState:
    """What `doctor` reports about publishing (each list empty when healthy)."""

    interrupted: list[str] = field(default_factory=list)
    locks: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self.interrupted + self.locks + self.orphans


def _lock_ages(path: Path) -> list[tuple[Path, float]]:
    """Git lock files with their age in seconds."""
    now, found = time.time(), []
    for lock in registry.git_locks(path):
        try:
            found.append((lock, now - lock.stat().st_mtime))
        except OSError:
            continue  # gone meanwhile
    return found


def inspect_publishing(path: Path, conn: sqlite3.Connection | None) -> PublishState:
    """Interrupted publishes, git lock files and untagged commits, changing nothing."""
    state = PublishState()
    for entry in journal.entries(conn) if conn is not None else []:
        alive = journal.process_alive(entry.pid, entry.pid_start)
        state.interrupted.append(
            f"interrupted publish of {', '.join(entry.refs)} (process {entry.pid} "
            f"{'still running' if alive else 'gone'}, "
            f"{'commit ' + entry.commit[:12] if entry.commit else 'no commit yet'})")
    for lock, age in _lock_ages(path):
        state.locks.append(f"git lock {lock.relative_to(path)} ({age:.0f}s old) blocks every "
                           "publish")
    if (path / ".git").exists():
        orphans, _ = registry.untagged_head(path)
        if orphans:
            state.orphans.append(f"{len(orphans)} commit(s) at the registry's HEAD "
                                 f"({orphans[0][:12]}) with no tag and no release row")
    return state


def repair_registry(store: Store, *, stale_after: float = STALE_LOCK_SECONDS) -> list[str]:
    """Mend what `inspect_publishing` and `check_registry` report. Call with the registry
    lock held (which has already run the journal's recovery). Returns what it did."""
    path = store.skills_path
    if not (path / ".git").exists():
        return []
    actions = []
    for lock, age in _lock_ages(path):
        if age >= stale_after:
            lock.unlink(missing_ok=True)
            actions.append(f"removed stale git lock {lock.relative_to(path)} ({age:.0f}s old, "
                           "no publish running)")
        else:
            actions.append(f"left git lock {lock.relative_to(path)}: only {age:.0f}s old (a git "
                           "process may be using it); run the repair again later")
    for index, pid in registry.private_indexes(path):
        if not journal.process_alive(pid, None):
            index.unlink(missing_ok=True)
    rows = {(r["name"], r["version"]): r for r in store.rows(
        "SELECT name, version, status, commit_sha, tree FROM skill_versions "
        "WHERE status != 'candidate'")}
    tags = registry.tag_commits(path)
    for tag in sorted(tags):
        if not _RELEASE_TAG.fullmatch(tag):
            continue
        name, version = tag.rsplit("/v", 1)
        if (name, int(version)) not in rows:
            registry.delete_tag(path, tag)
            actions.append(f"deleted tag {tag} (no release row; nothing records that it passed "
                           "the checks — its draft can be published again)")
    orphans, target = registry.untagged_head(path)
    if orphans:
        registry.reset_branch(path, target, orphans[0])
        actions.append(f"reset the registry branch from {orphans[0][:12]} to {target[:12]} "
                       f"({len(orphans)} untagged commit(s) of an interrupted publish; the "
                       "drafts are untouched)")
    tags = registry.tag_commits(path)
    for (name, version), row in sorted(rows.items()):
        tag = registry.tag_name(name, version)
        if tag in tags or not row["commit_sha"]:
            continue
        if (registry.commit_exists(path, row["commit_sha"])
                and registry.folder_tree(path, row["commit_sha"], name) == row["tree"]):
            registry.create_tag(path, tag, row["commit_sha"])
            actions.append(f"recreated tag {tag} at the recorded commit "
                           f"{row['commit_sha'][:12]}")
    return actions


def mark_lost(store: Store) -> list[str]:
    """Revoke released versions whose content is gone from the registry (no tag, no commit):
    they can never load again. Run after `init` restored what it can."""
    path = store.skills_path
    if not (path / ".git").exists():
        return []
    tags = registry.tag_commits(path)
    lost = []
    for row in store.rows("SELECT name, version, commit_sha, status FROM skill_versions "
                              "WHERE status != 'candidate'"):
        if registry.tag_name(row["name"], row["version"]) in tags:
            continue
        if row["commit_sha"] and registry.commit_exists(path, row["commit_sha"]):
            continue
        if row["status"] == "revoked":
            continue  # already out of every read path; check_registry reports it if it matters
        lost.append((row["name"], row["version"]))
    now = store.now()
    with store.transaction() as conn:
        for name, version in lost:
            conn.execute("UPDATE skill_versions SET status = 'revoked', revoked = ?, "
                         "revoked_by = 'agentstate doctor --repair', revoke_reason = ? "
                         "WHERE name = ? AND version = ?", (now, LOST_REASON, name, version))
    return [f"revoked {make_ref('skill', n, v)}: {LOST_REASON}" for n, v in lost]
