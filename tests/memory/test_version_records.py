"""Stored memory versions cross module boundaries as frozen records, not dict rows."""

from __future__ import annotations

import dataclasses

import pytest

from agentstate.memory.bulk_reads import all_version_rows
from agentstate.memory.forget import forget
from agentstate.memory.model import (
    MemoryVersion,
    chain_rows,
    current_memory_version,
    rows_with_content,
    with_evidence_refs,
)
from agentstate.memory.status import MemoryStatus
from agentstate.memory.write import remember
from agentstate.store.principals import resolve_principal


def test_the_record_names_every_column_of_the_table(store):
    # A column added to `memories` without a field would be silently dropped by
    # version_from_row; one removed would make every read fail.
    columns = [r[1] for r in store.conn.execute("PRAGMA table_info(memories)")]
    names = [f.name for f in dataclasses.fields(MemoryVersion) if f.name != "evidence_refs"]
    assert sorted(columns) == sorted(names)


def test_reads_return_frozen_records_with_typed_fields(store):
    first = remember(store, "the build uses make", kind="fact", key="build", source="user",
                     principal=resolve_principal(store))
    remember(store, "the build uses just", kind="fact", key="build", source="user",
             principal=resolve_principal(store))
    memory_id = first.ref.removeprefix("mem:").split("@")[0]
    rows = chain_rows(store, memory_id)
    assert [type(r) for r in rows] == [MemoryVersion, MemoryVersion]
    assert [(r.version, r.status, r.supersedes) for r in rows] == [
        (1, "superseded", None), (2, "active", 1)]
    assert rows[0].purged is False and rows[1].ref == f"mem:{memory_id}@v2"
    assert rows[1].status is MemoryStatus.ACTIVE
    current = current_memory_version(rows, store.now())
    assert current is not None and current.text == "the build uses just"
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].status = "active"  # type: ignore[misc]
    assert all_version_rows(store) == rows
    assert rows_with_content(store, "The build uses MAKE.", "repo", "fact") == [rows[0]]


def test_a_purge_reads_evidence_into_a_copy_and_leaves_the_record_alone(store):
    result = remember(store, "the deploy key lives in vault", kind="fact", source="user",
                      principal=resolve_principal(store))
    [row] = all_version_rows(store)
    [loaded] = with_evidence_refs(store.conn, [row])
    assert loaded.evidence_refs == ("user",) and row.evidence_refs == ()
    forget(store, result.ref, purge=True, reason="secret location",
           principal=resolve_principal(store))
    [after] = all_version_rows(store)
    assert after.purged is True and after.text == "" and after.status == "forgotten"
