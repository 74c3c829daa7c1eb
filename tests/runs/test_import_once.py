"""What an imported record costs in Python (issue 24): its import key computed once, its JSON
walked once, its meta serialised once — and what that must not lose: the key is the one
earlier versions stored (so importing a file again still adds nothing), and every limit on a
record's JSON still refuses it on that one walk."""

from __future__ import annotations

import json
import sqlite3

import pytest

import agentstate.runs.import_record as import_record
import agentstate.runs.importer as importer
import agentstate.store.limits as limits
from agentstate.runs.importer import ImportLine, import_events, import_key

RECORD = {"kind": "note", "text": "rebuilt the parser cache", "id": "x1",
          "meta": {"exit_code": 1, "path": "é"}}


def test_the_key_is_the_one_earlier_versions_stored():
    # Pinned: a store written before keeps its keys, and a re-import must find them.
    assert import_key("x1", RECORD) == "8480a18f073cda9eefad4ef8731c92e6"
    assert import_key(2, {"kind": "observation", "text": "tests fail",
                          "ts": "2026-01-10T08:00:00Z"}) == "464d2080427ab5c2622df799907150fc"


def test_each_stored_key_is_its_records_identity_and_content(store):
    records = [RECORD, {"kind": "note", "text": "no id: its position"},
               ImportLine(7, {"kind": "note", "text": "a line with a numeric id", "id": 12}),
               ImportLine(9, {"kind": "note", "text": "a line without an id"})]
    first = import_events(store, records, goal="keys")
    stored = store.conn.execute("SELECT text, import_key FROM events ORDER BY seq").fetchall()
    assert stored == [(RECORD["text"], import_key("x1", RECORD)),
                      ("no id: its position", import_key(2, records[1])),
                      ("a line with a numeric id", import_key(12, records[2].data)),
                      ("a line without an id", import_key(9, records[3].data))]
    again = import_events(store, records, run_ref=first.run)
    assert (again.imported, again.duplicates) == (0, 4)


def _records(n: int) -> list[dict]:
    return [{"kind": "note", "text": f"step {i}", "id": f"r{i}", "meta": {"step": i}}
            for i in range(n)]


def test_a_record_is_keyed_walked_and_its_meta_serialised_once(store, monkeypatch):
    import_events(store, _records(1), goal="costs")  # the run exists: keys are looked up
    keyed: list[object] = []
    walked: list[object] = []
    serialised: list[object] = []
    real_key, real_walk, real_dumps = importer.import_key, limits.check_json, json.dumps

    def key(position, data):
        keyed.append(position)
        return real_key(position, data)

    def walk(value, what, depth=0):
        if depth == 0:
            walked.append(value)
        return real_walk(value, what, depth)

    def dumps(value, *args, **kwargs):
        serialised.append(value)
        return real_dumps(value, *args, **kwargs)

    monkeypatch.setattr(importer, "import_key", key)
    monkeypatch.setattr(import_record, "check_json", walk)
    monkeypatch.setattr(limits, "check_json", walk)
    monkeypatch.setattr(json, "dumps", dumps)
    records = _records(31)[1:]
    result = import_events(store, records, goal="costs", batch_size=7)
    assert result.imported == 30
    assert sorted(keyed) == sorted(r["id"] for r in records)
    assert [w for w in walked if w is not None] == records  # each record once, meta inside
    metas = [value for value in serialised if any(value is r["meta"] for r in records)]
    assert len(metas) == 30


@pytest.mark.parametrize("meta, problem", [
    ({"note": "a\ud800b"}, "not valid Unicode"),
    ({"deep": json.loads("[" * 40 + "]" * 40)}, "nested deeper"),
    ({"n": 2**70}, "integer beyond"),
    ({"x": float("inf")}, "non-finite"),
    ({"x": "y" * 25_000}, "the limit is"),
])
def test_every_limit_still_refuses_a_record_on_its_one_walk(store, meta, problem):
    records = [{"kind": "note", "text": "kept before"},
               {"kind": "note", "text": "a bad meta", "meta": meta},
               {"kind": "note", "text": "kept after"}]
    # Into a run this import creates, then into that run again (keys looked up first).
    first = import_events(store, records, goal="limits")
    again = import_events(store, records, run_ref=first.run)
    for result in (first, again):
        assert result.malformed == 1 and problem in result.rejected[0].reason
    assert (first.imported, again.imported, again.duplicates) == (2, 0, 2)
    texts = [r[0] for r in store.conn.execute("SELECT text FROM events ORDER BY seq")]
    assert texts == ["kept before", "kept after"]


def test_a_record_given_twice_in_a_new_run_is_stored_once(store):
    # A new run is not asked for keys (it holds only what this import wrote): the unique
    # index on (run, import_key) still refuses the second copy, in a later batch or the same.
    records = _records(5) + [_records(5)[1], _records(5)[4]]
    result = import_events(store, records, goal="twice", batch_size=3)
    assert (result.created_run, result.imported, result.duplicates) == (True, 5, 2)
    db = store.conn
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 5
    with pytest.raises(sqlite3.IntegrityError):  # the index the importer leans on
        db.execute("INSERT INTO events (id, run, seq, kind, text, source, ts, import_key) "
                   "SELECT 'copy', run, 99, kind, text, source, ts, import_key FROM events "
                   "LIMIT 1")
