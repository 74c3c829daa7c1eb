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
