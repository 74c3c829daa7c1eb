"""Queries of `shared_records` (this package owns the table; see shared_tables.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.store.db import Store

DIGEST_KEY = "sync_nothing_new"  # kv: the digest left by the last full sync
CHECKED_KEY = "sync_checked_files"  # kv: shared file → sha256 of a text found valid


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


def mapped_record_ids(store: Store) -> set[str]:
    return {r[0] for r in store.conn.execute("SELECT record_id FROM shared_records")}


def mapped_versions(store: Store) -> dict[str, tuple[str, int]]:
    """Record id → the (memory id, version) it names (one read, no Mapping built per row:
    an import's evidence pass asks it of every evidence record)."""
    return {r[0]: (r[1], r[2]) for r in store.conn.execute(
        "SELECT record_id, memory, version FROM shared_records")}


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


def record_mappings(store: Store, rows: list[tuple[str, str, int, str, str | None]]) -> None:
    """Many (record_id, memory, version, origin, rel) at once, as record_mapping each."""
    store.conn.executemany(
        "INSERT OR IGNORE INTO shared_records (record_id, memory, version, origin, rel) "
        "VALUES (?, ?, ?, ?, ?)", rows)


def record_exported(store: Store, rows: list[tuple[str, str, int]]) -> None:
    """(record_id, memory, version) of records an export wrote, as record_mappings with
    origin `export` and no rel: the constants in the statement, not bound per row (a first
    export maps every version: 0.85× the time of binding five values each, issue 24)."""
    store.conn.executemany(
        "INSERT OR IGNORE INTO shared_records (record_id, memory, version, origin, rel) "
        "VALUES (?, ?, ?, 'export', NULL)", rows)


def purged_record_ids(store: Store) -> set[str]:
    """Record ids whose version this store has purged (their lines may be scrubbed)."""
    from agentstate.memory.bulk_reads import purged_versions

    purged = purged_versions(store)
    if not purged:
        return set()
    return {rid for key, ids in mapped_ids(store).items() if key in purged for rid in ids}


def change_count(store: Store) -> int | None:
    """How many changes the triggers of m032 have counted on the tables a sync reads
    (memories, their evidence, this package's mappings); None when the counter row is gone."""
    return store.value("SELECT changes FROM sync_changes WHERE id = 1")


def nothing_new_digest(store: Store, folder: Path, flags: str) -> str | None:
    """What a sync depends on, in one hash: the change counter of the tables it reads (one
    indexed read, whatever the store's size), the shared files' names, sizes and
    modification times, the config file's (principals and scopes live there) and the
    options of the call. Equal digests before and after: the sync would change nothing.
    None when the counter is missing: then nothing can be known, the full sync runs."""
    import hashlib

    changes = change_count(store)
    if changes is None:
        return None
    # "counter:" keeps a digest of the earlier, row-hashing kind from ever matching.
    digest = hashlib.sha256(f"counter:{changes}\0{flags}\0".encode())
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    for file in [*files, Path(store.root) / "config.toml"]:
        try:
            stat = file.stat()
        except FileNotFoundError:
            continue
        digest.update(f"{file.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def stored_digest(store: Store) -> str | None:
    from agentstate.runs.log import kv_value

    return kv_value(store, DIGEST_KEY)


def keep_digest(store: Store, digest: str) -> None:
    from agentstate.runs.log import set_kv_value

    set_kv_value(store, DIGEST_KEY, digest)


def checked_files(store: Store) -> dict[str, str]:
    """Shared file name → the sha256 of its text when this store last found it valid (or
    wrote it): read_folder parses such a file without checking each line again."""
    import json

    from agentstate.runs.log import kv_value

    try:
        kept = json.loads(kv_value(store, CHECKED_KEY) or "{}")
    except json.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in kept.items()} if isinstance(kept, dict) else {}


def keep_checked_files(store: Store, digests: dict[str, str]) -> None:
    import json

    from agentstate.runs.log import set_kv_value

    if digests != checked_files(store):
        set_kv_value(store, CHECKED_KEY, json.dumps(digests, sort_keys=True))
