"""Upkeep of the full-text indexes (memory/memory_tables.py creates them): merging segments after a
purge, the integrity check `doctor` runs, and the rebuild `doctor --repair` runs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from agentstate.memory.memory_tables import CJK_GLOB

if TYPE_CHECKING:
    from agentstate.store.db import Store


def optimize_indexes(conn: Any, only: list[str] | None = None) -> list[str]:
    """Merge every FTS5 index in the database into one segment ('optimize').

    After a purge this drops the deleted entries from the index b-trees, so the erased
    terms no longer exist anywhere in the file (VACUUM then removes the freed pages).
    """
    names = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%'"
        )
    ]
    if only is not None:
        names = [name for name in names if name in only]
    for name in names:
        conn.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")
    return names


def check_indexes(conn: Any) -> list[str]:
    """FTS5 'integrity-check' on the memory and event indexes; returns problems (for doctor).

    For the external-content memory indexes this also compares the index with the rows."""
    problems = []
    for name in ("memories_fts", "memories_tri", "events_fts", "events_tri"):
        try:
            conn.execute(f"INSERT INTO {name}({name}) VALUES ('integrity-check')")
        except sqlite3.Error as exc:
            problems.append(f"{name}: {exc}")
    missing = conn.execute(
        "SELECT count(*) FROM events e LEFT JOIN event_search_map m ON m.event_id = e.id "
        "WHERE m.row IS NULL"
    ).fetchone()[0]
    if missing:
        problems.append(f"events_fts: {missing} event(s) not indexed")
    return problems


def rebuild_indexes(store: Store) -> None:
    """Rebuild every memory and event index from the tables (repair after damage)."""
    conn = store.conn
    with store.transaction():
        for name in ("memories_fts", "memories_tri"):
            conn.execute(f"INSERT INTO {name}({name}) VALUES ('rebuild')")
        _refill_event_index(conn)


def _refill_event_index(conn: Any, cjk_rows: str | None = None) -> None:
    """Empty the event index and fill it again from `events` (inside the caller's
    transaction). `cjk_rows`: a table of the index rows known to hold CJK text (the
    trigram index's rows before the change), so the costly CJK pattern is tried on those
    alone; None (a repair) tries it on every text."""
    for name in ("events_fts", "events_tri"):
        conn.execute(f"INSERT INTO {name}({name}) VALUES ('delete-all')")
    conn.execute("INSERT INTO event_search_map(event_id) SELECT e.id FROM events e "
                 "WHERE NOT EXISTS (SELECT 1 FROM event_search_map m "
                 "WHERE m.event_id = e.id) ORDER BY e.ts, e.run, e.seq")
    conn.execute("DELETE FROM event_search_map WHERE event_id NOT IN (SELECT id FROM events)")
    conn.execute("INSERT INTO events_fts(rowid, text) SELECT m.row, e.text "
                 "FROM event_search_map m JOIN events e ON e.id = m.event_id")
    # The trigram index holds only texts with CJK (m015): what its triggers insert.
    known = f"{cjk_rows} t JOIN event_search_map m ON m.row = t.row" if cjk_rows else (
        "event_search_map m")
    conn.execute(f"INSERT INTO events_tri(rowid, text) SELECT m.row, e.text FROM {known} "
                 "JOIN events e ON e.id = m.event_id WHERE e.text GLOB ?", (CJK_GLOB,))


# The triggers that keep the event index in step with each changed row (m102, m105, m015).
_ROW_TRIGGERS = ("events_search_ad", "events_search_au")


@contextmanager
def event_index_set_aside(conn: Any) -> Iterator[None]:
    """For a delete of most of the run log (gc): the index's per-row triggers are dropped
    for the block and the index is refilled from the rows that remain afterwards, then the
    triggers are put back as they were (their SQL is read from the store's own schema).

    Why: the index is contentless, so every deleted row is tokenized again to take its
    terms out — about as dear as indexing it. Removing 90% of the rows row by row cost ~50×
    a copy of the database (issue 24); refilling tokenizes only the 10% that stay. Must run
    inside the caller's transaction: an error rolls the dropped triggers back with the rest.
    """
    if not conn.in_transaction:
        raise RuntimeError("event_index_set_aside needs an open transaction")
    saved = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN "
        f"({', '.join('?' * len(_ROW_TRIGGERS))})", _ROW_TRIGGERS).fetchall()
    for name, _ in saved:
        conn.execute(f"DROP TRIGGER {name}")
    yield
    # The rows that stay keep their index row numbers (event_search_map), so the trigram
    # index's rows before the change say which of them can hold CJK text.
    conn.execute("CREATE TEMP TABLE event_index_cjk AS SELECT rowid AS row FROM events_tri")
    _refill_event_index(conn, "temp.event_index_cjk")
    conn.execute("DROP TABLE temp.event_index_cjk")
    for _, sql in saved:
        conn.execute(sql)
