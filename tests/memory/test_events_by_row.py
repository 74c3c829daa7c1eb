"""Events keyed by an INTEGER row that the event index and the vectors name (m063): a store
made before is converted in place, every event keeping the number its search-map row had (so
nothing is indexed or embedded again), every byte of every event reachable as before, the
foreign keys that name an event still satisfied, and the triggers working on the new key."""

from __future__ import annotations

from agentstate.memory.indexes import check_indexes
from agentstate.memory.search import search_events
from agentstate.runs.event_sql import run_id_of
from agentstate.runs.log import append_event
from agentstate.store.db import connect, open_store
from agentstate.store.migrations import apply_migrations
from tests.conftest import store_before

COLUMNS = ("id, run, seq, kind, text, source, ts, meta, resolves, supersedes, import_key, "
           "collected_at, body_hash")
# The same columns read from a store at the newest version (the run as its TEXT id, m067).
READ = COLUMNS.replace("run,", f"{run_id_of('events')},")
TEXTS = ["the zeppelin landed at noon", "pytest failed in the parser module",
         "缓存命中率下降了一半", "the zeppelin left again", "a note without anything odd",
         "the parser was fixed after lunch"]


def _old_store(tmp_path):
    """A store made before m102 with its events logged newest time first, so that m102's
    backfill (in time order) numbered them against their insertion order; then brought to
    m062 with a vector per event keyed by its map row, one map row lost (an event the index
    never had), a tool call and an event citing events. Returns (repo, what was stored)."""
    with store_before(tmp_path, "m101_memories") as (repo, conn):
        conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                     "VALUES ('r0000001', 'g', 'active', 't', 't')")
        conn.executemany(
            "INSERT INTO events (id, run, seq, kind, text, source, ts, meta, resolves) "
            "VALUES (?, 'r0000001', ?, 'note', ?, 'user', ?, ?, ?)",
            [(f"e{n}", n, text, f"2026-01-01T00:00:{60 - n:02d}Z", f'{{"n": {n}}}',
              "e0" if n == 3 else None) for n, text in enumerate(TEXTS)])
        later = connect(tmp_path / "old.db")
        apply_migrations(later, upto="m062_vectors_by_row")
        conn.execute("INSERT INTO vector_models (id, name) VALUES (1, 'm')")
        conn.execute("INSERT INTO event_vectors (row, model, vec) SELECT row, 1, "
                     "CAST(event_id AS BLOB) FROM event_search_map")
        conn.execute("DELETE FROM event_search_map WHERE event_id = 'e4'")
        conn.execute("INSERT INTO tool_calls (id, event, run, command, program, allowed, ts) "
                     "VALUES ('t1', 'e2', 'r0000001', '[]', 'pytest', 1, 't')")
        stored = {
            "events": conn.execute(f"SELECT {COLUMNS} FROM events ORDER BY id").fetchall(),
            "rows": dict(conn.execute("SELECT event_id, row FROM event_search_map")),
            "vectors": conn.execute("SELECT row, model, vec FROM event_vectors "
                                    "ORDER BY row").fetchall(),
            "index": conn.execute("SELECT id, sz FROM events_fts_docsize").fetchall(),
        }
        later.conn.close()
    return repo, stored


def test_an_old_store_keeps_every_event_under_its_index_row(tmp_path):
    repo, stored = _old_store(tmp_path)
    # The backfill numbered in time order, against the order of insertion.
    assert stored["rows"]["e5"] < stored["rows"]["e0"]
    store = open_store(start=repo)
    try:
        assert "m063_events_keyed_by_row" in store.upgraded
        conn = store.conn
        assert conn.execute(f"SELECT {READ} FROM events ORDER BY id").fetchall() == \
            stored["events"]
        rows = dict(conn.execute("SELECT id, row FROM events"))
        assert {k: v for k, v in rows.items() if k != "e4"} == stored["rows"]
        # The event the map had lost is kept under a new number, and indexed under it (the
        # triggers take every event to be indexed); nothing else is indexed or embedded
        # again: the index's other rows and the vectors are as they were.
        assert rows["e4"] > max(stored["rows"].values())
        assert check_indexes(conn) == []
        assert [h.ref for h in search_events(store, "odd")] == ["evt:e4"]
        assert [r for r in conn.execute("SELECT id, sz FROM events_fts_docsize")
                if r[0] != rows["e4"]] == stored["index"]
        assert conn.execute("SELECT row, model, vec FROM event_vectors ORDER BY row"
                            ).fetchall() == stored["vectors"]
        # Each vector still names its event (its bytes are the event's id here).
        assert dict(conn.execute("SELECT v.row, e.id FROM event_vectors v JOIN events e "
                                 "ON e.row = v.row")) == {
            row: bytes(vec).decode() for row, _, vec in stored["vectors"]} == {
            row: event for event, row in stored["rows"].items()}
        # Each search finds what it found: the index's rows name the same events.
        assert sorted(h.ref for h in search_events(store, "zeppelin")) == ["evt:e0", "evt:e3"]
        assert [h.ref for h in search_events(store, "命中率")] == ["evt:e2"]
        # The foreign keys that name an event hold; the map and its triggers are gone.
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("SELECT event FROM tool_calls").fetchone() == ("e2",)
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = "
                            "'event_search_map' OR sql LIKE '%event_search_map%'"
                            ).fetchone() == (0,)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        store.close()


def test_the_triggers_work_on_the_new_key(tmp_path):
    repo, stored = _old_store(tmp_path)
    store = open_store(start=repo)
    try:
        conn = store.conn
        top = max(stored["rows"].values()) + 1  # e4's new number
        new = append_event(store, "run:r0000001", "note", "a blimp over the harbour")
        assert conn.execute("SELECT row FROM events WHERE id = ?", (new.id,)).fetchone() == (
            top + 1,)
        assert [h.ref for h in search_events(store, "blimp")] == [new.ref]
        with store.transaction():  # a purge scrubs a text: indexed again, its vector gone
            conn.execute("UPDATE events SET text = 'scrubbed' WHERE id = 'e1'")
        assert not search_events(store, "pytest")
        assert [h.ref for h in search_events(store, "scrubbed")] == ["evt:e1"]
        with store.transaction():
            conn.execute("DELETE FROM tool_calls")
            conn.execute("DELETE FROM events WHERE id = 'e2'")
        assert not search_events(store, "命中率")
        assert {bytes(v).decode() for (v,) in conn.execute("SELECT vec FROM event_vectors")} \
            == {"e0", "e3", "e5"}
        conn.execute("INSERT INTO events_fts(events_fts) VALUES ('integrity-check')")
        conn.execute("INSERT INTO events_tri(events_tri) VALUES ('integrity-check')")
    finally:
        store.close()


def test_vacuum_keeps_the_rows_the_index_and_vectors_name(store):
    from agentstate.runs.log import start_run

    run, _ = start_run(store, "vacuum")
    events = [append_event(store, run.ref, "note", f"entry {n} about kites") for n in range(40)]
    with store.transaction() as conn:  # holes below the newest rows, which VACUUM may fill
        conn.executemany("DELETE FROM events WHERE id = ?", [(e.id,) for e in events[:30]])
    before = dict(store.conn.execute("SELECT id, row FROM events"))
    store.conn.execute("VACUUM")
    assert dict(store.conn.execute("SELECT id, row FROM events")) == before
    assert sorted(h.ref for h in search_events(store, "kites", limit=20)) == \
        sorted(e.ref for e in events[30:])
