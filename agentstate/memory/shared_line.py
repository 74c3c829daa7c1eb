"""A memory version's shared line, as the team's shared folder holds it: its spelling and its
id, below sync/ so that the write path can keep each version's line id with the version.

Why here (issue 24): a first export hashed two lines a version, the memory line and each
evidence line, and no arrangement of that Python came within 1.5x of a copy of the rows.
Kept with the version when it is written (m066), the ids let SQLite spell and sort every
line. sync/records.py spells every memory and evidence line with these functions: one
spelling, so an id kept here is the id the export would hash.

A stored memory-line id is the id of the version's line as a first export writes it when
the version is shared plainly: not held (`held` null), its parent the id stored with the
parent version, `rel` "supersedes" when there is a parent. The export checks the rest
(status, the parent exported in the same run, the scanner's mark) before it trusts one.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

FORMAT = 1  # the `"v"` this agentstate writes and reads
ID_LENGTH = 32

# The string quoting the canonical encoder applies (ensure_ascii=False): the lines spelled out
# below quote each field with it, so they are the encoder's own text.
quote = json.encoder.encode_basestring
_NULL = "null"


def memory_parts(f: dict[str, Any]) -> tuple[str, str] | None:
    """A memory record's canonical JSON without its id, in the two parts the id's field goes
    between (keys sorted: `held` < `id` < `key`), from its fields `f`; each string quoted by
    the function the canonical encoder itself calls. None when a field is neither a string
    nor None."""
    try:
        head = (f'{{"created":{quote(f["created"])},'
                f'"held":{_NULL if f["held"] is None else quote(f["held"])},')
        tail = (f'"key":{_NULL if f["key"] is None else quote(f["key"])},'
                f'"kind":{quote(f["kind"])},'
                f'"parent":{_NULL if f["parent"] is None else quote(f["parent"])},'
                f'"principal":{quote(f["principal"])},'
                f'"rel":{_NULL if f["rel"] is None else quote(f["rel"])},'
                f'"scope":{quote(f["scope"])},"source":{quote(f["source"])},'
                f'"text":{quote(f["text"])},"type":"memory","v":{FORMAT},'
                f'"valid_until":'
                f'{_NULL if f["valid_until"] is None else quote(f["valid_until"])}}}')
    except TypeError:
        return None
    return head, tail


def evidence_rest(memory: str, ref: str) -> str:
    """An evidence record's canonical JSON after its opening brace, without the id (which
    sorts first)."""
    return f'"memory":{quote(memory)},"ref":{quote(ref)},"type":"evidence","v":{FORMAT}}}'


def hashed_id(body: str) -> str:
    """A record's id: the first 32 hex digits of the sha256 of its body."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:ID_LENGTH]


def plain_line_id(*, kind: str, key: str | None, scope: str, text: str, source: str,
                  principal: str, created: str, valid_until: str | None,
                  parent: str | None) -> str | None:
    """The id of a version's line shared plainly (see the module's doc), `parent` the line
    id of the version it supersedes (None: none). None when a field is not text (such a
    version's line is spelled by the encoder at export) or cannot be encoded."""
    parts = memory_parts({"created": created, "held": None, "key": key, "kind": kind,
                          "parent": parent, "principal": principal,
                          "rel": None if parent is None else "supersedes", "scope": scope,
                          "source": source, "text": text, "valid_until": valid_until})
    if parts is None:
        return None
    try:
        return hashed_id(parts[0] + parts[1])
    except UnicodeEncodeError:  # a lone surrogate: SQLite refuses the row anyway
        return None


def evidence_line_id(memory_line_id: str | None, ref: str) -> str | None:
    """The id of an evidence line of the memory line `memory_line_id` (None: unknown)."""
    if memory_line_id is None or not isinstance(ref, str):
        return None
    try:
        return hashed_id("{" + evidence_rest(memory_line_id, ref))
    except UnicodeEncodeError:
        return None


# The columns a stored memory-line id covers: its line's fields, and the (id, version) its
# children find it by. `status` is not one: a version's status moves (superseded, confirmed)
# without changing its plain line, and the export checks the status itself.
LINE_COLUMNS = ("id", "version", "kind", "key", "scope", "text", "source", "principal",
                "created", "valid_until", "supersedes")


def line_id_triggers() -> str:
    """The triggers that keep a stored line id right or drop it (m066). A change to a column
    the line covers drops the version's id (unless the same statement set a new one) and
    its children's ids (each holds the version's id as its parent); a deleted version drops
    its children's; a version's id that changes drops its evidence rows' ids (each hashes
    it); an evidence row whose version or ref changes drops its own."""
    changed = " OR ".join(f"NEW.{c} IS NOT OLD.{c}" for c in LINE_COLUMNS)
    return f"""
        CREATE TRIGGER memories_line_id_au AFTER UPDATE OF {", ".join(LINE_COLUMNS)}
        ON memories WHEN OLD.line_id IS NOT NULL AND NEW.line_id IS OLD.line_id
            AND ({changed})
        BEGIN
            UPDATE memories SET line_id = NULL WHERE row = NEW.row;
            UPDATE memories SET line_id = NULL
                WHERE id = OLD.id AND supersedes = OLD.version AND line_id IS NOT NULL;
        END;
        CREATE TRIGGER memories_line_id_evidence AFTER UPDATE OF line_id ON memories
        WHEN OLD.line_id IS NOT NULL AND NEW.line_id IS NOT OLD.line_id
        BEGIN
            UPDATE memory_evidence SET line_id = NULL
                WHERE memory_row = NEW.row AND line_id IS NOT NULL;
        END;
        CREATE TRIGGER memories_line_id_ad AFTER DELETE ON memories
        WHEN OLD.line_id IS NOT NULL
        BEGIN
            UPDATE memories SET line_id = NULL
                WHERE id = OLD.id AND supersedes = OLD.version AND line_id IS NOT NULL;
        END;
        CREATE TRIGGER memory_evidence_line_id_au AFTER UPDATE OF memory_row, ref
        ON memory_evidence WHEN OLD.line_id IS NOT NULL AND NEW.line_id IS OLD.line_id
            AND (NEW.memory_row IS NOT OLD.memory_row OR NEW.ref IS NOT OLD.ref)
        BEGIN
            UPDATE memory_evidence SET line_id = NULL
                WHERE memory_row = NEW.memory_row AND ref = NEW.ref;
        END;
    """


def fill_line_ids(conn: sqlite3.Connection) -> None:
    """The stored line ids of the versions and evidence rows already in a store (m066), as
    the write path would have stored them: a parent before its children."""
    known: dict[tuple[str, int], str] = {}
    ids = []
    for (row, memory, version, kind, key, scope, text, source, principal, created,
         valid_until, supersedes) in conn.execute(
            "SELECT row, id, version, kind, key, scope, text, source, principal, created, "
            "valid_until, supersedes FROM memories ORDER BY id, version"):
        hashable, parent = parent_line_id(known.get((memory, supersedes)), supersedes,
                                          version)
        if not hashable:
            continue
        line_id = plain_line_id(kind=kind, key=key, scope=scope, text=text, source=source,
                                principal=principal, created=created,
                                valid_until=valid_until, parent=parent)
        if line_id is not None:
            known[(memory, version)] = line_id
            ids.append((line_id, row))
    conn.executemany("UPDATE memories SET line_id = ? WHERE row = ?", ids)
    rows = conn.execute("SELECT e.memory_row, e.ref, m.line_id FROM memory_evidence e "
                        "JOIN memories m ON m.row = e.memory_row "
                        "WHERE m.line_id IS NOT NULL").fetchall()
    conn.executemany("UPDATE memory_evidence SET line_id = ? WHERE memory_row = ? AND ref = ?",
                     [(evidence_line_id(line_id, ref), row, ref) for row, ref, line_id in rows])


def parent_line_id(stored: str | None, supersedes: int | None, version: int
                   ) -> tuple[bool, str | None]:
    """(whether a line id can be stored, the parent it is hashed with): no parent, or the
    parent's stored id; not when the parent has none. A parent counts only when it comes
    before the version (`stored`: its id), as the export reads them."""
    if not supersedes:
        return True, None
    if stored is None or supersedes >= version:
        return False, None
    return True, stored
