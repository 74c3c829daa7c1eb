"""Run log tables: runs, append-only events, checkpoints, and small key/value state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils


def m001_runs_events(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            goal TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',   -- active | done | abandoned
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            ended TEXT,
            branch TEXT,
            head TEXT,
            dirty_fingerprint TEXT,
            dirty_files TEXT                         -- JSON list of paths
        );
        CREATE TABLE events (
            id TEXT PRIMARY KEY,
            run TEXT NOT NULL REFERENCES runs(id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT NOT NULL,
            ts TEXT NOT NULL,
            meta TEXT NOT NULL DEFAULT '{}',         -- JSON object
            resolves TEXT REFERENCES events(id),
            supersedes TEXT REFERENCES events(id),
            import_key TEXT,                         -- idempotent imports
            UNIQUE (run, seq)
        );
        CREATE INDEX events_run_kind ON events(run, kind);
        CREATE INDEX events_kind ON events(kind);
        CREATE INDEX events_resolves ON events(resolves);
        CREATE INDEX events_supersedes ON events(supersedes);
        CREATE UNIQUE INDEX events_import_key ON events(run, import_key)
            WHERE import_key IS NOT NULL;
        CREATE TABLE checkpoints (
            id TEXT PRIMARY KEY,
            run TEXT NOT NULL REFERENCES runs(id),
            event_seq INTEGER NOT NULL,              -- last event seq covered
            note TEXT,
            state TEXT NOT NULL,                     -- JSON: derived working state + refs
            created TEXT NOT NULL,
            branch TEXT,
            head TEXT,
            dirty_fingerprint TEXT,
            dirty_files TEXT
        );
        CREATE INDEX checkpoints_run ON checkpoints(run, event_seq);
        CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT);
        """
    )



def m002_events_run_kind_seq(db: sqlite_utils.Database) -> None:
    """The newest events of one kind in one run, in order: what working state reads per
    group (bounded with LIMIT), without scanning the whole run."""
    run_script(db, "CREATE INDEX events_run_kind_seq ON events(run, kind, seq);")


def m003_events_collected(db: sqlite_utils.Database) -> None:
    """`agentstate gc` removes the body of an old event that something still cites (a
    memory's evidence, a stored pack, a tool call): the row keeps its ref, kind and a keyed
    hash of the body, and `collected_at` says when, so `trace` still resolves it."""
    run_script(
        db,
        """
        ALTER TABLE events ADD COLUMN collected_at TEXT;
        ALTER TABLE events ADD COLUMN body_hash TEXT;
        """,
    )


def m004_events_hook_keys(db: sqlite_utils.Database) -> None:
    """What a hook recorded, found by the agent's own keys: a tool call by (session, call id)
    and a prompt by (session, prompt key). An import of the session's transcript, and the
    hooks' own catch-up, ask these for each record instead of reading the whole run.
    Partial indexes: only the events that carry the key are in them; meta that is not valid
    JSON (a NaN from an older version) is left out rather than failing the write."""
    run_script(
        db,
        """
        CREATE INDEX events_hook_call
            ON events((CASE WHEN json_valid(meta) THEN json_extract(meta, '$.session') END),
                      (CASE WHEN json_valid(meta) THEN json_extract(meta, '$.tool_use_id') END))
            WHERE (CASE WHEN json_valid(meta) THEN json_extract(meta, '$.tool_use_id') END)
                  IS NOT NULL;
        CREATE INDEX events_hook_prompt
            ON events((CASE WHEN json_valid(meta) THEN json_extract(meta, '$.session') END),
                      (CASE WHEN json_valid(meta) THEN json_extract(meta, '$.prompt_key') END))
            WHERE (CASE WHEN json_valid(meta) THEN json_extract(meta, '$.prompt_key') END)
                  IS NOT NULL;
        """,
    )


def m016_events_lean_indexes(db: sqlite_utils.Database) -> None:
    """Indexes that cost space without serving a query (issue 24, the store's size):
    `events_run_kind (run, kind)` is a prefix of `events_run_kind_seq (run, kind, seq)`,
    which serves every query it served; `resolves` and `supersedes` are NULL on almost every
    event, so their indexes keep only the rows that have one (a lookup `resolves = ?`
    implies `IS NOT NULL`, and SQLite uses a partial index for it)."""
    run_script(
        db,
        """
        DROP INDEX events_run_kind;
        DROP INDEX events_resolves;
        DROP INDEX events_supersedes;
        CREATE INDEX events_resolves ON events(resolves) WHERE resolves IS NOT NULL;
        CREATE INDEX events_supersedes ON events(supersedes) WHERE supersedes IS NOT NULL;
        """,
    )


def m056_events_batch(db: sqlite_utils.Database) -> None:
    """A marker row for the duration of a bulk write of events (an import's batch), inside
    its write transaction: `events_before` is the largest events rowid before the batch.
    What is derived from each new event (the event index, m057) waits while the marker
    exists and catches up on the batch's events when it is deleted, in a few statements
    instead of a few per event. At most one row; never committed (runs/log.py,
    `events_batch`)."""
    run_script(
        db,
        """
        CREATE TABLE events_batch (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            events_before INTEGER NOT NULL
        );
        """,
    )


# m063's `events` names its run by its TEXT id; m067 by the run's integer row.
_RUN_BY_ID = "run TEXT NOT NULL REFERENCES runs(id)"
_RUN_BY_ROW = "run INTEGER NOT NULL REFERENCES runs(row)"
_KEPT_COLUMNS = ("id, seq, kind, text, source, ts, meta, resolves, supersedes, import_key, "
                 "collected_at, body_hash, row")


def m067_events_name_run_by_row(db: sqlite_utils.Database) -> None:
    """Events name their run by an integer, the run's `row`, instead of its 10-character id:
    in each row and in the two indexes that start with it, `(run, seq)` and
    `events_run_kind_seq` (issue 24, the store's size: ~0.027 MB of what 1,000 events add,
    measured 2026-12-03). Readers still get the TEXT id (runs/event_sql.py spells both ways).

    `runs.row` is a column of its own with a unique index, not the table's rowid: VACUUM may
    renumber the rowids of a table without an INTEGER PRIMARY KEY, and `runs` keeps its TEXT
    key (five tables name it). Existing runs take their rowid; a new run the next number
    (a trigger, so that every writer of `runs` gets one).

    `events` is rebuilt as m063 rebuilt it: each event keeps its `row`, so the contentless
    indexes and the vectors that point at it are untouched; foreign keys are deferred to the
    commit; the table, its indexes and triggers are made again from their own SQL (the table
    with the new `run`). An event whose run is missing (foreign keys forbid it) stops the
    migration rather than being left out."""
    conn = db.conn
    (table,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'").fetchone()
    if _RUN_BY_ID not in table:
        raise RuntimeError(f"m067: `events` is not as m063 made it: {table}")
    kept = [sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('index', "
        "'trigger') AND sql IS NOT NULL ORDER BY rowid")]
    conn.execute("PRAGMA defer_foreign_keys = ON")  # until this migration's commit
    run_script(db, f"""
        ALTER TABLE runs ADD COLUMN row INTEGER;
        UPDATE runs SET row = rowid;
        CREATE UNIQUE INDEX runs_row ON runs(row);
        CREATE TRIGGER runs_row_ai AFTER INSERT ON runs WHEN NEW.row IS NULL BEGIN
            UPDATE runs SET row = (SELECT coalesce(max(row), 0) + 1 FROM runs)
                WHERE rowid = NEW.rowid;
        END;
        CREATE TEMP TABLE old_events AS
            SELECT {", ".join(f"e.{c}" for c in _KEPT_COLUMNS.split(", "))}, r.row AS run_row
            FROM events e LEFT JOIN runs r ON r.id = e.run;
        DROP TABLE events;
        {table.replace(_RUN_BY_ID, _RUN_BY_ROW)};
        INSERT INTO events (run, {_KEPT_COLUMNS})
            SELECT run_row, {_KEPT_COLUMNS} FROM temp.old_events ORDER BY row;
        DROP TABLE temp.old_events;
    """)
    for sql in kept:
        conn.execute(sql)
