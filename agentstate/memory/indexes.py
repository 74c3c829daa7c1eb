"""Upkeep of the full-text indexes (memory/memory_tables.py creates them): merging segments after a
purge, the integrity check `doctor` runs, and the rebuild `doctor --repair` runs.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from agentstate.memory.event_index_tables import CJK_GLOB

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.rewrite import CopyPlan


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
    # The word index's sizes table holds a row per indexed text (contentless, m102).
    missing = conn.execute(
        "SELECT count(*) FROM events e WHERE NOT EXISTS "
        "(SELECT 1 FROM events_fts_docsize d WHERE d.id = e.row)"
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


def _refill_event_index(conn: Any, cjk_rows: str | None = None, schema: str = "main") -> None:
    """Empty the event index and fill it again from `events` (inside the caller's
    transaction). `cjk_rows`: a table of the index rows known to hold CJK text (the
    trigram index's rows before the change), so the costly CJK pattern is tried on those
    alone; None (a repair) tries it on every text. `schema`: the database on the connection
    (a store being rewritten is attached as another)."""
    for name in ("events_fts", "events_tri"):
        conn.execute(f"INSERT INTO {schema}.{name}({name}) VALUES ('delete-all')")
    conn.execute(f"INSERT INTO {schema}.events_fts(rowid, text) SELECT row, text "
                 f"FROM {schema}.events")
    # The trigram index holds only texts with CJK (m015): what its triggers insert.
    known = (f"{cjk_rows} t JOIN {schema}.events e ON e.row = t.row" if cjk_rows
             else f"{schema}.events e")
    conn.execute(f"INSERT INTO {schema}.events_tri(rowid, text) SELECT e.row, e.text FROM "
                 f"{known} WHERE e.text GLOB ?", (CJK_GLOB,))


def event_index_rewrite_plan(collected: str) -> CopyPlan:
    """For a rewrite of the store that removes events and collects the bodies of those whose
    rowids `collected` (a table, column `rid`) holds (store/rewrite.py, `agentstate gc`):
    what the tables the events' triggers feed keep, and the index filled from the rows that
    stay. The plan is added after the one that names the events that stay: the new file's
    `events` is copied before these tables and says which events stay.

    What the triggers would have done row by row: a deleted event leaves the dense vectors
    (`events_search_ad`); a collected one keeps its row (its index row number) but loses
    its vector (`events_search_au`: its text changed). The
    word and trigram indexes are contentless, so they are created empty and filled from the
    texts that stay (the trigram one only from rows it held before: the CJK ones)."""
    # Imported here: every `context` pack reads the index state above, and only `gc`
    # rewrites the store (the rewrite module compiles its schema patterns at import).
    from agentstate.store.rewrite import SCHEMA, CopyPlan

    def refill(conn: Any, schema: str) -> None:
        conn.execute("CREATE TEMP TABLE event_index_cjk AS SELECT rowid AS row "
                     "FROM main.events_tri")
        _refill_event_index(conn, "temp.event_index_cjk", schema)
        conn.execute("DROP TABLE temp.event_index_cjk")

    # A vector whose event was never in `events` stays, as no trigger would have removed
    # it. Vectors are keyed by the event's row (m060, m063), which the rewrite keeps, and
    # an event's rowid is its row (m063), which is what `collected` holds.
    return CopyPlan(
        keep={"event_vectors": f"(row IN (SELECT row FROM {SCHEMA}.events) OR row NOT IN "
                               f"(SELECT row FROM main.events)) "
                               f"AND row NOT IN (SELECT rid FROM {collected})"},
        refill={"events_fts", "events_tri"}, steps=[refill, _vectors_removed])


def _vectors_removed(conn: Any, schema: str) -> None:
    """What the vector tables' triggers would have done for each vector the rewrite leaves
    out (m050, m052): the kept rankings of event vectors cleared, and each model's count of
    deleted vectors raised by as many — else a process holding a matrix of the old vectors,
    or a kept ranking, would go on ranking removed events. The rewrite only removes rows, so
    the difference of the counts per model is the number removed."""
    count = ("SELECT m.name, count(*) FROM {0}.event_vectors v JOIN {0}.vector_models m "
             "ON m.id = v.model GROUP BY m.name")  # the counts are by name (m060)
    before = dict(conn.execute(count.format("main")))
    after = dict(conn.execute(count.format(schema)))
    removed = {model: n - after.get(model, 0) for model, n in before.items()
               if n > after.get(model, 0)}
    if not removed:
        return
    conn.executemany(
        f"INSERT INTO {schema}.vector_changes (kind, model, changes) "
        "VALUES ('event_vectors', ?, ?) ON CONFLICT (kind, model) "
        "DO UPDATE SET changes = changes + excluded.changes", removed.items())
    conn.execute(f"UPDATE {schema}.dense_queries SET ranked = NULL "
                 "WHERE kind = 'event_vectors' AND ranked IS NOT NULL")



def event_index_state(conn: Any) -> tuple[Any, ...]:
    """What identifies the event log's contents now, read from its word index: every event
    is indexed as it is logged, removed as it is deleted and indexed again when a purge
    scrubs its text (the triggers of m102/m105) — the only ways an event changes — and
    FTS5 replaces the index's totals and structure records on each such commit. A long-lived
    process keeps what it derived from the log under it (store/kept.py)."""
    from agentstate.store.kept import fts5_records

    return fts5_records(conn, "events_fts")
