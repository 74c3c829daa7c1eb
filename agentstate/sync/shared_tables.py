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
