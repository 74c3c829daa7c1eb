"""Upkeep of the full-text indexes (memory/memory_tables.py creates them): merging segments after a
purge, the integrity check `doctor` runs, and the rebuild `doctor --repair` runs.
"""

from __future__ import annotations

import sqlite3
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
        for name in ("events_fts", "events_tri"):
            conn.execute(f"INSERT INTO {name}({name}) VALUES ('delete-all')")
        conn.execute("INSERT INTO event_search_map(event_id) SELECT e.id FROM events e "
                     "WHERE NOT EXISTS (SELECT 1 FROM event_search_map m "
                     "WHERE m.event_id = e.id) ORDER BY e.ts, e.run, e.seq")
        conn.execute("DELETE FROM event_search_map WHERE event_id NOT IN (SELECT id FROM events)")
        # The trigram index holds only texts with CJK (m015): what its triggers insert.
        for name, only in (("events_fts", ""), ("events_tri", " WHERE e.text GLOB ?")):
            conn.execute(f"INSERT INTO {name}(rowid, text) SELECT m.row, e.text "
                         f"FROM event_search_map m JOIN events e ON e.id = m.event_id{only}",
                         (CJK_GLOB,) if only else ())
