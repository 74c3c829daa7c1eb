"""The publish journal: a publish records its intent before it touches git.

A release goes: journal row (name, version, tree, the row to insert, HEAD before) →
private-index commit object (its id written to the journal) → branch + tags moved in one
`git update-ref` transaction → shared index synced → release rows inserted and the journal row
deleted in ONE database transaction. A process killed anywhere in between leaves a journal
row, and the next command that takes the registry lock (`registry_lock`) repairs it:

- git lock files (`.git/index.lock`, `HEAD.lock`, ref locks) are removed when the journal's
  process is gone (after a short grace period for a git child that outlived it);
- tags made but no rows: the publish passed every check before git was touched, so it is
  finished (rows inserted from the journal);
- anything less (no tag yet): rolled back (tags of its commit deleted, branch back to the
  recorded HEAD, index resynced). The draft stays in the work tree; publish it again.

`skill pull` (agentstate.skills.remote) uses the same journal for releases made elsewhere:
no commit is built and HEAD does not move; each release names its own commit, the tags are
created in one transaction, and recovery finishes (every tag there) or deletes the tags it
made (pull again).

Test hook: `AGENTSTATE_TEST_KILL_AT=journal|commit|tag|row` makes a publish SIGKILL itself
at that step (after the journal row, after the commit object, after the tags, inside the row
transaction). It is honoured only under pytest (PYTEST_CURRENT_TEST set, which subprocesses
of a test inherit) and exists for the crash tests; it is not a user setting.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agentstate.errors import CorruptStore
from agentstate.skills import registry
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

KILL_ENV = "AGENTSTATE_TEST_KILL_AT"
KILL_STEPS = ("journal", "commit", "tag", "row")
LOCK_GRACE_SECONDS = 2.0  # a git child of a killed publish may still be finishing its write


@dataclass
class Entry:
    id: str
    pid: int
    pid_start: str | None
    host: str
    started: str
    previous: str
    commit: str | None
    message: str
    # name, version, tree, tag, mode (publish|restore|pull), row; commit (pull only)
    releases: list[dict[str, Any]]

    @property
    def refs(self) -> list[str]:
        return [make_ref("skill", r["name"], r["version"]) for r in self.releases]

    @property
    def tags(self) -> list[str]:
        return [r["tag"] for r in self.releases]

    def commit_of(self, item: dict[str, Any]) -> str | None:
        """The commit a release's tag points at: the entry's one commit for a publish, the
        release's own for a pull (`skill pull` adopts commits made elsewhere)."""
        return item.get("commit") or self.commit


def kill_point(step: str) -> None:
    """SIGKILL this process at `step` when a crash test asks for it (see module docstring)."""
    if os.environ.get(KILL_ENV) == step and "PYTEST_CURRENT_TEST" in os.environ:
        os.kill(os.getpid(), signal.SIGKILL)


@contextmanager
def undone_on_failure(store: Store, entry: Entry) -> Iterator[None]:
    """Roll `entry` back when the block raises (anything, Ctrl-C included). If the rollback
    fails too, the journal row stays and the next command that takes the lock repairs."""
    try:
        yield
    except BaseException:
        try:
            roll_back(store, entry)
        except Exception:  # noqa: BLE001 - the journal stays; the next locked command repairs
            pass
        raise


def _start_time(pid: int) -> tuple[str | None, str | None]:
    """(start time, state) of a process from /proc (None where /proc is not there)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[19], fields[0]
    except (OSError, IndexError):
        return None, None


def process_alive(pid: int, pid_start: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    start, state = _start_time(pid)
    if state == "Z":
        return False  # killed, not yet reaped by its parent
    return not (pid_start and start and start != pid_start)  # a reused pid is another process


def begin(store: Store, previous: str, message: str, releases: list[dict[str, Any]]) -> Entry:
    """Record the intent of a publish (committed before git is touched)."""
    # Not the store's id source: seeded ids repeat across processes (tests), journal ids
    # must not.
    entry = Entry(id=f"{os.getpid()}-{os.urandom(6).hex()}",
                  pid=os.getpid(), pid_start=_start_time(os.getpid())[0],
                  host=socket.gethostname(), started=store.now(), previous=previous,
                  commit=None, message=message, releases=releases)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO skill_publish_journal (id, pid, pid_start, host, started, previous, "
            "commit_sha, message, releases) VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
            (entry.id, entry.pid, entry.pid_start, entry.host, entry.started, previous,
             message, json.dumps(releases, sort_keys=True)))
    return entry


def set_commit(store: Store, entry: Entry, commit: str) -> None:
    with store.transaction() as conn:
        conn.execute("UPDATE skill_publish_journal SET commit_sha = ? WHERE id = ?",
                     (commit, entry.id))
    entry.commit = commit


def entries(conn: sqlite3.Connection) -> list[Entry]:
    """Every journal row (interrupted publishes, or the one running now). Works on a
    read-only connection and on a store whose migration has not run yet (no rows)."""
    try:
        rows = conn.execute(
            "SELECT id, pid, pid_start, host, started, previous, commit_sha, message, releases "
            "FROM skill_publish_journal ORDER BY started, id").fetchall()
    except sqlite3.OperationalError:
        return []
    return [Entry(id=r[0], pid=r[1], pid_start=r[2], host=r[3], started=r[4], previous=r[5],
                  commit=r[6], message=r[7], releases=json.loads(r[8])) for r in rows]


def complete(store: Store, entry: Entry) -> None:
    """The database half: release rows in, journal row out, in one transaction."""
    now = store.now()
    with store.transaction() as conn:
        for item in entry.releases:
            name, version = item["name"], item["version"]
            if item.get("mode") == "restore":
                conn.execute("UPDATE skill_versions SET commit_sha = ?, tag = ? WHERE name = ? "
                             "AND version = ?", (entry.commit, item["tag"], name, version))
                continue
            conn.execute("DELETE FROM skill_versions WHERE name = ? AND version = ? AND "
                         "status = 'candidate'", (name, version))
            # A pulled release may arrive revoked (its row then carries status and revoked_*).
            row = {**item["row"], "name": name, "version": version,
                   "status": item["row"].get("status", "published"),
                   "commit_sha": entry.commit_of(item), "tree": item["tree"], "tag": item["tag"],
                   "created": item["row"].get("created") or now,
                   "published": item["row"].get("published") or now}
            store.insert("skill_versions", row, or_ignore=True)
        kill_point("row")
        conn.execute("DELETE FROM skill_publish_journal WHERE id = ?", (entry.id,))


def forget(store: Store, entry: Entry) -> None:
    with store.transaction() as conn:
        conn.execute("DELETE FROM skill_publish_journal WHERE id = ?", (entry.id,))


def roll_back(store: Store, entry: Entry) -> None:
    """Undo whatever git side a publish reached, then drop its journal row."""
    path = store.skills_path
    if entry.commit and (path / ".git").exists():
        registry.rewind(path, entry.commit, entry.previous, entry.tags)
    elif (path / ".git").exists():  # a pull: only its own tags, each at its own commit
        from agentstate.skills.remote_git import delete_refs

        delete_refs(path, {f"refs/tags/{r['tag']}": r["commit"] for r in entry.releases
                           if r.get("commit")})
    forget(store, entry)


def _clear_locks(store: Store, entry: Entry, grace: float) -> list[str]:
    """Remove the git locks a dead publish left (waiting `grace` seconds for a git child that
    outlived it to finish first)."""
    path = store.skills_path
    deadline = time.monotonic() + grace
    while registry.git_locks(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    removed = []
    for lock in registry.git_locks(path):
        lock.unlink(missing_ok=True)
        removed.append(str(lock.relative_to(path)))
    for index, pid in registry.private_indexes(path):
        if pid == entry.pid:
            index.unlink(missing_ok=True)
    return removed


def recover(store: Store, *, grace: float | None = None) -> list[str]:
    """Finish or roll back every interrupted publish; return what was done (one line each).

    Call with the registry lock held: then no publish of ours is running, so a journal row is
    one whose process died (or failed to roll back). Locks are removed only for a process
    that is gone: a live one's git may still be writing.
    """
    actions = []
    for entry in entries(store.conn):
        if entry.pid == os.getpid() and entry.host == socket.gethostname():
            live = False  # our own leftover (a rollback that failed earlier in this process)
        else:
            live = entry.host != socket.gethostname() or process_alive(entry.pid,
                                                                       entry.pid_start)
        actions += _recover_entry(store, entry, live,
                                  LOCK_GRACE_SECONDS if grace is None else grace)
    return actions


def _recover_entry(store: Store, entry: Entry, live: bool, grace: float) -> list[str]:
    path = store.skills_path
    refs = ", ".join(entry.refs)
    if not (path / ".git").exists():
        forget(store, entry)
        return [f"dropped the journal of an unfinished publish of {refs} (the registry is gone)"]
    actions = []
    if not live:
        removed = _clear_locks(store, entry, grace)
        if removed:
            actions.append(f"removed stale git lock(s) {', '.join(removed)} left by process "
                           f"{entry.pid} (gone)")
    locks = registry.git_locks(path)
    if locks:
        names = ", ".join(str(p.relative_to(path)) for p in locks)
        raise CorruptStore(
            f"an unfinished publish of {refs} (process {entry.pid} on {entry.host}, still "
            f"running) holds git's lock {names} in {path}; stop that process, then run "
            "`agentstate doctor --repair`")
    tags = registry.tag_commits(path)
    if all(entry.commit_of(r) and tags.get(r["tag"]) == entry.commit_of(r)
           for r in entry.releases):
        if entry.commit and registry.head_commit(path) == entry.commit:
            registry.sync_index(path)
        complete(store, entry)
        actions.append(f"finished the publish of {refs} (it was interrupted after tagging: "
                       "rows inserted)")
    else:
        roll_back(store, entry)
        actions.append(f"rolled back the unfinished publish of {refs} (interrupted before "
                       "tagging; its draft is still there to publish again)")
    return actions
