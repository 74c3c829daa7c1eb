"""A first export spelled, sorted and mapped by SQLite, from the line ids kept with each
version (m066, memory/shared_line.py).

Why (issue 24): a first export of 11k memories hashed two lines a version in Python and
stayed over 2x a copy of the same rows; no arrangement of that Python came within 1.5x.
With the ids kept, SQLite spells every line with its id (the parent's by a self-join),
sorts them, and the mappings are one INSERT … SELECT.

Taken only where it writes the bytes the Python plan (export.py) would, else None and the
export plans as before:
  - a first export: no version mapped to a record, and no line in the folder (so nothing is
    there to keep, skip or sort among, and no tombstone is due);
  - this SQLite spells lines as the canonical encoder does (sync/spelled.py's probe);
  - every version the export would write qualifies: active or superseded (a held version's
    line names its status, a contesting one's rel differs from the stored id's), its id
    stored, the scanner's mark on it (no line of it to scan), and, when it supersedes
    another, that parent written in the same export before it with its own id stored (the
    id hashed into the child's) — a version whose parent is not written gets a null parent
    from the Python plan, not the stored one;
  - every evidence row of those versions has its id stored;
  - no evidence line the Python plan would scan (a `file:` ref) trips the scanner.
A stored id is dropped by m066's triggers when a column its line covers changes, so a
version changed after it was written takes the Python plan.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentstate.memory.status import MemoryStatus
from agentstate.memory.stored_lines import insert_written, stored_evidence_lines, stored_lines
from agentstate.sync.records import FILES, SHAREABLE_KINDS
from agentstate.sync.spelled import sqlite_spells_canonically

if TYPE_CHECKING:
    from agentstate.store.db import Store

# The versions a first export writes (export.py's loop: a shareable scope, neither purged
# nor forgotten, a status asked for); `{statuses}` is filled with the ones asked for. The
# status is read from the row (`+`), not looked up in its index: nearly every version is
# written, and a look-up a version was a fifth of the statement.
_KINDS = ", ".join(f"'{kind}'" for kind in SHAREABLE_KINDS)
_WRITTEN = ("(m.scope = 'repo' OR (instr(m.scope, ':') > 0 AND "
            f"substr(m.scope, 1, instr(m.scope, ':') - 1) IN ({_KINDS}))) "
            f"AND NOT m.purged AND m.status != '{MemoryStatus.FORGOTTEN.value}' "
            "AND +m.status IN ({statuses})")
# The refs whose lines the Python plan scans: neither `user` nor an event's id
# (export.py's `_generated`, which is asked again of each).
_SCANNED_REF = ("(v.ref < 'user' OR v.ref > 'user') AND NOT (substr(v.ref, 1, 4) = 'evt:' "
                "AND length(v.ref) BETWEEN 8 AND 36 AND substr(v.ref, 5) NOT GLOB "
                "'*[^0-9a-z]*')")


@dataclass
class FirstExport:
    """A first export's two files, their lines in the files' order, and which versions it
    maps to their records."""

    ordered: dict[str, list[str]]  # file name → its lines, sorted by id
    counts: dict[str, int]  # record type → lines
    written: str  # the versions written: _WRITTEN with its statuses
    params: tuple[str, ...]

    def record(self, store: Store) -> None:
        """Map every written version to its record (the first of two of one content, as
        `record_exported` leaves them)."""
        insert_written(store, "INSERT OR IGNORE INTO shared_records (record_id, memory, "
                       "version, origin, rel)", "m.line_id, m.id, m.version, 'export', NULL",
                       self.written, self.params)


def first_export(store: Store, statuses: set[MemoryStatus],
                 clean: Callable[[str, str], bool]) -> FirstExport | None:
    """The first export in SQL, or None where the Python plan must make it (the module's
    doc says when). `clean(line, ref)`: whether an evidence line of `ref` may be written
    (the export's scanner; called only for the refs it scans)."""
    if not sqlite_spells_canonically(store.conn) or store.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM shared_records)").fetchone()[0]:
        return None
    names = tuple(sorted(str(s.value) for s in statuses))
    written = _WRITTEN.format(statuses=", ".join("?" * len(names)))
    try:
        lines = stored_lines(store, written, names)
        if lines is None:
            return None
        scanned = stored_evidence_lines(store, written, names, _SCANNED_REF)
    except sqlite3.OperationalError:  # a blob: "JSON cannot hold BLOB values"
        return None
    if not all(line is not None and clean(line, ref) for ref, line in scanned):
        return None  # the Python plan skips that line and reports it
    memories, evidence = lines
    ordered = {name: found for name, found in ((FILES["memory"], memories),
                                               (FILES["evidence"], evidence)) if found}
    return FirstExport(ordered, {"memory": len(memories), "evidence": len(evidence)},
                       written, names)
