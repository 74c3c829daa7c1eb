"""Reads of every memory version at once, narrow and in one statement each.

A sync reads the whole store on every run: the export every version's shared fields and
evidence refs, the import what it matches records against (content and keyed chains) and
which chains it may have to settle. Each read here is one query that builds no record per
version (issue 24); one version or chain is read through model.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from agentstate.memory.stored import MemoryVersion, select_versions

if TYPE_CHECKING:
    from collections.abc import Iterable

    from agentstate.store.db import Store


def content_keys(store: Store) -> set[tuple[str, str, str, str | None]]:
    """(norm_hash, scope, kind, key) of every version, purged or not (one read: an import
    asks it of thousands of records)."""
    return set(store.conn.execute("SELECT norm_hash, scope, kind, key FROM memories"))


def keyed_chains(store: Store) -> set[tuple[str, str]]:
    """(key, scope) of every keyed version, of any status."""
    return set(store.conn.execute(
        "SELECT DISTINCT key, scope FROM memories WHERE key IS NOT NULL"))


def chains_with_rivals(store: Store, ids: Iterable[str]) -> set[str]:
    """Of these chains, the ones with more than one current (active or contested) version
    or a contested one: only there can a sync import's settling change anything."""
    return {row[0] for row in store.conn.execute(
        "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?)) "
        "AND status IN ('active', 'contested') GROUP BY id "
        "HAVING count(*) > 1 OR sum(status = 'contested') > 0", (json.dumps(sorted(ids)),))}


class SharedFields(NamedTuple):
    """What an export reads of a version: the fields of its shared record, its status and
    chain. A tuple straight from the row (a first export reads every version, and building
    a MemoryVersion of each was a third of reading them: issue 24)."""

    row: int
    id: str
    version: int
    kind: str
    key: str | None
    scope: str
    text: str
    source: str
    principal: str
    created: str
    valid_until: str | None
    supersedes: int | None
    status: str  # the stored status, as MemoryStatus values compare
    purged: int


_SHARED_FIELDS = ", ".join(SharedFields._fields)


def all_version_rows(store: Store) -> list[MemoryVersion]:
    """Every memory version, chain by chain, oldest version first."""
    return select_versions(store, "ORDER BY id, version")


def all_shared_fields(store: Store) -> list[SharedFields]:
    """`all_version_rows`, narrowed to what an export reads."""
    make = SharedFields._make
    return [make(r) for r in store.conn.execute(
        f"SELECT {_SHARED_FIELDS} FROM memories ORDER BY id, version")]


def shared_fields_with(store: Store, columns: str,
                       fields: tuple[str, ...] = SharedFields._fields) -> list[tuple[Any, ...]]:
    """`all_shared_fields` as plain tuples (SharedFields' order, or only `fields` of it),
    each followed by `columns`: SQL expressions over the version row `m`, written by the
    caller (the export spells each version's shared line in this same read and reads the
    fields themselves only where it needs them: issue 24). memory/ knows nothing of them."""
    named = ", ".join(f"m.{name}" for name in fields)
    return store.conn.execute(
        f"SELECT {named}, {columns} FROM memories m ORDER BY m.id, m.version").fetchall()


def version_rows(store: Store) -> dict[tuple[str, int], tuple[int, bool]]:
    """(memory id, version) → (row, purged) of every version: what a sync needs of the
    versions it does not read whole (one narrow read, no record built per version)."""
    return {(r[0], r[1]): (r[2], bool(r[3])) for r in store.conn.execute(
        "SELECT id, version, row, purged FROM memories")}


def purged_versions(store: Store) -> set[tuple[str, int]]:
    """(memory id, version) of every purged version."""
    return {(r[0], r[1]) for r in store.conn.execute(
        "SELECT id, version FROM memories WHERE purged")}


def evidence_refs_by_row(store: Store) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for row, ref in store.conn.execute(
            "SELECT memory_row, ref FROM memory_evidence ORDER BY memory_row, ref"):
        found.setdefault(row, []).append(ref)
    return found
