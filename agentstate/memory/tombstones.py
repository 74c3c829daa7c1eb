"""Purge tombstones, and re-applying them to a store restored from a backup.

A purge leaves an audit row in `memory_history` (op `purge`: the chain id, the version, a
keyed hash of the text under the store's `history.key`, the time and the reason). Those
rows are the tombstones: `agentstate restore` reads them from the live store before it is
replaced and hands them to `reapply_purges` on the restored copy, which

1. copies the tombstone rows the copy lacks (so its own later backups carry them too);
2. takes, for every row the copy shares with the live store (same primary key) in every
   other table, a text value the live store holds scrubbed (it contains the purge mark)
   instead of the copy's value: this covers text whose memory is not in the backup at all
   (an event a memory was distilled from after the backup was taken), and collects every
   event the live store holds collected by gc (such an event has no purge mark left);
3. purges, with the same matching as `forget --purge`, every version of the copy that a
   tombstone names (the keyed hash travels with the tombstone, for the audit);
4. merges every full-text index and VACUUMs with secure_delete on, so the raw bytes of the
   restored `state.db` no longer hold the text either.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.memory.forget import (
    PURGE_SUBSTRING_MIN,
    PURGED_MARK,
    ForgetResult,
    _compact,
    _files,
    _purge,
    _register,
    _text_columns,
)
from agentstate.memory.model import MemoryVersion, version_from_row, with_evidence_refs
from agentstate.store.residue import Matcher


@dataclass(frozen=True)
class Tombstone:
    memory: str          # chain id
    version: int | None
    text_hash: str | None
    time: str
    actor: str
    reason: str
    detail: str


@dataclass
class ReapplyResult:
    tombstones: int = 0                 # read from the live store
    copied: int = 0                     # tombstone rows the restored store lacked
    purged: list[str] = field(default_factory=list)   # versions purged again
    carried: dict[str, int] = field(default_factory=dict)  # table.column → live values taken
    still_in: list[str] = field(default_factory=list)  # as forget --purge reports it
    rewrite_command: str | None = None


def read_tombstones(conn: sqlite3.Connection) -> list[Tombstone]:
    """The purge rows of a store's history (an empty list for a store without the table)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_history'").fetchone():
        return []
    return [Tombstone(*row) for row in conn.execute(
        "SELECT memory, version, text_hash, time, actor, reason, detail FROM memory_history "
        "WHERE op = 'purge' ORDER BY hid")]


def reapply_purges(store: Any, tombstones: list[Tombstone], live_db: Path | None) -> ReapplyResult:
    """Make the (restored, not yet in use) `store` hold no text the tombstones erased."""
    result = ReapplyResult(tombstones=len(tombstones))
    conn = store.conn
    conn.execute("PRAGMA secure_delete = ON")
    if live_db is not None:
        conn.execute("ATTACH DATABASE ? AS live", (str(live_db),))
    try:
        # A deferred BEGIN: IMMEDIATE would also take the write lock of the attached live
        # database, which `restore` holds itself; only `main` is written here.
        conn.execute("BEGIN")
        try:
            result.copied = _copy_tombstones(conn, tombstones)
            if live_db is not None:
                result.carried = _carry_scrubbed(conn)
                result.carried.update(_mirror_retention(conn))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        if live_db is not None:
            conn.execute("DETACH DATABASE live")
    rows = _purged_again(store, tombstones)
    if rows:
        rows = with_evidence_refs(conn, rows)
        matcher = Matcher.build(sorted({r.text for r in rows if r.text}, key=len,
                                       reverse=True), PURGE_SUBSTRING_MIN)
        _register(conn, matcher)
        done = ForgetResult(targets=[], dry_run=False, purge=True, reason="")
        _purge(store, rows, "purge re-applied on restore", "restore", done)
        _files(store, matcher, done, dry_run=False, export_dirs=())
        result.purged = [f"mem:{r.id}@v{r.version}" for r in rows]
        result.still_in, result.rewrite_command = done.still_in, done.rewrite_command
    if not (result.copied or result.carried or rows):
        return result  # nothing changed: the copy came from VACUUM INTO, no free pages
    from agentstate.memory.indexes import optimize_indexes

    with store.transaction():
        optimize_indexes(conn)
    _compact(conn)
    return result


def _copy_tombstones(conn: sqlite3.Connection, tombstones: list[Tombstone]) -> int:
    have = {(r[0], r[1]) for r in conn.execute(
        "SELECT memory, version FROM memory_history WHERE op = 'purge'")}
    copied = 0
    for t in tombstones:
        if (t.memory, t.version) in have:
            continue
        conn.execute("INSERT INTO memory_history (memory, version, op, actor, reason, time, "
                     "text_hash, detail) VALUES (?, ?, 'purge', ?, ?, ?, ?, ?)",
                     (t.memory, t.version, t.actor, t.reason, t.time, t.text_hash, t.detail))
        have.add((t.memory, t.version))
        copied += 1
    return copied


def _carry_scrubbed(conn: sqlite3.Connection) -> dict[str, int]:
    """Values the live store (attached as `live`) holds scrubbed replace the copy's value
    in the same row."""
    carried: dict[str, int] = {}
    live_tables = {r[0] for r in conn.execute(
        "SELECT name FROM live.sqlite_master WHERE type = 'table'")}
    for table, column in _text_columns(conn):
        if table not in live_tables:
            continue
        live_columns = {c[1] for c in conn.execute(f'PRAGMA live.table_info("{table}")')}
        keys = [c[1] for c in sorted(conn.execute(f'PRAGMA main.table_info("{table}")'),
                                     key=lambda c: c[5]) if c[5] > 0]
        if not keys or column not in live_columns or not set(keys) <= live_columns:
            continue  # no stable key to pair rows by
        same = " AND ".join(f'l."{k}" = "{table}"."{k}"' for k in keys)
        changed = conn.execute(
            f'UPDATE main."{table}" SET "{column}" = (SELECT l."{column}" FROM '
            f'live."{table}" l WHERE {same}) WHERE EXISTS (SELECT 1 FROM live."{table}" l '
            f'WHERE {same} AND instr(l."{column}", ?) > 0 '
            f'AND l."{column}" IS NOT "{table}"."{column}")', (PURGED_MARK,)).rowcount
        if changed:
            carried[f"{table}.{column}"] = changed
    return carried


def _mirror_retention(conn: sqlite3.Connection) -> dict[str, int]:
    """Event bodies `agentstate gc` collected in the live store stay out of the copy.

    Needed for purges: a purge scrubs the text out of the events a memory came from, and gc
    collects such an event (it is cited, so it is collected, never deleted) before or after
    the purge. The live row then holds no purge mark to carry over, while the backup may
    still hold the original body. So an event the live store holds collected is collected
    in the copy too: body, meta, time and hash taken from the live row.
    """
    if not conn.execute("SELECT 1 FROM live.sqlite_master WHERE name = 'events' AND sql LIKE "
                        "'%collected_at%'").fetchone():
        return {}  # a live store from before retention: gc never ran there
    collected = conn.execute(
        "UPDATE main.events SET (text, meta, collected_at, body_hash) = (SELECT l.text, "
        "l.meta, l.collected_at, l.body_hash FROM live.events l WHERE l.id = events.id) "
        "WHERE collected_at IS NULL AND id IN (SELECT id FROM live.events WHERE "
        "collected_at IS NOT NULL)").rowcount
    return {"events (collected by gc in the live store)": collected} if collected else {}


def _purged_again(store: Any, tombstones: list[Tombstone]) -> list[MemoryVersion]:
    """Versions of the copy that a tombstone names and that are not purged there yet.

    Matched by id and version only: memories are never deleted, so a version in the backup
    is the same version in the live store; another memory holding the same text was not
    purged there either (`forget --purge` lists it in still_in), so it is not purged here.
    """
    named = {(t.memory, t.version) for t in tombstones}
    conn = store.conn
    conn.row_factory = sqlite3.Row
    try:
        rows = [version_from_row(dict(r)) for r in conn.execute(
            "SELECT * FROM memories WHERE purged = 0")]
    finally:
        conn.row_factory = None
    return [r for r in rows if (r.id, r.version) in named]
