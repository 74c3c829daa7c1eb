"""Context tables: assembled packs and their manifests.

A pack's text is thrown away after the call (it is rebuilt every turn); what is kept is the
manifest — every candidate considered, with its decision and reason — and a SHA-256 of the
text, so `agentstate trace` can tell "never assembled" from "assembled but ignored". Keeping
no text here also means `forget --purge` has nothing to chase in these tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils costs ~100 ms at start-up
    import sqlite_utils


def m301_packs(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE packs (
            id TEXT PRIMARY KEY,
            run TEXT REFERENCES runs(id),            -- NULL in no-run mode (--query only)
            principal TEXT NOT NULL,
            query TEXT NOT NULL,
            budget INTEGER NOT NULL,
            tokens INTEGER NOT NULL,                 -- of the rendered text, same tokenizer
            text_hash TEXT NOT NULL,                 -- sha256 of the rendered text
            created TEXT NOT NULL,
            allocation TEXT NOT NULL DEFAULT '[]'    -- JSON: per class tokens, items in/out
        );
        CREATE INDEX packs_run ON packs(run, created);
        CREATE TABLE pack_items (
            pack TEXT NOT NULL REFERENCES packs(id),
            seq INTEGER NOT NULL,                    -- order considered
            ref TEXT NOT NULL,                       -- mem:…@vN, evt:…, skill:…@vN, run:…, …
            class TEXT NOT NULL,
            score REAL NOT NULL,
            tokens INTEGER NOT NULL,
            decision TEXT NOT NULL,                  -- included|compressed|pointer|dropped
            reason TEXT NOT NULL,
            position INTEGER,                        -- order in the text; NULL when dropped
            PRIMARY KEY (pack, seq)
        );
        CREATE INDEX pack_items_ref ON pack_items(ref);
        """,
    )


def m302_pack_item_notes(db: sqlite_utils.Database) -> None:
    """Each manifest row's note (why it ranks where it does, what a duplicate repeats), so
    `trace` and `context --explain` show what the pack's manifest said."""
    run_script(db, "ALTER TABLE pack_items ADD COLUMN note TEXT NOT NULL DEFAULT '';")



def m061_pack_items_inline(db: sqlite_utils.Database) -> None:
    """Each pack's manifest in its own row (`packs.items`, context/pack_refs.py), not one
    `pack_items` row per fragment with an index by ref: a record writes the pages where the
    table ends, not one page of the index per fragment (issue 24). The stored manifests are
    converted in the order considered; then the old table and its index are dropped."""
    from agentstate.context.pack_refs import encode_items

    conn = db.conn
    conn.execute("ALTER TABLE packs ADD COLUMN items TEXT NOT NULL DEFAULT '[]'")
    manifests: dict[str, list[tuple[object, ...]]] = {}
    for pack, *item in conn.execute(
            "SELECT pack, ref, class, score, tokens, decision, reason, position, note "
            "FROM pack_items ORDER BY pack, seq"):
        manifests.setdefault(pack, []).append(tuple(item))
    conn.executemany("UPDATE packs SET items = ? WHERE id = ?",
                     [(encode_items(items), pack) for pack, items in manifests.items()])
    run_script(db, """
        DROP INDEX pack_items_ref;
        DROP TABLE pack_items;
    """)
