"""Shared lines spelled by SQLite: a version's memory line built by `json_object` in the
statement that reads the versions, its evidence lines from their refs, each id hashed once.

Why: a first export spent ~20 µs of Python a version building its lines (issue 24). The
bytes must stay those of the canonical encoder (records.py): ids are hashes of them, and a
line spelled differently would be a new record to every teammate. So SQLite spells a line
only where it is known to spell it the same:
  - every field is text or null (a blob takes the Python path, as before);
  - this process's SQLite passed `sqlite_spells_canonically`, a probe of every character
    the two encoders could escape differently (controls, quotes, backslash, DEL, U+2028,
    U+2029, non-BMP, …), run once per process and SQLite version;
  - tests/sync/test_sync_spelled.py checks the two byte for byte on arbitrary text.
Lone surrogates never reach SQLite (Python's sqlite3 refuses to encode them).
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from hashlib import sha256
from typing import TYPE_CHECKING, Any

from agentstate.memory.bulk_reads import shared_fields_with
from agentstate.memory.shared_line import FORMAT, ID_LENGTH, evidence_rest, quote
from agentstate.memory.status import MemoryStatus
from agentstate.sync.records import HELD, canonical

if TYPE_CHECKING:
    from agentstate.store.db import Store

# The memory record without its id, keys sorted as the canonical encoder sorts them. parent
# and rel are null here: the parent's record id may be one this same export makes, so a
# version with a parent gets them spliced in (`with_parent`).
_BODY = ("json_object('created', m.created, 'held', CASE WHEN m.status IN "
         f"('{HELD[0]}', '{HELD[1]}') THEN m.status END, 'key', m.key, 'kind', m.kind, "
         "'parent', NULL, 'principal', m.principal, 'rel', NULL, 'scope', m.scope, "
         "'source', m.source, 'text', m.text, 'type', 'memory', 'v', "
         f"{FORMAT}, 'valid_until', m.valid_until)")
# Spelled only for a version the export may write: not mapped to a record already (an
# export with nothing new pays no JSON), not purged or forgotten. Every field is text or
# null: the columns have TEXT affinity, so a number is stored as its text; a blob (written
# by hand) makes `json_object` fail, and the export then takes the Python path, which
# fails on it as it always did (`spelled_rows`).
_UNMAPPED = ("NOT EXISTS (SELECT 1 FROM shared_records s WHERE s.memory = m.id AND "
             "s.version = m.version)")
_WRITABLE = f"NOT m.purged AND m.status != '{MemoryStatus.FORGOTTEN.value}'"
BODY_COLUMN = f"CASE WHEN {_WRITABLE} AND {_UNMAPPED} THEN {_BODY} END"
# A store with no mapping yet (its first export) has no version to leave out: the look-up
# a version was ~4 ms of 14,667.
FIRST_BODY_COLUMN = f"CASE WHEN {_WRITABLE} THEN {_BODY} END"

# Every character below 0x80 and the ones past it that encoders are known to treat apart.
_PROBE = ("".join(map(chr, range(0x80))) + "\u0085\u00a0\u2028\u2029\ufeff\ufffe\uffff"
          "\U0001f680\U0010ffff é 路径 ' \"quoted\" back\\slash /")
_CHECKED: dict[str, bool] = {}


def sqlite_spells_canonically(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite's `json_object` writes the probe as the canonical encoder does
    (False without the JSON functions)."""
    known = _CHECKED.get(sqlite3.sqlite_version)
    if known is None:
        try:
            got = conn.execute("SELECT json_object('held', NULL, 'text', ?, 'v', 1)",
                               (_PROBE,)).fetchone()[0]
        except sqlite3.OperationalError:
            got = None
        known = got == canonical({"held": None, "text": _PROBE, "v": 1})
        _CHECKED[sqlite3.sqlite_version] = known
    return known


# What the export decides on for each version (SharedFields' names): the fields of its line
# travel in the spelled body, and are read whole only where Python spells the line.
HEAD = ("row", "id", "version", "scope", "supersedes", "status", "purged")


def spelled_rows(store: Store, *, mapped: bool = True) -> list[tuple[Any, ...]]:
    """Every version's HEAD, then its memory body spelled by SQLite, or None where Python
    spells it (a version not to be written, or a SQLite not proven to spell alike), then the
    scanner's mark on the row (memory/scanned.py). `mapped`: whether any version may be
    mapped to a record already (False: none is, and none is looked up)."""
    if sqlite_spells_canonically(store.conn):
        body = BODY_COLUMN if mapped else FIRST_BODY_COLUMN
        try:
            return shared_fields_with(store, f"{body}, m.scanned_with", HEAD)
        except sqlite3.OperationalError:  # a blob: "JSON cannot hold BLOB values"
            pass
    return shared_fields_with(store, "NULL, m.scanned_with", HEAD)


def with_parent(body: str, parent: str, rel: str) -> str:
    """A spelled body with its parent and rel. A quote inside a JSON string is escaped, so
    `,"parent":null,` can only be that key of this flat object (and likewise `rel`)."""
    return (body.replace(',"parent":null,', f',"parent":{quote(parent)},', 1)
            .replace(',"rel":null,', f',"rel":{quote(rel)},', 1))


def memory_line(body: str) -> tuple[str, str]:
    """(id, line) of a memory record from its body: the id's field goes before `key`, the
    first key after it (`created` and `held` come before, and hold no `,"key":`)."""
    record_id = sha256(body.encode("utf-8")).hexdigest()[:ID_LENGTH]
    at = body.index(',"key":') + 1
    return record_id, f'{body[:at]}"id":"{record_id}",{body[at:]}'


def evidence_line(memory: str, ref: str) -> tuple[str, str, str]:
    """(id, line, body) of an evidence record: `evidence_record` without the record."""
    body = f'{{"memory":{quote(memory)}{after_memory(ref)}'
    record_id = sha256(body.encode("utf-8")).hexdigest()[:ID_LENGTH]
    return record_id, f'{{"id":"{record_id}",{body[1:]}', body


@lru_cache(maxsize=1024)
def after_memory(ref: str) -> str:
    """An evidence record's canonical JSON after its memory field (`ref`, `type` and `v`
    sort after it): the same for every version citing `ref`, and most cite `user`."""
    return evidence_rest("", ref)[len('"memory":""'):]
