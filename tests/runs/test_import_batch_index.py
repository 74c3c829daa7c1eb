"""A bulk import's events are indexed for search once a batch (m056's marker, m057's
triggers), not by the per-event trigger: the same rows, the same index, nothing left held.
Real stores, compared with `bench/import_rows.py`'s reading of what an import stored."""

from __future__ import annotations

import pytest

from agentstate.errors import InvalidInput
from agentstate.memory.search import search_events
from agentstate.runs.importer import import_events
from agentstate.runs.log import append_event, start_run
from bench.import_rows import stored
from tests.conftest import fresh_store


def _records() -> list[dict]:
    records: list[dict] = []
    for i in range(40):
        ts = f"2026-01-15T10:{i // 60:02d}:{i % 60:02d}Z"
        text = f"step {i}: rebuilt the parser cache for module{i}word"
        if i % 7 == 3:
            text = f"東京の設定 {i} を確認した: cache{i}kanji"  # CJK: the trigram index too
        records.append({"kind": "note", "text": text, "ts": ts, "id": f"r{i}",
                        "meta": {"step": i}})
    records[10] = {"kind": "question", "text": "why does the parser cache miss?",
                   "ts": "2026-01-15T10:00:10Z", "id": "q"}
    records[11] = {"kind": "answer", "text": "the key held the mtime", "resolves": "q",
                   "ts": "2026-01-15T10:00:11Z", "id": "a"}
    records[20] = {"kind": "checkpoint", "text": "halfway: cache rebuilt, ピザ pending",
                   "ts": "2026-01-15T10:00:20Z", "id": "c"}
    return records


def _imported(store, batch_size: int) -> dict:
    # Events logged before the import: the batch's index rows must follow theirs.
    run, _ = start_run(store, "index a batch")
    append_event(store, run.ref, "note", "logged before: 設定ファイル", ts="2026-01-15T09:59:00Z")
    append_event(store, run.ref, "observation", "logged before: cache cold",
                 ts="2026-01-15T09:59:30Z")
    result = import_events(store, _records(), run_ref=run.ref, batch_size=batch_size,
                           extra_kinds=frozenset({"checkpoint"}))
    assert result.imported == 40 and not result.rejected
    return stored(store.conn)


def test_a_batch_stores_and_indexes_what_one_record_at_a_time_does():
    # batch_size=1: every record alone, through the per-event trigger (what a batch of
    # many did before m057); 500: the whole import held and indexed at the end.
    with fresh_store(seed=3) as one_by_one, fresh_store(seed=3) as batched:
        expected, got = _imported(one_by_one, 1), _imported(batched, 500)
    assert len(got["events"]) == 42 and len(got["search map"]) == 42
    assert got["trigram vocabulary"], "the CJK texts are in the trigram index"
    for part in expected:
        assert got[part] == expected[part], part


def test_the_search_finds_every_imported_event_and_nothing_stays_held():
    with fresh_store() as store:
        _imported(store, 500)
        assert store.value("SELECT count(*) FROM events_batch") == 0
        for i in (0, 1, 39):
            hits = search_events(store, f"module{i}word")
            assert [h.text for h in hits] == [f"step {i}: rebuilt the parser cache for "
                                              f"module{i}word"]
        cjk = {h.text for h in search_events(store, "東京")}
        assert cjk == {f"東京の設定 {i} を確認した: cache{i}kanji" for i in (3, 17, 24, 31, 38)}
        assert [h.kind for h in search_events(store, "ピザ")] == ["checkpoint"]
        # An event logged after the import goes through the per-event trigger again.
        later = append_event(store, None, "note", "logged after the import: zeppelin")
        assert [h.ref for h in search_events(store, "zeppelin")] == [later.ref]


def test_a_strict_import_that_fails_leaves_no_marker_and_no_index_rows():
    with fresh_store() as store:
        run, _ = start_run(store, "strict")
        before = store.value("SELECT count(*) FROM events_fts_docsize")
        records = _records()
        records[30] = {"kind": "note"}  # no text: the whole import is undone
        with pytest.raises(InvalidInput):
            import_events(store, records, run_ref=run.ref, strict=True,
                          extra_kinds=frozenset({"checkpoint"}))
        assert store.value("SELECT count(*) FROM events_batch") == 0
        assert store.value("SELECT count(*) FROM events_fts_docsize") == before
        assert not search_events(store, "module1word")
        later = append_event(store, run.ref, "note", "after the failed import: zeppelin")
        assert [h.ref for h in search_events(store, "zeppelin")] == [later.ref]
