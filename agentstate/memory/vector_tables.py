"""The dense vectors' tables (memory/dense.py): `event_vectors` and `memory_vectors`, the
kept query rankings (`dense_queries`) and the per-model change counts (`vector_changes`,
`vector_models`) that tell a process its matrix or a kept ranking is stale.

Migrations of the memory domain (store/migrations.py's SCHEMA_MODULES lists this module after
memory_tables). Append new migrations; never rename shipped ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils


def m020_event_vectors(db: sqlite_utils.Database) -> None:
    """Dense vectors of event texts (memory/dense.py), one per event, with the model that
    made it (name@version): another model's vector is detected and replaced, never
    compared. A purge that scrubs an event's text, or an event's deletion, removes its
    vector with it, so no trace of erased text is left behind."""
    run_script(
        db,
        """
        CREATE TABLE event_vectors (
            event_id TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX event_vectors_model ON event_vectors(model);
        CREATE TRIGGER event_vectors_au AFTER UPDATE OF text ON events BEGIN
            DELETE FROM event_vectors WHERE event_id = OLD.id;
        END;
        CREATE TRIGGER event_vectors_ad AFTER DELETE ON events BEGIN
            DELETE FROM event_vectors WHERE event_id = OLD.id;
        END;
        """,
    )


def m040_memory_vectors(db: sqlite_utils.Database) -> None:
    """Dense vectors of memory versions (memory/dense.py), one per version row, with the
    model that made it, like `event_vectors`: recall fuses them with its lexical match. A
    purge that scrubs a version's text, or a deleted version, removes its vector."""
    run_script(
        db,
        """
        CREATE TABLE memory_vectors (
            row INTEGER PRIMARY KEY,
            model TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE TRIGGER memory_vectors_au AFTER UPDATE OF text ON memories BEGIN
            DELETE FROM memory_vectors WHERE row = OLD.row;
        END;
        CREATE TRIGGER memory_vectors_ad AFTER DELETE ON memories BEGIN
            DELETE FROM memory_vectors WHERE row = OLD.row;
        END;
        """,
    )


def m050_dense_queries(db: sqlite_utils.Database) -> None:
    """Query vectors and the rankings made with them (memory/dense_queries.py), so that a
    command asking what an earlier one asked (every `context` of a run asks its goal) needs
    neither the model nor numpy: one row per (model, vector table, digest of the query), the
    query's vector, and — while no vector of that table has been deleted since — its best
    keys with their scores. Deleting or changing any vector of the table (a purge, a
    deleted event, another model's vector replacing this one's) clears every ranking of the
    table at once (the triggers), so a forgotten text's event is never ranked from a kept
    list; the partial index makes that a probe when nothing is left to clear."""
    run_script(
        db,
        """
        CREATE TABLE dense_queries (
            model TEXT NOT NULL,
            kind TEXT NOT NULL,
            digest TEXT NOT NULL,
            vec BLOB NOT NULL,
            ranked TEXT,
            vector_top INTEGER NOT NULL DEFAULT 0,
            text_mark INTEGER NOT NULL DEFAULT 0,
            whole INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (model, kind, digest)
        );
        CREATE INDEX dense_queries_ranked ON dense_queries(kind) WHERE ranked IS NOT NULL;
        """ + "".join(
            f"""
        CREATE TRIGGER {table}_unrank{suffix} AFTER {event} ON {table} BEGIN
            UPDATE dense_queries SET ranked = NULL
            WHERE kind = '{table}' AND ranked IS NOT NULL;
        END;"""
            for table in ("event_vectors", "memory_vectors")
            for event, suffix in (("DELETE", ""), ("UPDATE", "_au"))),
    )


def m052_vector_changes(db: sqlite_utils.Database) -> None:
    """How many vectors of each vector table and model have been deleted or changed in
    place, kept by triggers (memory/dense.py): a process's matrix of one model's vectors,
    and a ranking made with it, stay exact while the count is what it was when they were
    read (a new vector has a rowid above those read). So a search no longer reads its best
    vectors back from the table to learn whether one was deleted since: one read of this
    count says (issue 23). Per model, so that replacing another model's vectors (a new
    version of the package) leaves this one's matrix and rankings be."""
    bump = ("INSERT INTO vector_changes (kind, model, changes) VALUES ('{table}', {which}"
            ".model, 1) ON CONFLICT (kind, model) DO UPDATE SET changes = changes + 1;")
    run_script(
        db,
        """
        CREATE TABLE vector_changes (
            kind TEXT NOT NULL,
            model TEXT NOT NULL,
            changes INTEGER NOT NULL,
            PRIMARY KEY (kind, model)
        );
        """ + "".join(
            f"""
        CREATE TRIGGER {table}_changes{suffix} AFTER {event} ON {table} BEGIN
            {" ".join(bump.format(table=table, which=which) for which in rows)}
        END;"""
            for table in ("event_vectors", "memory_vectors")
            # A vector changed in place may change model: both models' matrices hold it.
            for event, suffix, rows in (("DELETE", "", ("OLD",)),
                                        ("UPDATE", "_au", ("OLD", "NEW")))),
    )


def m060_compact_vectors(db: sqlite_utils.Database) -> None:
    """Dense vectors in about half the bytes, converted in place (issue 24, a store near its
    content: the float16 vectors with their model's name and the event's TEXT id on every
    row, and the two indexes on those, were 0.68 MB of what 1,000 events added to a store).

    - `vector_models` names each model once; a vector holds its number (`model`), so another
      model's vector is still told apart and replaced, never compared.
    - `event_vectors` is keyed by the event's row in `event_search_map` (kept by VACUUM and by
      gc's rewrite), one index on (row, model) serving both the look-up of an event's vector
      and the count of a model's; its rowid stays the order vectors were written in, which
      is how a process's matrix learns of new ones (memory/dense_matrix.py, `_Index`). A map row is
      deleted with its event, and the vector with it (a trigger on the map, which does not
      depend on the order the events' delete triggers fire in); a scrubbed text's vector
      goes as before.
    - Both tables hold 8-bit vectors with a scale (memory/dense_codec.py): 260 bytes, not 512.

    The triggers other migrations put on the two tables are made again on the new ones (the
    count of changes by the model's name, as m052 kept it); each count moves and every kept
    ranking is cleared, so nothing made from the old rows is used after."""
    from agentstate.memory import dense_codec

    conn = db.conn
    kept_triggers = [sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN "
        "('event_vectors', 'memory_vectors') AND name NOT IN ('event_vectors_changes', "
        "'event_vectors_changes_au', 'memory_vectors_changes', 'memory_vectors_changes_au') "
        "ORDER BY rowid")]
    run_script(db, """
        CREATE TABLE vector_models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
        INSERT INTO vector_models (name) SELECT model FROM event_vectors
            UNION SELECT model FROM memory_vectors;
        DROP TRIGGER event_vectors_au;
        DROP TRIGGER event_vectors_ad;
        CREATE TEMP TABLE old_event_vectors AS
            SELECT m.row AS row, n.id AS model, v.vec AS vec FROM event_vectors v
            JOIN event_search_map m ON m.event_id = v.event_id
            JOIN vector_models n ON n.name = v.model ORDER BY v.rowid;
        CREATE TEMP TABLE old_memory_vectors AS
            SELECT v.row AS row, n.id AS model, v.vec AS vec FROM memory_vectors v
            JOIN vector_models n ON n.name = v.model;
        DROP TABLE event_vectors;
        DROP TABLE memory_vectors;
        CREATE TABLE event_vectors (
            row INTEGER NOT NULL,
            model INTEGER NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE UNIQUE INDEX event_vectors_row ON event_vectors(row, model);
        CREATE TABLE memory_vectors (
            row INTEGER PRIMARY KEY,
            model INTEGER NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE TRIGGER event_vectors_au AFTER UPDATE OF text ON events BEGIN
            DELETE FROM event_vectors
            WHERE row = (SELECT row FROM event_search_map WHERE event_id = OLD.id);
        END;
        CREATE TRIGGER event_vectors_unmapped AFTER DELETE ON event_search_map BEGIN
            DELETE FROM event_vectors WHERE row = OLD.row;
        END;
    """)
    conn.create_function("agentstate_int8_vector", 1, dense_codec.from_float16,
                         deterministic=True)
    try:
        for table in ("event_vectors", "memory_vectors"):
            conn.execute(f"INSERT INTO {table} (row, model, vec) SELECT row, model, "
                         f"agentstate_int8_vector(vec) FROM temp.old_{table} ORDER BY rowid")
            conn.execute(f"DROP TABLE temp.old_{table}")
    finally:
        conn.create_function("agentstate_int8_vector", 1, None)
    for sql in kept_triggers:
        conn.execute(sql)
    _vector_change_triggers(db)
    run_script(db, """
        UPDATE vector_changes SET changes = changes + 1;
        UPDATE dense_queries SET ranked = NULL WHERE ranked IS NOT NULL;
    """)


def _vector_change_triggers(db: sqlite_utils.Database) -> None:
    """m052's counts of deleted or changed vectors, on the tables m060 made: by the model's
    name, which the count is read by (memory/dense_queries.py)."""
    bump = ("INSERT INTO vector_changes (kind, model, changes) VALUES ('{table}', "
            # (a number no name has, which nothing writes, still counted: never a failed purge)
            "coalesce((SELECT name FROM vector_models WHERE id = {which}.model), "
            "{which}.model), 1) "
            "ON CONFLICT (kind, model) DO UPDATE SET changes = changes + 1;")
    run_script(db, "".join(
        f"""
        CREATE TRIGGER {table}_changes{suffix} AFTER {event} ON {table} BEGIN
            {" ".join(bump.format(table=table, which=which) for which in rows)}
        END;"""
        for table in ("event_vectors", "memory_vectors")
        for event, suffix, rows in (("DELETE", "", ("OLD",)),
                                    ("UPDATE", "_au", ("OLD", "NEW")))))


def m062_vectors_by_row(db: sqlite_utils.Database) -> None:
    """Event vectors keyed by their search-map row alone (issue 24, the store with the dense
    extra: the `(row, model)` index m060 kept beside the table was 0.025 MB of what 1,000
    events added, and the table held the row twice, as its rowid and as a column).

    `row` becomes the INTEGER PRIMARY KEY, as `memory_vectors` has been since m040: one
    vector per event whatever its model (a vector of another model was always replaced, never
    kept beside), and no other index — a model's count reads the table, which cost no more
    than reading the index it replaces (18 against 32 ms at 100,000 vectors, measured
    2026-12-03). A vector's rowid is then its event's row, no longer the order it was written
    in, so memory/dense.py no longer learns of a vector written below the newest by its
    rowid (see `_embed_missing`); each model's count of changes moves here and every kept
    ranking is cleared, so no process ranks from what it read of the old table.

    The vectors are copied in row order: a table keyed by an integer and filled in that order
    has full pages (filled from the top down, as batches of the newest texts first were, its
    pages were half empty)."""
    conn = db.conn
    kept_triggers = [sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'event_vectors' "
        "ORDER BY rowid")]
    run_script(db, """
        CREATE TEMP TABLE old_event_vectors AS
            SELECT row, model, vec FROM event_vectors WHERE rowid IN
            (SELECT max(rowid) FROM event_vectors GROUP BY row);
        DROP TABLE event_vectors;
        CREATE TABLE event_vectors (
            row INTEGER PRIMARY KEY,
            model INTEGER NOT NULL,
            vec BLOB NOT NULL
        );
        INSERT INTO event_vectors (row, model, vec)
            SELECT row, model, vec FROM temp.old_event_vectors ORDER BY row;
        DROP TABLE temp.old_event_vectors;
    """)
    for sql in kept_triggers:
        conn.execute(sql)
    run_script(db, """
        INSERT INTO vector_changes (kind, model, changes)
            SELECT 'event_vectors', name, 1 FROM vector_models WHERE true
            ON CONFLICT (kind, model) DO UPDATE SET changes = changes + 1;
        UPDATE dense_queries SET ranked = NULL
            WHERE kind = 'event_vectors' AND ranked IS NOT NULL;
    """)
