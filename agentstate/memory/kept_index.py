"""What a process keeps of an FTS5 index while the index is unchanged.

A long-lived process (the MCP server) plans and runs the same task query on every
`context` call: the document frequencies of its terms (memory/query_plan.py) and the best
rows of its MATCH expressions (memory/search.py) are read once per database file and index,
and kept until the index's structure record changes or another file takes the store's
place (tests/memory/test_kept_index.py).
"""

from __future__ import annotations

from typing import Any

# (database file, FTS5 index) → (the index's state when kept, what was read of it: the
# document frequencies of terms, the best rows of MATCH expressions).
_KEPT: dict[tuple[str, str], tuple[tuple[Any, ...], dict[Any, Any]]] = {}
KEPT_ENTRIES = 4_096
# FTS5 keeps its index's structure (the list of its segments, and a count of the segments
# ever written) in one record of its `_data` table. Segments are never changed in place:
# every committed insert, delete or merge writes a new one and rewrites this record, so an
# equal record means an equal index (tests/memory/test_kept_index.py).
_STRUCTURE_ID = 10


def _kept_for(conn: Any, table: str) -> dict[Any, Any]:
    """What this process keeps of the FTS5 index `table` of this connection's database,
    emptied when the index changed since (`_index_state`); a fresh dict, kept nowhere, for
    a database without a file or inside a transaction (FTS5 shows the transaction's own
    writes to its queries before the structure record changes at commit, and a rollback
    takes them back)."""
    state = None if conn.in_transaction else _index_state(conn, table)
    if state is None:
        return {}
    where, now = state
    seen = _KEPT.get(where)
    if seen is None or seen[0] != now or len(seen[1]) > KEPT_ENTRIES:
        for other in [w for w in _KEPT if w[0] != where[0]]:
            del _KEPT[other]  # another database file: an eval goes through many stores
        seen = _KEPT[where] = (now, {})
    return seen[1]


def _index_state(conn: Any, table: str) -> tuple[tuple[str, str], tuple[Any, ...]] | None:
    """((database path, index), what identifies the index's contents now: the file's
    identity — a restore puts another file at the path — and FTS5's structure record),
    read before the index itself, so a commit landing between the two makes the next call
    read again; None for a database without a file."""
    import os

    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None
    info = os.stat(path)
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?",
                       (_STRUCTURE_ID,)).fetchone()
    return (path, table), (info.st_dev, info.st_ino, row[0] if row else None)
