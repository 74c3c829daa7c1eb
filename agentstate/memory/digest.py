"""A digest of everything about the stored memories that team sync reads or writes.

`agentstate sync` with nothing new should cost a look-up, not a re-read of the folder and a
re-plan of every version (issue 24): sync keeps this digest (with one of the shared folder)
after each full sync, and a later sync whose digests match has nothing to do. The digest
covers every column export and import decide on — status, scope, kind, key, chain links,
purge, validity — and the evidence (sync adds its own shared-record mappings), so any
change to a memory (even an UPDATE that writes no history row) changes it. It is a hash of
the rows in row order: linear, but with no JSON, no secret scan and no file read.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.store.db import Store

_QUERIES = (
    "SELECT row, id, version, status, scope, kind, key, supersedes, purged, valid_until, "
    "principal, source, length(text), norm_hash FROM memories ORDER BY row",
    "SELECT memory_row, ref FROM memory_evidence ORDER BY memory_row, ref",
)


def memory_digest(store: Store, digest: hashlib._Hash | None = None) -> str:
    """sha256 over the memory versions and their evidence."""
    digest = digest or hashlib.sha256()
    for sql in _QUERIES:
        digest.update(sql.encode())
        for row in store.conn.execute(sql):
            digest.update(repr(row).encode())
    return digest.hexdigest()
