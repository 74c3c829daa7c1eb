"""Queries of `shared_records` (this package owns the table; see schema.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.store.db import Store


@dataclass
class Mapping:
    record_id: str
    memory: str
    version: int
    origin: str  # export | import | match
    rel: str | None  # supersedes | contests (the record's relation to its parent)


def mapped_ids(store: Store) -> dict[tuple[str, int], set[str]]:
    """(memory id, version) → the shared record ids that name it."""
    found: dict[tuple[str, int], set[str]] = {}
    for record_id, memory, version in store.conn.execute(
            "SELECT record_id, memory, version FROM shared_records"):
        found.setdefault((memory, version), set()).add(record_id)
    return found


def all_mappings(store: Store) -> dict[str, Mapping]:
    return {r[0]: Mapping(*r) for r in store.conn.execute(
        "SELECT record_id, memory, version, origin, rel FROM shared_records")}


def mapping(store: Store, record_id: str) -> Mapping | None:
    row = store.conn.execute(
        "SELECT record_id, memory, version, origin, rel FROM shared_records "
        "WHERE record_id = ?", (record_id,)).fetchone()
    return Mapping(*row) if row else None


def mappings_of(store: Store, memory: str, version: int) -> list[Mapping]:
    """Every record mapped to one version (one inserted it, others matched it)."""
    return [Mapping(*r) for r in store.conn.execute(
        "SELECT record_id, memory, version, origin, rel FROM shared_records WHERE "
        "memory = ? AND version = ?", (memory, version))]


def imported_as(store: Store, memory: str, version: int) -> Mapping | None:
    """The record a version was inserted from by an import (None: written here)."""
    row = store.conn.execute(
        "SELECT record_id, memory, version, origin, rel FROM shared_records WHERE "
        "memory = ? AND version = ? AND origin = 'import' LIMIT 1", (memory, version)).fetchone()
    return Mapping(*row) if row else None


def record_mapping(store: Store, record_id: str, memory: str, version: int, origin: str,
                   rel: str | None) -> None:
    store.conn.execute(
        "INSERT OR IGNORE INTO shared_records (record_id, memory, version, origin, rel) "
        "VALUES (?, ?, ?, ?, ?)", (record_id, memory, version, origin, rel))


def purged_record_ids(store: Store) -> set[str]:
    """Record ids whose version this store has purged (their lines may be scrubbed)."""
    from agentstate.memory.model import all_version_rows

    purged = {(r.id, r.version) for r in all_version_rows(store) if r.purged}
    return {rid for key, ids in mapped_ids(store).items() if key in purged for rid in ids}
