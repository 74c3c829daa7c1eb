"""Memory tables and the full-text indexes shared by memories and events.

Append new migrations; never rename shipped ones.

- `memories`: one row per *version*. A memory is a chain of versions sharing `id`
  (`mem:ID@v1`, `mem:ID@v2`, …); `supersedes` is the version number this one replaced or
  contests. `row` is an INTEGER PRIMARY KEY on purpose: the full-text indexes point at it and
  VACUUM (which `forget --purge` runs) keeps such rowids stable.
- `memory_evidence`: memory version → event (`evt:…`), file at a commit (`file:P@C`) or `user`.
- `memory_history`: the audit trail. Every gate decision is a row (op, actor, reason, time, a
  hash of the text). It never holds the memory's text, so a purge leaves only the hash.
- Full-text search: for each of memories and events, a word index (FTS5 `unicode61` with
  diacritics removed) and a trigram index beside it, so text written without spaces between
  words (Chinese, Japanese) is searchable by substring. `fts5vocab` tables give document
  frequencies so the query planner can drop very common terms.
  Memories use external-content indexes over `memories.row`, kept in sync by triggers.
  Events had a TEXT primary key whose implicit rowid VACUUM may renumber, so they got a small
  map table with a stable INTEGER key and *contentless* indexes keyed on it (no second copy of
  the event text); since m063 that key is the events' own INTEGER PRIMARY KEY, `row`, and
  the map is gone. Triggers on `events` keep the indexes current.
  Since m015 the event trigram index holds only texts with CJK (the word index serves the
  rest); see docs/architecture.md, "The store's size". The migrations of the event index
  alone (m102, m015, m057, m063) are in event_index_tables.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils

WORD_TOKENIZER = "unicode61 remove_diacritics 2"


def m101_memories(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        f"""
        CREATE TABLE memories (
            row INTEGER PRIMARY KEY,
            id TEXT NOT NULL,                        -- the chain: mem:ID
            version INTEGER NOT NULL,                -- mem:ID@vN
            kind TEXT NOT NULL,                      -- fact | preference | event | procedure
            key TEXT,                                -- optional slot, for conflict detection
            scope TEXT NOT NULL,                     -- repo | user | run:REF | branch:N | path:G
            text TEXT NOT NULL,                      -- '' once purged
            norm_hash TEXT NOT NULL,                 -- sha256 of the normalised text (dedupe)
            source TEXT NOT NULL,
            status TEXT NOT NULL,                    -- active | candidate | superseded |
                                                     -- contested | forgotten | quarantined
            confidence REAL NOT NULL,
            valid_until TEXT,                        -- expired when now >= valid_until
            created TEXT NOT NULL,
            last_confirmed TEXT NOT NULL,
            evidence_count INTEGER NOT NULL DEFAULT 0,
            supersedes INTEGER,                      -- version number in the same chain
            principal TEXT NOT NULL,                 -- who wrote it
            status_reason TEXT NOT NULL DEFAULT '',
            prior_status TEXT,                       -- status before a tombstone
            purged INTEGER NOT NULL DEFAULT 0,
            UNIQUE (id, version)
        );
        CREATE INDEX memories_key_scope ON memories(key, scope) WHERE key IS NOT NULL;
        CREATE INDEX memories_hash_scope ON memories(norm_hash, scope);
        CREATE INDEX memories_status_kind ON memories(status, kind);
        CREATE TABLE memory_evidence (
            memory_row INTEGER NOT NULL REFERENCES memories(row),
            ref TEXT NOT NULL,                       -- evt:… | file:PATH@COMMIT | user
            kind TEXT NOT NULL,                      -- evt | file | user
            added TEXT NOT NULL,
            actor TEXT NOT NULL,
            PRIMARY KEY (memory_row, ref)
        );
        CREATE INDEX memory_evidence_ref ON memory_evidence(ref);
        CREATE TABLE memory_history (
            hid INTEGER PRIMARY KEY,
            memory TEXT NOT NULL,                    -- chain id
            version INTEGER,
            op TEXT NOT NULL,                        -- remember|dedupe|supersede|contest|...
            actor TEXT NOT NULL,                     -- principal
            reason TEXT NOT NULL,
            time TEXT NOT NULL,
            text_hash TEXT,                          -- sha256 of the text, never the text
            detail TEXT NOT NULL DEFAULT '{{}}'       -- JSON: refs, statuses (never text)
        );
        CREATE INDEX memory_history_memory ON memory_history(memory, hid);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, key, content='memories', content_rowid='row',
            tokenize='{WORD_TOKENIZER}'
        );
        CREATE VIRTUAL TABLE memories_tri USING fts5(
            text, content='memories', content_rowid='row', tokenize='trigram'
        );
        CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');

        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, key) VALUES (NEW.row, NEW.text, NEW.key);
            INSERT INTO memories_tri(rowid, text) VALUES (NEW.row, NEW.text);
        END;
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, key)
                VALUES ('delete', OLD.row, OLD.text, OLD.key);
            INSERT INTO memories_tri(memories_tri, rowid, text)
                VALUES ('delete', OLD.row, OLD.text);
        END;
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF text, key ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, key)
                VALUES ('delete', OLD.row, OLD.text, OLD.key);
            INSERT INTO memories_tri(memories_tri, rowid, text)
                VALUES ('delete', OLD.row, OLD.text);
            INSERT INTO memories_fts(rowid, text, key) VALUES (NEW.row, NEW.text, NEW.key);
            INSERT INTO memories_tri(rowid, text) VALUES (NEW.row, NEW.text);
        END;
        """,
    )


def m103_trigram_vocab(db: sqlite_utils.Database) -> None:
    """Vocabularies of the trigram indexes: one- and two-character CJK queries look up the
    trigrams that start with them (a range scan) instead of scanning texts."""
    run_script(
        db,
        """
        CREATE VIRTUAL TABLE memories_tri_vocab USING fts5vocab(memories_tri, 'row');
        CREATE VIRTUAL TABLE events_tri_vocab USING fts5vocab(events_tri, 'row');
        """,
    )



def m104_purged_history_hashes(db: sqlite_utils.Database) -> None:
    """History rows of already-purged versions lose their unsalted sha256: it would confirm a
    guess of the purged text. New rows carry a keyed hash (agentstate.store.keys); the rows
    of versions still stored keep theirs (the text is in the file beside them) and get the
    keyed one if they are purged later."""
    db.conn.execute(
        "UPDATE memory_history SET text_hash = NULL WHERE text_hash IS NOT NULL "
        "AND text_hash NOT LIKE 'hmac-%' AND EXISTS (SELECT 1 FROM memories m WHERE "
        "m.id = memory_history.memory AND m.version = memory_history.version AND m.purged = 1)"
    )


# The word indexes stem English words (porter wrapped around unicode61): "research",
# "researching" and "researched" are one term, so a question and the turn that answers it
# meet even when they inflect a word differently. Query terms are stemmed by FTS5 itself.
STEMMED_TOKENIZER = f"porter {WORD_TOKENIZER}"


def m105_stemmed_word_index(db: sqlite_utils.Database) -> None:
    """Rebuild the two word indexes with the stemming tokenizer (the trigram indexes, which
    serve CJK text, are unchanged). The triggers name the tables, so they keep working."""
    run_script(
        db,
        f"""
        DROP TABLE memories_vocab;
        DROP TABLE memories_fts;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, key, content='memories', content_rowid='row',
            tokenize='{STEMMED_TOKENIZER}'
        );
        INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
        CREATE VIRTUAL TABLE memories_vocab USING fts5vocab(memories_fts, 'row');

        DROP TABLE events_vocab;
        DROP TABLE events_fts;
        CREATE VIRTUAL TABLE events_fts USING fts5(
            text, content='', tokenize='{STEMMED_TOKENIZER}'
        );
        INSERT INTO events_fts(rowid, text)
            SELECT m.row, e.text FROM event_search_map m JOIN events e ON e.id = m.event_id;
        CREATE VIRTUAL TABLE events_vocab USING fts5vocab(events_fts, 'row');
        """,
    )


def m031_memories_status_created(db: sqlite_utils.Database) -> None:
    """Newest first within a status (`memory list`, the ui's memory page and review queue)
    without sorting every version of that status: the index is read in order and stops at
    the page's last row, and holds the expiry the current list leaves out (a page is found
    without reading the table). And the expired ones without walking every current version: few
    versions carry an expiry (a partial index holds only those)."""
    run_script(db, """
        CREATE INDEX memories_status_created ON memories(status, created, row, valid_until);
        CREATE INDEX memories_expiring ON memories(valid_until, status)
            WHERE valid_until IS NOT NULL;
    """)


def m041_scanned_texts(db: sqlite_utils.Database) -> None:
    """Keyed digests of memory versions whose text, key, scope and source the secret scanner
    has passed (the write gate, an import): an export then writes their lines without
    scanning them again (issue 24: a text is scanned once). memory/scanned.py."""
    # A rowid table, as every table a purge searches for leftover text (memory/forget.py
    # names a row by its rowid).
    run_script(db, "CREATE TABLE scanned_texts (digest TEXT PRIMARY KEY);")


def m042_user_preferences(db: sqlite_utils.Database) -> None:
    """The user's live preferences, newest first, without walking every active memory: the
    essentials rank them in SQL and stop reading at what their ceiling can show (issue 24).
    Partial, so it holds only those rows; scope and expiry are in it, so the count per scope
    that the pointer line needs is read from the index alone."""
    run_script(db, """
        CREATE INDEX memories_user_preferences ON memories(created, row, scope, valid_until)
            WHERE kind = 'preference' AND source = 'user' AND status = 'active';
    """)


def m058_scanned_mark(db: sqlite_utils.Database) -> None:
    """A version's mark that the secret scanner passed its text, key, scope and source: the
    scanner's fingerprint (memory/scanned.py), set where the scanner ran (the write gate, an
    import, an export's own scan) so that an export answers "scanned?" in the statement that
    reads the versions, with no keyed digest recomputed per version (issue 24). No row is
    assumed scanned: existing rows get the mark only by being scanned. A change to one of
    the four fields drops the mark (a purge empties the text: its mark goes with it), unless
    the same statement set a new one. The digests of m041 are no longer read: emptied."""
    run_script(db, """
        ALTER TABLE memories ADD COLUMN scanned_with TEXT;
        CREATE TRIGGER memories_scanned_au AFTER UPDATE OF text, key, scope, source
        ON memories WHEN OLD.scanned_with IS NOT NULL
            AND NEW.scanned_with IS OLD.scanned_with
            AND (NEW.text IS NOT OLD.text OR NEW.key IS NOT OLD.key
                 OR NEW.scope IS NOT OLD.scope OR NEW.source IS NOT OLD.source)
        BEGIN
            UPDATE memories SET scanned_with = NULL WHERE row = NEW.row;
        END;
        DELETE FROM scanned_texts;
    """)


# What a memory search reads: the versions, their evidence and their dense vectors.
MEMORY_CHANGE_TABLES = ("memories", "memory_evidence", "memory_vectors")


def m043_memory_changes(db: sqlite_utils.Database) -> None:
    """One row counting every change to what the read gate reads (a memory version, any
    column; its evidence; its dense vector), kept by triggers: a long-lived process keeps
    the memory search's candidates while the count is what it was when it read them
    (memory/recall.py; issue 24). `sync_changes` (m032) leaves out columns the gate ranks by
    (confidence, last confirmed), and no vector."""
    run_script(db, "CREATE TABLE memory_changes (id INTEGER PRIMARY KEY CHECK (id = 1), "
                   "changes INTEGER NOT NULL);\n"
                   "INSERT INTO memory_changes (id, changes) VALUES (1, 0);\n")
    for table in MEMORY_CHANGE_TABLES:
        for op in ("INSERT", "UPDATE", "DELETE"):
            db.conn.execute(
                f"CREATE TRIGGER memory_changes_{table}_{op.lower()} AFTER {op} ON {table} "
                "BEGIN UPDATE memory_changes SET changes = changes + 1 WHERE id = 1; END")


def m066_line_ids(db: sqlite_utils.Database) -> None:
    """Each version's shared-line id and each evidence row's, kept with the row (issue 24:
    a first export hashed two lines a version; with the ids kept, SQLite spells and sorts
    every line). Written by the write path (memory/versions.py), filled here for the rows
    already stored, dropped by triggers when a column the line covers changes
    (memory/shared_line.py says which, and what the export checks before it trusts one)."""
    from agentstate.memory.shared_line import fill_line_ids, line_id_triggers

    run_script(db, """
        ALTER TABLE memories ADD COLUMN line_id TEXT;
        ALTER TABLE memory_evidence ADD COLUMN line_id TEXT;
    """)
    fill_line_ids(db.conn)
    run_script(db, line_id_triggers())
