"""What a sync looks up in bulk instead of building per version (issue 24) still decides
the same lines and rows: an evidence line is known by its (memory record, ref) pair, and
the import reads versions' rows and purge marks without reading the versions whole."""

from __future__ import annotations

from agentstate.memory.forget import forget
from agentstate.memory.write import remember
from agentstate.sync import shared_path, sync
from agentstate.sync.records import make_record


def _lines(store, name: str) -> list[str]:
    return (shared_path(store) / name).read_text().splitlines()


def test_a_ref_already_shared_by_another_record_is_still_written_for_a_new_one(store):
    remember(store, "the cache lives in redis", kind="fact", principal="owner")
    assert sync(store, do_import=False, principal="owner").exported_evidence == 1
    remember(store, "the queue lives in rabbitmq", kind="fact", principal="owner")
    again = sync(store, do_import=False, principal="owner")
    # Both versions cite `user`: the first's line must not stand for the second's.
    assert (again.exported, again.exported_evidence) == (1, 1)
    assert len(_lines(store, "evidence.jsonl")) == 2
    assert sync(store, do_import=False, principal="owner").exported_evidence == 0


def test_a_purged_version_gains_no_evidence_from_a_pull(store):
    stored = remember(store, "the staging host is stage-7", kind="fact", principal="owner")
    sync(store, do_import=False, principal="owner")
    record_id = make_record("memory", **{k: v for k, v in _memory_fields(store).items()}).id
    forget(store, stored.ref, purge=True, reason="test", principal="owner")
    # A teammate's new evidence line for the purged record arrives.
    line = make_record("evidence", memory=record_id, ref="evt:abc123").line
    evidence = shared_path(store) / "evidence.jsonl"
    evidence.write_text(evidence.read_text() + line + "\n")
    sync(store, do_export=False, principal="owner")
    refs = store.conn.execute("SELECT ref FROM memory_evidence e JOIN memories m ON "
                              "m.row = e.memory_row WHERE m.purged").fetchall()
    assert ("evt:abc123",) not in refs


def _memory_fields(store) -> dict:
    import json

    data = json.loads(_lines(store, "memories.jsonl")[0])
    return {k: v for k, v in data.items() if k not in ("v", "type", "id")}
