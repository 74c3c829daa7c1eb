"""The event index's migrations: the word and trigram indexes over `events` (m102), the
trigram index narrowed to texts holding CJK (m015), a bulk write indexed when its marker
is deleted (m057), and `events` keyed by the row the indexes name (m063). The tables and
indexes the memories and events share, and the tokenizers, are in memory_tables.py.

Append new migrations; never rename shipped ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.memory.memory_tables import WORD_TOKENIZER
from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils


def m102_event_search(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        f"""
        CREATE TABLE event_search_map (
            row INTEGER PRIMARY KEY,
            event_id TEXT NOT NULL UNIQUE
        );
        CREATE VIRTUAL TABLE events_fts USING fts5(
            text, content='', tokenize='{WORD_TOKENIZER}'
        );
        CREATE VIRTUAL TABLE events_tri USING fts5(text, content='', tokenize='trigram');
        CREATE VIRTUAL TABLE events_vocab USING fts5vocab(events_fts, 'row');

        CREATE TRIGGER events_search_ai AFTER INSERT ON events BEGIN
            INSERT INTO event_search_map(event_id) VALUES (NEW.id);
            INSERT INTO events_fts(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
            INSERT INTO events_tri(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
        END;
        CREATE TRIGGER events_search_ad AFTER DELETE ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            DELETE FROM event_search_map WHERE event_id = OLD.id;
        END;
        -- Events are append-only, but a purge may scrub text out of one.
        CREATE TRIGGER events_search_au AFTER UPDATE OF text ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            INSERT INTO events_fts(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
            INSERT INTO events_tri(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
        END;

        -- Backfill: events logged before this migration.
        INSERT INTO event_search_map(event_id) SELECT id FROM events ORDER BY ts, run, seq;
        INSERT INTO events_fts(rowid, text)
            SELECT m.row, e.text FROM event_search_map m JOIN events e ON e.id = m.event_id;
        INSERT INTO events_tri(rowid, text)
            SELECT m.row, e.text FROM event_search_map m JOIN events e ON e.id = m.event_id;
        """,
    )


# The characters `memory/terms.py` calls CJK (`_CJK`), as a GLOB class. Frozen here as the
# migration wrote it: a shipped migration is never edited, so a change to `_CJK` needs a new
# migration (tests/memory/test_search.py compares the two).
CJK_GLOB = "*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]*"


def m015_trigram_for_cjk_events(db: sqlite_utils.Database) -> None:
    """The event trigram index keeps only texts holding CJK (Chinese, Japanese, Korean).

    Why: on realistic agent text (prompts, pytest failures, tracebacks, diffs) the trigram
    index of every event was ~60% of the file, 2.5 MB per 1,000 events against 0.8 MB of
    text. The word index already serves text that separates its words; what it cannot serve
    is CJK runs, which have no spaces (the trigram index's reason to exist). The fragment
    fallback it also served (`config` inside `myconfig.yaml`) now asks the word index by
    prefix and scans the newest texts for the rest (memory/search.py, `_match_fragments`).
    The memories' trigram index is unchanged: memories are few and short.

    The event index is contentless: a 'delete' must name exactly what was inserted, so the
    triggers test the same condition on the old text as on the new one. The trigram index is
    refilled from the events that qualify, its segments merged into one."""
    on_new = f"NEW.text GLOB '{CJK_GLOB}'"
    on_old = f"OLD.text GLOB '{CJK_GLOB}'"
    run_script(
        db,
        f"""
        DROP TRIGGER events_search_ai;
        DROP TRIGGER events_search_ad;
        DROP TRIGGER events_search_au;
        DROP TABLE events_tri_vocab;
        DROP TABLE events_tri;
        CREATE VIRTUAL TABLE events_tri USING fts5(text, content='', tokenize='trigram');
        CREATE VIRTUAL TABLE events_tri_vocab USING fts5vocab(events_tri, 'row');

        CREATE TRIGGER events_search_ai AFTER INSERT ON events BEGIN
            INSERT INTO event_search_map(event_id) VALUES (NEW.id);
            INSERT INTO events_fts(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
            INSERT INTO events_tri(rowid, text)
                SELECT row, NEW.text FROM event_search_map
                WHERE event_id = NEW.id AND {on_new};
        END;
        CREATE TRIGGER events_search_ad AFTER DELETE ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map
                WHERE event_id = OLD.id AND {on_old};
            DELETE FROM event_search_map WHERE event_id = OLD.id;
        END;
        CREATE TRIGGER events_search_au AFTER UPDATE OF text ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map WHERE event_id = OLD.id;
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', row, OLD.text FROM event_search_map
                WHERE event_id = OLD.id AND {on_old};
            INSERT INTO events_fts(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
            INSERT INTO events_tri(rowid, text)
                SELECT row, NEW.text FROM event_search_map
                WHERE event_id = NEW.id AND {on_new};
        END;

        INSERT INTO events_tri(rowid, text)
            SELECT m.row, e.text FROM event_search_map m JOIN events e ON e.id = m.event_id
            WHERE e.text GLOB '{CJK_GLOB}';
        INSERT INTO events_tri(events_tri) VALUES ('optimize');
        """,
    )


# True for a text that may hold CJK: one with a character outside ASCII (its length in
# characters is then below its length in bytes; a NUL also makes it true). Implied by the
# GLOB, so testing it first changes no result: it spares the GLOB's character-class walk
# over the ASCII texts that are nearly all of an agent's events.
def _not_ascii(column: str) -> str:
    return f"length({column}) < length(CAST({column} AS BLOB))"


def m057_event_index_after_batch(db: sqlite_utils.Database) -> None:
    """The event index waits for a bulk write of events (m056's `events_batch` marker) and
    indexes the batch's events in three statements when the marker is deleted.

    Why (issue 24, the first import): the 7,566 events of a 10 MB Claude Code session cost
    0.67 s of CPU inserted through the per-event trigger (0.2 s of it the CJK GLOB walking
    every text, the rest the trigger's three statements an event), 0.16 s inserted without
    it and indexed in one statement per index. The rows written are the same: the map
    numbers the batch's events in insertion (rowid) order, as the per-event trigger did,
    and the trigram index gets the texts the GLOB selects. The delete and update triggers
    are unchanged (a batch neither deletes nor updates events)."""
    on_new = f"{_not_ascii('NEW.text')} AND NEW.text GLOB '{CJK_GLOB}'"
    on_batch = f"{_not_ascii('e.text')} AND e.text GLOB '{CJK_GLOB}'"
    run_script(
        db,
        f"""
        DROP TRIGGER events_search_ai;
        CREATE TRIGGER events_search_ai AFTER INSERT ON events
        WHEN NOT EXISTS (SELECT 1 FROM events_batch)
        BEGIN
            INSERT INTO event_search_map(event_id) VALUES (NEW.id);
            INSERT INTO events_fts(rowid, text)
                SELECT row, NEW.text FROM event_search_map WHERE event_id = NEW.id;
            INSERT INTO events_tri(rowid, text)
                SELECT row, NEW.text FROM event_search_map
                WHERE event_id = NEW.id AND {on_new};
        END;
        CREATE TRIGGER events_batch_indexed AFTER DELETE ON events_batch BEGIN
            INSERT INTO event_search_map(event_id)
                SELECT id FROM events WHERE rowid > OLD.events_before ORDER BY rowid;
            INSERT INTO events_fts(rowid, text)
                SELECT m.row, e.text FROM events e JOIN event_search_map m ON m.event_id = e.id
                WHERE e.rowid > OLD.events_before ORDER BY e.rowid;
            INSERT INTO events_tri(rowid, text)
                SELECT m.row, e.text FROM events e JOIN event_search_map m ON m.event_id = e.id
                WHERE e.rowid > OLD.events_before AND {on_batch} ORDER BY e.rowid;
        END;
        """,
    )


# What `events` holds since m063: m001's columns with m003's two, then the row the event
# index and the vectors name (last, so a `SELECT *` reads the columns in their old order).
_EVENTS_M063 = """
        CREATE TABLE events (
            id TEXT NOT NULL UNIQUE,
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
            collected_at TEXT,
            body_hash TEXT,
            row INTEGER PRIMARY KEY,                 -- the event index's and vectors' key
            UNIQUE (run, seq)
        );
"""
_EVENT_COLUMNS = ("id, run, seq, kind, text, source, ts, meta, resolves, supersedes, "
                  "import_key, collected_at, body_hash")


def m063_events_keyed_by_row(db: sqlite_utils.Database) -> None:
    """`events` gets an INTEGER PRIMARY KEY, `row`, which the word index, the trigram index
    and the vectors name directly: `event_search_map` (the map from an event's TEXT id to that
    integer, m102) and its index on the id go (issue 24, the store's size: 0.036 MB of what
    1,000 events add, measured on a hand-built copy of the bench's store, 2026-12-03).

    Each event keeps the number its map row had, so the contentless indexes and the vectors
    that point at it stay as they are: nothing is indexed or embedded again. VACUUM and gc's
    rewrite keep an INTEGER PRIMARY KEY as they kept the map's; a new event takes the largest
    row + 1, as its map row did. The TEXT id stays unique: refs are looked up by it and other
    tables' foreign keys name it. An event without a map row (none should exist: damage)
    gets a new number and is indexed under it, since the triggers on the new key take every
    event to be indexed (a 'delete' naming a row never inserted corrupts a contentless index).

    The table is rebuilt (SQLite cannot add a primary key): the rows are set aside in a
    temporary table, and `events` is dropped and made again. Foreign keys are on while a
    migration runs, so they are deferred: dropping `events` counts the rows of `tool_calls`
    and `skill_loads` that name an event, and putting each event back counts its own off
    again before the commit checks them. Its indexes are made again from their own SQL,
    the triggers of the event index and the vectors on the new key.

    All but `events_kind` (m001; 0.017-0.019 MB per 1,000 events): it served only
    `agentstate events --all --kind`, which runs/log.py now asks by run, on
    `events_run_kind_seq`, at the same cost (10,006 of 100,000 events: 56.3 against 57.7 ms
    of CPU; the newest 20: 43.1 against 42.9 ms; 2026-12-03)."""
    conn = db.conn
    indexes = [sql for (sql,) in conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'events' "
        "AND sql IS NOT NULL AND name != 'events_kind' ORDER BY rowid")]
    on_new = f"{_not_ascii('NEW.text')} AND NEW.text GLOB '{CJK_GLOB}'"
    on_old = f"{_not_ascii('OLD.text')} AND OLD.text GLOB '{CJK_GLOB}'"
    on_batch = f"{_not_ascii('text')} AND text GLOB '{CJK_GLOB}'"
    conn.execute("PRAGMA defer_foreign_keys = ON")  # until this migration's commit
    run_script(db, f"""
        DROP TRIGGER events_search_ai;
        DROP TRIGGER events_search_ad;
        DROP TRIGGER events_search_au;
        DROP TRIGGER events_batch_indexed;
        DROP TRIGGER event_vectors_au;
        DROP TRIGGER event_vectors_unmapped;
        CREATE TEMP TABLE old_events AS
            SELECT {", ".join(f"e.{c}" for c in _EVENT_COLUMNS.split(", "))}, m.row AS row
            FROM events e LEFT JOIN event_search_map m ON m.event_id = e.id;
        DROP TABLE events;
        DROP TABLE event_search_map;
        {_EVENTS_M063}
        INSERT INTO events ({_EVENT_COLUMNS}, row)
            SELECT {_EVENT_COLUMNS}, row FROM temp.old_events WHERE row IS NOT NULL ORDER BY row;
        INSERT INTO events ({_EVENT_COLUMNS})
            SELECT {_EVENT_COLUMNS} FROM temp.old_events WHERE row IS NULL ORDER BY rowid;
        CREATE TEMP TABLE unmapped AS SELECT e.row, e.text FROM events e
            WHERE e.id IN (SELECT id FROM temp.old_events WHERE row IS NULL);
        INSERT INTO events_fts(rowid, text) SELECT row, text FROM temp.unmapped;
        INSERT INTO events_tri(rowid, text) SELECT row, text FROM temp.unmapped WHERE {on_batch};
        DROP TABLE temp.unmapped;
        DROP TABLE temp.old_events;
    """)
    for sql in indexes:
        conn.execute(sql)
    run_script(db, f"""
        CREATE TRIGGER events_search_ai AFTER INSERT ON events
        WHEN NOT EXISTS (SELECT 1 FROM events_batch)
        BEGIN
            INSERT INTO events_fts(rowid, text) VALUES (NEW.row, NEW.text);
            INSERT INTO events_tri(rowid, text) SELECT NEW.row, NEW.text WHERE {on_new};
        END;
        CREATE TRIGGER events_search_ad AFTER DELETE ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text) VALUES ('delete', OLD.row, OLD.text);
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', OLD.row, OLD.text WHERE {on_old};
            DELETE FROM event_vectors WHERE row = OLD.row;
        END;
        -- Events are append-only, but a purge may scrub text out of one.
        CREATE TRIGGER events_search_au AFTER UPDATE OF text ON events BEGIN
            INSERT INTO events_fts(events_fts, rowid, text) VALUES ('delete', OLD.row, OLD.text);
            INSERT INTO events_tri(events_tri, rowid, text)
                SELECT 'delete', OLD.row, OLD.text WHERE {on_old};
            INSERT INTO events_fts(rowid, text) VALUES (NEW.row, NEW.text);
            INSERT INTO events_tri(rowid, text) SELECT NEW.row, NEW.text WHERE {on_new};
            DELETE FROM event_vectors WHERE row = OLD.row;
        END;
        CREATE TRIGGER events_batch_indexed AFTER DELETE ON events_batch BEGIN
            INSERT INTO events_fts(rowid, text)
                SELECT row, text FROM events WHERE row > OLD.events_before ORDER BY row;
            INSERT INTO events_tri(rowid, text)
                SELECT row, text FROM events WHERE row > OLD.events_before AND {on_batch}
                ORDER BY row;
        END;
    """)
