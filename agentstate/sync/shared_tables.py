"""The sync domain's one table: which shared record names which local memory version.

`shared_records` maps a record id of the shared folder to the memory version it became (or
was matched with) here. It is what lets a tombstone find its memory after a purge has
erased the text the id was computed from, and what keeps a record from being imported or
exported twice. `origin`: export (written from this store), import (a version inserted
from a teammate's record), match (a teammate's record with the same content as a version
already here). `rel`: the record's relation to its parent, for settling rival imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:
    import sqlite_utils


def m401_shared_records(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE shared_records (
            record_id TEXT PRIMARY KEY,
            memory TEXT NOT NULL,                    -- chain id (mem:ID)
            version INTEGER NOT NULL,                -- mem:ID@vN
            origin TEXT NOT NULL,                    -- export | import | match
            rel TEXT                                 -- the record's rel: supersedes | contests
        );
        CREATE INDEX shared_records_memory ON shared_records(memory, version);
        """,
    )


# The tables a sync reads or writes, and for `memories` the columns export and import decide
# on (a confidence or last_confirmed refresh changes nothing a sync would write, so it does
# not make the next sync do the full work). tests/sync/test_sync_change_counter.py changes
# each table in each way and checks that the counter moves.
SYNCED_TABLES: dict[str, str] = {
    "memories": " OF id, version, kind, key, scope, text, norm_hash, source, status, "
                "valid_until, created, supersedes, principal, purged",
    "memory_evidence": "",
    "shared_records": "",
}


def m032_sync_change_counter(db: sqlite_utils.Database) -> None:
    """One row counting the changes to what a sync reads, kept by triggers, so that "nothing
    changed since the last sync" is one read instead of a hash of every memory version
    (issue 24: `sync` with nothing new ≤ 0.2 s at 14k versions)."""
    run_script(db, "CREATE TABLE sync_changes (id INTEGER PRIMARY KEY CHECK (id = 1), "
                   "changes INTEGER NOT NULL);\n"
                   "INSERT INTO sync_changes (id, changes) VALUES (1, 0);\n")
    for table, columns in SYNCED_TABLES.items():
        for op in ("INSERT", "UPDATE", "DELETE"):
            what = op + (columns if op == "UPDATE" else "")
            db.conn.execute(
                f"CREATE TRIGGER sync_changes_{table}_{op.lower()} AFTER {what} ON {table} "
                "BEGIN UPDATE sync_changes SET changes = changes + 1 WHERE id = 1; END")
