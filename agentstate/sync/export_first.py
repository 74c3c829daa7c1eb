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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstate.memory.scanned import scanner_mark
from agentstate.memory.shared_line import FORMAT
from agentstate.memory.status import MemoryStatus
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
_PLAIN = f"('{MemoryStatus.ACTIVE.value}', '{MemoryStatus.SUPERSEDED.value}')"
# A written version whose stored id is its line's (see the module's doc); `?`: the
# scanner's mark; `{parent_written}`: _WRITTEN of the parent `p`. (A parent that comes
# after its child has no id stored: memory/shared_line.py's `parent_line_id`.)
_FIT = (f"m.status IN {_PLAIN} AND m.line_id IS NOT NULL AND m.scanned_with IS ? "
        "AND (NOT coalesce(m.supersedes, 0) OR (p.line_id IS NOT NULL "
        "AND {parent_written}))")
# A memory line as records.py spells it: keys in canonical order, `held` null, the parent
# and rel from the parent's row; null for a version that does not fit, which sends the
# whole export to the Python plan. Not DISTINCT: two versions of the same content are one
# line, and dropping the repeat in Python is a tenth of the time of SQLite's DISTINCT.
_MEMORY_LINE = ("CASE WHEN {fit} THEN json_object('created', m.created, 'held', NULL, "
                "'id', m.line_id, 'key', m.key, 'kind', m.kind, 'parent', p.line_id, "
                "'principal', m.principal, 'rel', CASE WHEN p.line_id IS NOT NULL THEN "
                "'supersedes' END, 'scope', m.scope, 'source', m.source, 'text', m.text, "
                f"'type', 'memory', 'v', {FORMAT}, 'valid_until', m.valid_until) END")
_PARENT = "LEFT JOIN memories p ON m.supersedes AND p.id = m.id AND p.version = m.supersedes"
_EVIDENCE_LINE = ("CASE WHEN v.line_id IS NOT NULL THEN json_object('id', v.line_id, "
                  "'memory', m.line_id, 'ref', v.ref, 'type', 'evidence', "
                  f"'v', {FORMAT}) END")
# The refs whose lines the Python plan scans: neither `user` nor an event's id
# (export.py's `_generated`, which is asked again of each).
_SCANNED_REF = ("(v.ref < 'user' OR v.ref > 'user') AND NOT (substr(v.ref, 1, 4) = 'evt:' "
                "AND length(v.ref) BETWEEN 8 AND 36 AND substr(v.ref, 5) NOT GLOB "
                "'*[^0-9a-z]*')")


@dataclass
class FirstExport:
    """A first export's two files, their lines in the files' order, and the statement that
    maps every written version to its record."""

    ordered: dict[str, list[str]]  # file name → its lines, sorted by id
    counts: dict[str, int]  # record type → lines
    mapping: tuple[str, tuple[Any, ...]]  # (INSERT … SELECT, its parameters)


def first_export(store: Store, statuses: set[MemoryStatus],
                 clean: Callable[[str, str], bool]) -> FirstExport | None:
    """The first export in SQL, or None where the Python plan must make it (the module's
    doc says when). `clean(line, ref)`: whether an evidence line of `ref` may be written
    (the export's scanner; called only for the refs it scans)."""
    conn = store.conn
    if not sqlite_spells_canonically(conn) or conn.execute(
            "SELECT EXISTS (SELECT 1 FROM shared_records)").fetchone()[0]:
        return None
    names = sorted(str(s.value) for s in statuses)
    written = _WRITTEN.format(statuses=", ".join("?" * len(names)))
    fit = _FIT.format(parent_written=written.replace("m.", "p."))
    try:
        memories = _lines(conn.execute(
            f"SELECT {_MEMORY_LINE.format(fit=fit)} FROM memories m {_PARENT} "
            f"WHERE {written} ORDER BY m.line_id", (scanner_mark(), *names, *names)))
        if memories is None:
            return None
        evidence = _lines(conn.execute(
            f"SELECT {_EVIDENCE_LINE} FROM memories m JOIN memory_evidence v "
            f"ON v.memory_row = m.row WHERE {written} ORDER BY v.line_id", names))
        if evidence is None:
            return None
        scanned = conn.execute(
            f"SELECT v.ref, {_EVIDENCE_LINE} FROM memory_evidence v JOIN memories m "
            f"ON m.row = v.memory_row WHERE {_SCANNED_REF} AND {written}", names).fetchall()
    except sqlite3.OperationalError:  # a blob: "JSON cannot hold BLOB values"
        return None
    if not all(clean(line, ref) for ref, line in scanned):
        return None  # the Python plan skips that line and reports it
    ordered = {name: lines for name, lines in ((FILES["memory"], memories),
                                               (FILES["evidence"], evidence)) if lines}
    mapping = ("INSERT OR IGNORE INTO shared_records (record_id, memory, version, origin, rel) "
               f"SELECT m.line_id, m.id, m.version, 'export', NULL FROM memories m WHERE "
               f"{written} ORDER BY m.id, m.version", tuple(names))
    return FirstExport(ordered, {"memory": len(memories), "evidence": len(evidence)}, mapping)


def _lines(rows: Iterable[tuple[str | None]]) -> list[str] | None:
    """The lines of a statement sorted by their ids, each once (a line's id is the hash of
    its body, so lines of one id are the same line, and adjacent); None if one is null (a
    version or an evidence row that does not fit)."""
    lines = [line for (line,) in rows]
    if None in lines:
        return None
    return list(dict.fromkeys(lines))  # type: ignore[arg-type]  # no None: checked above
