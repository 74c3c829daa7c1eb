"""`sync` with nothing new is one read of a change counter kept by triggers (m032, issue 24).

Every change to a table a sync reads — memories (the columns export and import decide on),
their evidence, the shared-record mappings — must make the next sync do the full work: each
case below changes one table in one way with plain SQL (no domain function, so a missing
trigger cannot hide behind some other write) and checks that the kept digest no longer
answers. The cases are written out here, not derived from the migration's table list, so a
table or column dropped from that list fails its case.
"""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from agentstate.memory.write import remember
from agentstate.store.migrations import apply_migrations
from agentstate.store.principals import resolve_principal
from agentstate.sync import nothing_new, sync
from agentstate.sync.shared import change_count, stored_digest
from tests.conftest import fresh_store

NOW = "2026-01-15T09:00:00+00:00"


def _sync(store):
    return sync(store, principal=resolve_principal(store))


def _nothing_new(store):
    return nothing_new(store, principal=resolve_principal(store))

CHANGES: dict[str, str] = {
    "memories insert": (
        "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, "
        "status, confidence, created, last_confirmed, principal) SELECT 'other', 1, kind, "
        "key, scope, 'another text', 'h2', source, status, confidence, created, "
        "last_confirmed, principal FROM memories LIMIT 1"),
    "memories update": "UPDATE memories SET status = 'forgotten'",
    "memories delete": ("DELETE FROM memories WHERE row NOT IN "
                        "(SELECT memory_row FROM memory_evidence)"),
    "memory_evidence insert": (
        "INSERT INTO memory_evidence (memory_row, ref, kind, added, actor) SELECT row, "
        f"'file:README.md@abc123', 'file', '{NOW}', 'owner' FROM memories LIMIT 1"),
    "memory_evidence update": "UPDATE memory_evidence SET ref = 'file:NOTES.md@abc123'",
    "memory_evidence delete": "DELETE FROM memory_evidence",
    "shared_records insert": ("INSERT INTO shared_records (record_id, memory, version, "
                              "origin, rel) VALUES ('rec-new', 'mem:x', 1, 'import', NULL)"),
    "shared_records update": "UPDATE shared_records SET origin = 'match'",
    "shared_records delete": "DELETE FROM shared_records",
}


def _idle(store) -> None:
    """Sync until a sync finds nothing to do and keeps its digest."""
    for _ in range(3):
        _sync(store)
        if _nothing_new(store) is not None:
            return
    raise AssertionError("three syncs never reached a fixed point")


@pytest.fixture
def store():
    """A store with two memories (one with evidence, one bare), synced to a fixed point."""
    with fresh_store() as store:
        _fill(store)
        yield store


def _fill(store) -> None:
    remember(store, "the api listens on port 8080", kind="fact", source="user",
             evidence=["user"], principal=resolve_principal(store))
    # No evidence: the memories delete case removes this one without touching foreign keys.
    store.conn.execute(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES ('bare', 1, 'fact', 'repo', "
        f"'the queue drains at two', 'h1', 'user', 'active', 0.9, '{NOW}', '{NOW}', 'owner')")
    _idle(store)


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_each_change_to_a_synced_table_makes_the_next_sync_work(store, case):
    before = change_count(store)
    assert stored_digest(store) and _nothing_new(store) is not None
    cursor = store.conn.execute(CHANGES[case])
    assert cursor.rowcount > 0, "the case changed nothing: it proves nothing"
    assert change_count(store) > before
    assert _nothing_new(store) is None  # the next sync does the full work


@pytest.mark.parametrize("column, value", [
    ("id", "'renamed'"), ("version", "7"), ("kind", "'preference'"), ("key", "'port'"),
    ("scope", "'user'"), ("text", "'changed'"), ("norm_hash", "'h9'"), ("source", "'tool'"),
    ("status", "'candidate'"), ("valid_until", f"'{NOW}'"), ("created", f"'{NOW}x'"),
    ("supersedes", "3"), ("principal", "'someone'"), ("purged", "1"),
])
def test_each_column_a_sync_decides_on_moves_the_counter(store, column, value):
    before = change_count(store)
    store.conn.execute(f"UPDATE memories SET {column} = {value} WHERE id = 'bare'")
    assert change_count(store) == before + 1, column


def test_a_confirmation_does_not_cost_the_next_sync_a_full_run(store):
    """confidence and last_confirmed are never exported: refreshing them changes nothing a
    sync writes, so the kept digest still answers."""
    before = change_count(store)
    store.conn.execute(f"UPDATE memories SET confidence = 0.5, last_confirmed = '{NOW}'")
    assert change_count(store) == before and _nothing_new(store) is not None


def test_without_the_counter_row_nothing_is_assumed(store):
    store.conn.execute("DELETE FROM sync_changes")
    assert _nothing_new(store) is None
    result = _sync(store)  # the full sync runs and keeps no digest it cannot check
    assert result.exported == 0 and _nothing_new(store) is None


def test_a_store_upgraded_to_the_counter_counts_from_then_on(tmp_path):
    db = sqlite_utils.Database(sqlite3.connect(tmp_path / "old.db", isolation_level=None))
    apply_migrations(db, upto="m020_event_vectors")
    db.conn.execute(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES ('old', 1, 'fact', 'repo', "
        f"'kept', 'h', 'user', 'active', 0.9, '{NOW}', '{NOW}', 'owner')")
    assert "m032_sync_change_counter" in apply_migrations(db)
    assert db.conn.execute("SELECT changes FROM sync_changes").fetchall() == [(0,)]
    db.conn.execute("UPDATE memories SET status = 'forgotten'")
    assert db.conn.execute("SELECT changes FROM sync_changes").fetchall() == [(1,)]
