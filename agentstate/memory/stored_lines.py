"""Versions' shared lines spelled by SQLite from the line ids kept with them (m066,
memory/shared_line.py): what a first export writes when it can (issue 24; sync/
export_first.py decides which versions it writes and when it may).

The caller names the versions by an SQL condition over the version row `m` (as
`bulk_reads.shared_fields_with` takes its columns); the same condition is asked of a version's
parent, as `p`. memory/ knows the line's spelling, its stored ids and what makes one hold;
nothing of the shared folder.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentstate.memory.scanned import scanner_mark
from agentstate.memory.shared_line import FORMAT
from agentstate.memory.status import MemoryStatus

if TYPE_CHECKING:
    from agentstate.store.db import Store

_PLAIN = f"('{MemoryStatus.ACTIVE.value}', '{MemoryStatus.SUPERSEDED.value}')"
# A version whose stored id is its line's: current or superseded (a held version's line
# names its status, a contesting one's rel differs from the id's), its id stored, the
# scanner's mark on it (`?`: nothing of its line to scan), and a parent, if it has one, that
# is written too with its id (`{parent_written}`: the caller's condition asked of `p`; a
# parent not written leaves its child's line a null parent, not the one hashed into the
# stored id). A parent that comes after its child has no id stored (`parent_line_id`).
_FIT = (f"m.status IN {_PLAIN} AND m.line_id IS NOT NULL AND m.scanned_with IS ? "
        "AND (NOT coalesce(m.supersedes, 0) OR (p.line_id IS NOT NULL "
        "AND {parent_written}))")
# A memory line as shared_line.py spells it: keys in canonical order, `held` null, the
# parent and rel from the parent's row; null for a version that does not fit. Not
# DISTINCT: two versions of the same content are one line, and dropping the repeat in
# Python is a tenth of the time of SQLite's DISTINCT.
_MEMORY_LINE = ("CASE WHEN {fit} THEN json_object('created', m.created, 'held', NULL, "
                "'id', m.line_id, 'key', m.key, 'kind', m.kind, 'parent', p.line_id, "
                "'principal', m.principal, 'rel', CASE WHEN p.line_id IS NOT NULL THEN "
                "'supersedes' END, 'scope', m.scope, 'source', m.source, 'text', m.text, "
                f"'type', 'memory', 'v', {FORMAT}, 'valid_until', m.valid_until) END")
_PARENT = "LEFT JOIN memories p ON m.supersedes AND p.id = m.id AND p.version = m.supersedes"
_EVIDENCE_LINE = ("CASE WHEN v.line_id IS NOT NULL THEN json_object('id', v.line_id, "
                  "'memory', m.line_id, 'ref', v.ref, 'type', 'evidence', "
                  f"'v', {FORMAT}) END")


def stored_lines(store: Store, written: str, params: Sequence[Any]
                 ) -> tuple[list[str], list[str]] | None:
    """(memory lines, evidence lines) of the versions `written` (with `params`), each list
    sorted by id, each line once; None when one of them, or an evidence row of one, has no
    id that holds (the caller then spells its lines itself). The caller has checked that
    this SQLite's `json_object` spells as the canonical encoder does; a blob in a field
    raises sqlite3.OperationalError."""
    conn = store.conn
    fit = _FIT.format(parent_written=written.replace("m.", "p."))
    memories = _once(conn.execute(
        f"SELECT {_MEMORY_LINE.format(fit=fit)} FROM memories m {_PARENT} "
        f"WHERE {written} ORDER BY m.line_id", (scanner_mark(), *params, *params)))
    if memories is None:
        return None
    evidence = _once(conn.execute(
        f"SELECT {_EVIDENCE_LINE} FROM memories m JOIN memory_evidence v "
        f"ON v.memory_row = m.row WHERE {written} ORDER BY v.line_id", params))
    return None if evidence is None else (memories, evidence)


def stored_evidence_lines(store: Store, written: str, params: Sequence[Any], refs: str
                          ) -> list[tuple[str, str | None]]:
    """(ref, line) of the evidence rows of the versions `written` whose ref meets `refs`
    (a condition on the evidence row `v`), spelled as `stored_lines` spells them."""
    return store.conn.execute(
        f"SELECT v.ref, {_EVIDENCE_LINE} FROM memory_evidence v JOIN memories m "
        f"ON m.row = v.memory_row WHERE {refs} AND {written}", params).fetchall()


def insert_written(store: Store, insert: str, columns: str, written: str,
                   params: Sequence[Any]) -> None:
    """`insert` (an INSERT's head, the caller's table) of `columns` over each version
    `written`, in (memory, version) order: one statement, no row through Python."""
    store.conn.execute(f"{insert} SELECT {columns} FROM memories m WHERE {written} "
                       "ORDER BY m.id, m.version", params)


def _once(rows: Iterable[tuple[str | None]]) -> list[str] | None:
    """The lines of a statement sorted by their ids, each once (a line's id is the hash of
    its body, so lines of one id are the same line, and adjacent); None if one is null."""
    lines = [line for (line,) in rows]
    if None in lines:
        return None
    return list(dict.fromkeys(lines))  # type: ignore[arg-type]  # no None: checked above
