"""Retention of the run log: what `agentstate gc` removes from `events`.

Only events of finished runs (done or abandoned) older than the cutoff are candidates. A
candidate that something still points at is *collected* instead of deleted: its body (text
and meta) is removed, the row keeps its id, run, kind, source and time, `collected_at` says
when, and `body_hash` holds a keyed hash of the body (agentstate.store.keys), so a ref to it
still resolves and a kept copy of the body can be checked against it by the store's owner.
Pointers that keep a row: the refs the caller passes (memory evidence and sources, stored
packs), rows of other tables that name an event (tool calls, skill loads, checkpoints), the
`resolves`/`supersedes` links of events that stay. Deleting and collecting fire the search
triggers, so the event indexes drop the removed text in the same transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from json.encoder import encode_basestring
from pathlib import Path

from agentstate.store.db import Store
from agentstate.store.rewrite import CopyPlan

# Tables (other than events) with a column that names an event: a foreign key to events(id)
# (tool calls, skill loads), or a checkpoint's own id, which is its `checkpoint` event's id
# (`run show` and `resume` print it as the checkpoint's ref, and `trace` must resolve it).
_EVENT_FOREIGN_KEYS = (("tool_calls", "event"), ("skill_loads", "event"), ("checkpoints", "id"))


@dataclass
class RetentionCounts:
    candidates: int = 0        # events of finished runs older than the cutoff
    removed: int = 0           # deleted rows
    collected: int = 0         # rows kept with their body removed (newly)
    already_collected: int = 0  # kept rows whose body was removed by an earlier gc
    body_bytes: int = 0        # bytes of text and meta removed (or that would be)


# The marks mark_retention leaves on its connection: the rowids (column `rid`) of the events a
# removal deletes, and of those whose body it collects. Rowids, not ids: the marks are
# filled and probed by the ~90,000 (an integer b-tree filled in rowid order), and a rewrite
# keeps every row's rowid (store/rewrite.py), so they name the same rows in the new file.
REMOVED = "temp.gc_removed"
COLLECTED = "temp.gc_collected"


def apply_retention(store: Store, cutoff: str, keep_refs: Iterable[str], *,
                    dry_run: bool = False) -> RetentionCounts:
    """Remove (or, with `dry_run`, count) the events of finished runs older than `cutoff`;
    the ones named in `keep_refs` (`evt:…`) or linked from a kept row are collected, row by
    row through the triggers. (`agentstate gc` calls `mark_retention` itself and chooses
    between `remove_in_place` and a rewrite of the store by the share removed.)"""
    conn = store.conn
    with store.transaction():
        counts = mark_retention(conn, cutoff, keep_refs)
        if not dry_run:
            remove_in_place(conn, store.root, store.now())
        drop_marks(conn)
    return counts


def mark_retention(conn: sqlite3.Connection, cutoff: str,
                   keep_refs: Iterable[str]) -> RetentionCounts:
    """Mark the candidates (temp tables on `conn`, inside the caller's transaction) and
    count what a removal would do. `REMOVED` then names the ids to delete and `COLLECTED`
    those whose body goes; `drop_marks` clears them."""
    counts = RetentionCounts()
    _mark(conn, cutoff, keep_refs)
    counts.candidates = _one(conn, "SELECT count(*) FROM temp.gc_old")
    counts.removed = _one(conn, f"SELECT count(*) FROM {REMOVED}")
    counts.collected = _one(conn, f"SELECT count(*) FROM {COLLECTED}")
    counts.already_collected = _one(
        conn, "SELECT count(*) FROM temp.gc_kept k CROSS JOIN events e "
              "WHERE e.rowid = k.rid AND e.collected_at IS NOT NULL")
    counts.body_bytes = _one(conn, "SELECT coalesce(sum(bytes), 0) FROM temp.gc_old")
    return counts


def stay_count(conn: sqlite3.Connection, removed: int) -> int:
    """How many events a removal of `removed` rows leaves."""
    return _one(conn, "SELECT count(*) FROM events") - removed


def drop_marks(conn: sqlite3.Connection) -> None:
    for table in ("gc_removed", "gc_collected", "gc_old", "gc_keep", "gc_kept"):
        conn.execute(f"DROP TABLE IF EXISTS temp.{table}")


def remove_in_place(conn: sqlite3.Connection, root: Path, now: str) -> None:
    """Collect the kept candidates' bodies, then delete the others (set-based: one
    statement each; the triggers keep the indexes in step)."""
    _collect(conn, "main", root, now)
    conn.execute(f"DELETE FROM events WHERE rowid IN (SELECT rid FROM {REMOVED})")


def rewrite_plan(root: Path, now: str) -> CopyPlan:
    """For a rewrite of the store (store/rewrite.py): the events that stay, and their
    collection in the new file (before its triggers exist: the owners of the tables those
    triggers feed say in their own plans what the new file keeps)."""
    return CopyPlan(keep={"events": f"rowid NOT IN (SELECT rid FROM {REMOVED})"},
                    steps=[lambda conn, schema: _collect(conn, schema, root, now)])


def _collect(conn: sqlite3.Connection, schema: str, root: Path, now: str) -> None:
    from agentstate.store.keys import keyed_hasher

    hasher = keyed_hasher(root)
    conn.create_function("gc_body_hash", 2, lambda text, meta: hasher(body_json(text, meta)))
    conn.execute(f"UPDATE {schema}.events SET body_hash = gc_body_hash(text, meta), "
                 f"text = '', meta = '{{}}', collected_at = ? WHERE rowid IN "
                 f"(SELECT rid FROM {COLLECTED})", (now,))


def body_json(text: str, meta: str) -> str:
    """What a collected body's hash is taken of: `json.dumps([text, meta],
    ensure_ascii=False)`, spelled out with the function that call quotes each string with
    (a gc hashes thousands of bodies; building the encoder per call was most of it)."""
    return f"[{encode_basestring(text)}, {encode_basestring(meta)}]"


def _mark(conn: sqlite3.Connection, cutoff: str, keep_refs: Iterable[str]) -> None:
    """temp.gc_old: the candidates' rowids; temp.gc_keep: ids that must keep their row
    (candidates or not); temp.gc_kept: the candidates among them."""
    # With each candidate, the bytes of text and meta a removal takes away (none for a body
    # an earlier gc collected): read in the one scan of the run log that finds them.
    conn.execute("CREATE TEMP TABLE gc_old (rid INTEGER PRIMARY KEY, bytes INTEGER NOT NULL)")
    conn.execute("CREATE TEMP TABLE gc_keep (id TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO temp.gc_old SELECT e.rowid, CASE WHEN e.collected_at IS NULL "
                 "THEN length(CAST(e.text AS BLOB)) + length(CAST(e.meta AS BLOB)) ELSE 0 END "
                 "FROM events e JOIN runs r ON r.row = e.run WHERE r.status != 'active' AND "
                 "e.ts < ?", (cutoff,))
    conn.executemany("INSERT OR IGNORE INTO temp.gc_keep VALUES (?)",
                     ((ref[4:],) for ref in keep_refs if ref.startswith("evt:")))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    # `+rowid IN (marks)` below: an event's rowid is its INTEGER PRIMARY KEY `row` (m063),
    # which the index on `id` carries as its last column, so without the `+` SQLite takes
    # the marks as a second key of that index and probes (id, rowid) once per mark for
    # every row it drives from — ids x ~90,000 probes (a dry run at 100,000 events took
    # 69 s instead of well under one). With it, one probe by id, then the marks' look-up.
    for table, column in _EVENT_FOREIGN_KEYS:
        if table in tables:
            # CROSS JOIN: from the table's rows (SQLite would walk the ~90,000 marks).
            conn.execute(f"INSERT OR IGNORE INTO temp.gc_keep SELECT t.{column} FROM {table} t "
                         f"CROSS JOIN events e WHERE e.id = t.{column} AND +e.rowid IN "
                         "(SELECT rid FROM temp.gc_old)")
    # An event that a staying event resolves or supersedes stays too; staying spreads along
    # those links until nothing changes (chains are short: usually one round).
    while True:
        added = 0
        for link in ("resolves", "supersedes"):
            added += conn.execute(
                f"INSERT OR IGNORE INTO temp.gc_keep SELECT e.{link} FROM events e "
                f"CROSS JOIN events t WHERE e.{link} IS NOT NULL AND t.id = e.{link} AND "
                "+t.rowid IN (SELECT rid FROM temp.gc_old) AND (e.rowid NOT IN (SELECT rid "
                "FROM temp.gc_old) OR e.id IN (SELECT id FROM temp.gc_keep))"
            ).rowcount
        if not added:
            break
    # Driven from the few kept ids, not a scan of the run log nor of the ~90,000 marks:
    # CROSS JOIN holds SQLite to that order (issue 24).
    conn.execute("CREATE TEMP TABLE gc_kept (rid INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO temp.gc_kept SELECT e.rowid FROM temp.gc_keep k CROSS JOIN "
                 "events e WHERE e.id = k.id AND +e.rowid IN (SELECT rid FROM temp.gc_old)")
    conn.execute("CREATE TEMP TABLE gc_removed (rid INTEGER PRIMARY KEY)")
    conn.execute(f"INSERT INTO {REMOVED} SELECT rid FROM temp.gc_old WHERE rid NOT IN "
                 "(SELECT rid FROM temp.gc_kept)")
    conn.execute("CREATE TEMP TABLE gc_collected (rid INTEGER PRIMARY KEY)")
    conn.execute(f"INSERT INTO {COLLECTED} SELECT k.rid FROM temp.gc_kept k CROSS JOIN "
                 "events e WHERE e.rowid = k.rid AND e.collected_at IS NULL")


def _one(conn: sqlite3.Connection, sql: str) -> int:
    return int(conn.execute(sql).fetchone()[0])
