"""What a long-lived process keeps between calls on one database, and how it knows the kept
value is still true.

The MCP server builds every `context` pack in one process, opening the store afresh for
each call, and most of what a pack reads (the run's working state, the memory search's
candidates) is what the previous call read. A value is kept under the state of what it was
read from: the database file's identity (device and inode: a restore puts another file at
the path) and a signature the caller reads — a change counter its triggers keep, an FTS5
index's records — read *before* the value. A commit landing between the two makes the
kept value older than its signature says, never newer, so the next call reads again; a
value is never served for a state it was not read in.

Nothing is kept for a database without a file, nor inside a transaction (the reads would
see the transaction's own writes, which a rollback takes back). This module knows no
domain: the owners of the tables say what their signature is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

# (database path, name) → (the state the values were read in, key → value).
_KEPT: dict[tuple[str, str], tuple[Hashable, dict[Hashable, Any]]] = {}
# Values per name and state: a process that builds packs for many queries or runs keeps
# the newest few and reads the rest again.
MAX_VALUES = 32


def file_identity(conn: Any) -> tuple[str, int, int] | None:
    """(path, device, inode) of the connection's main database; None without a file."""
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None
    info = os.stat(path)
    return path, info.st_dev, info.st_ino


def fts5_records(conn: Any, index: str) -> tuple[Any, ...]:
    """An FTS5 index's averages record (id 1: its row and token totals) and structure
    record (id 10: its segments, every one ever written counted). Every committed insert,
    delete or rewrite of an indexed text replaces the structure record (segments are never
    changed in place) and the totals: equal records, equal index."""
    return tuple(conn.execute(f"SELECT id, block FROM {index}_data WHERE id IN (1, 10) "
                              "ORDER BY id").fetchall())


def kept(conn: Any, name: str, signature: Callable[[Any], Hashable | None], key: Hashable,
         read: Callable[[], T], *, fresh: Callable[[T], bool] | None = None) -> T:
    """`read()`, or the value kept for `key` under `name` when the database is in the state
    it was read in: the same file and the same `signature(conn)` (None: nothing may be
    kept, e.g. a store without the counter yet). `fresh`, where a value also depends on the
    time (an expiry passing), says whether a kept value still holds; one that does not is
    read again. Callers must not change a kept value."""
    if conn.in_transaction:
        return read()
    identity = file_identity(conn)
    mark = signature(conn) if identity is not None else None
    if identity is None or mark is None:
        return read()
    state = (identity[1:], mark)
    where = (identity[0], name)
    slot = _KEPT.get(where)
    if slot is None or slot[0] != state or len(slot[1]) >= MAX_VALUES and key not in slot[1]:
        for other in [w for w in _KEPT if w[0] != where[0]]:
            del _KEPT[other]  # another database file: an eval goes through many stores
        slot = _KEPT[where] = (state, {})
    values = slot[1]
    if key not in values or fresh is not None and not fresh(values[key]):
        values[key] = read()
    value: T = values[key]
    return value


def forget_kept() -> None:
    """Drop everything kept (tests that compare a kept value with one read afresh)."""
    _KEPT.clear()
