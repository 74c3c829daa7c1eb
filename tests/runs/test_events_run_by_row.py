"""Events naming their run by the run's integer row (m067): a store made before is converted
in place with every byte of every event reachable as before, each event under its own run,
its row (the index's and the vectors' key) kept, every index and trigger made again; readers
still get the run's TEXT id, and every look-up by run stays on an index."""

from __future__ import annotations

import sqlite3

import pytest

from agentstate.memory.indexes import check_indexes
from agentstate.memory.search import search_events
from agentstate.runs.checkpoint import working_state
from agentstate.runs.event_sql import run_id_of
from agentstate.runs.log import append_event, get_event, get_run, list_events, start_run
from agentstate.runs.lookups import (
    event_id_at,
    event_ids_of_run,
    event_positions,
    events_at,
    newest_events,
    newest_live_events,
)
from agentstate.runs.timeline import event_page
from agentstate.runs.tool_results import open_failures
from agentstate.store.db import open_store
from tests.conftest import store_before

# Ids that sort against the order the runs were made in, so a run mapped by the order of
# its id, or by position, lands on another run.
RUNS = ["zzrun00001", "aarun00002", "mmrun00003", "bbrun00004"]  # the last has no event
COLUMNS = ("id, {run}, seq, kind, CAST(text AS BLOB), source, ts, meta, resolves, supersedes, "
           "import_key, collected_at, body_hash, row")
OLD = COLUMNS.format(run="run")
NEW = COLUMNS.format(run=run_id_of("events"))


def _old_store(tmp_path):
    """A store as m066 left it: four runs, events of three of them interleaved (links,
    an import key, meta, a body gc collected, CJK text), a vector per event, a tool call
    naming an event. Returns (repo, what was stored)."""
    with store_before(tmp_path, "m066_line_ids") as (repo, conn):
        conn.executemany("INSERT INTO runs (id, goal, status, created, updated) "
                         "VALUES (?, ?, 'active', 't', 't')", [(r, f"goal {r}") for r in RUNS])
        rows = []
        for n in range(30):
            run = RUNS[n % 3]
            seq = n // 3 + 1
            kind = ("note", "tool", "question", "verify", "answer")[n % 5]
            rows.append((f"ev{n:08d}", run, seq, kind, f"entry {n} of {run}: kites 日志{n}",
                         "tool:pytest" if kind == "tool" else "user",
                         f"2026-01-01T00:{n:02d}:00.000000Z",
                         '{"exit_code": 1}' if kind == "tool" else f'{{"n": {n}}}',
                         f"ev{n - 3:08d}" if kind == "answer" else None,
                         f"key{n}" if n % 7 == 0 else None))
        conn.executemany("INSERT INTO events (id, run, seq, kind, text, source, ts, meta, "
                         "resolves, import_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        conn.execute("UPDATE events SET collected_at = 't2', body_hash = 'h' WHERE seq = 2")
        conn.execute("INSERT INTO vector_models (id, name) VALUES (1, 'm')")
        conn.execute("INSERT INTO event_vectors (row, model, vec) SELECT row, 1, "
                     "CAST(id AS BLOB) FROM events")
        conn.execute("INSERT INTO tool_calls (id, event, run, command, program, allowed, ts) "
                     "VALUES ('t1', 'ev00000004', 'aarun00002', '[]', 'pytest', 1, 't')")
        stored = {
            "events": conn.execute(f"SELECT {OLD} FROM events ORDER BY id").fetchall(),
            "vectors": conn.execute("SELECT * FROM event_vectors ORDER BY row").fetchall(),
            "index": conn.execute("SELECT * FROM events_fts_docsize ORDER BY id").fetchall(),
            "schema": dict(conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'events' "
                "AND type IN ('index', 'trigger')")),
        }
    return repo, stored


@pytest.fixture
def upgraded(tmp_path):
    repo, stored = _old_store(tmp_path)
    store = open_store(start=repo)
    yield store, stored
    store.close()


def test_an_old_store_keeps_every_event_byte_under_its_own_run(upgraded):
    store, stored = upgraded
    conn = store.conn
    assert "m067_events_name_run_by_row" in store.upgraded
    assert conn.execute(f"SELECT {NEW} FROM events ORDER BY id").fetchall() == stored["events"]
    # The row holds the run's integer, the one its runs row carries.
    assert conn.execute("SELECT count(*) FROM events e JOIN runs r ON r.row = e.run "
                        "WHERE typeof(e.run) = 'integer'").fetchone() == (30,)
    # Nothing indexed or embedded again: the same index rows and vectors, under the same rows.
    assert conn.execute("SELECT * FROM event_vectors ORDER BY row").fetchall() == \
        stored["vectors"]
    assert conn.execute("SELECT * FROM events_fts_docsize ORDER BY id").fetchall() == \
        stored["index"]
    assert check_indexes(conn) == []
    # Every index and trigger made again as it was.
    assert dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'events' "
                             "AND type IN ('index', 'trigger')")) == stored["schema"]
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_readers_get_the_runs_text_id_as_before(upgraded):
    store, stored = upgraded
    by_run: dict[str, list[str]] = {}
    for row in sorted(stored["events"], key=lambda r: (r[6], r[2])):  # time, then seq
        by_run.setdefault(row[1], []).append(f"evt:{row[0]}")
    for run in RUNS:
        assert [e.ref for e in list_events(store, f"run:{run}")] == by_run.get(run, [])
        assert [f"evt:{i}" for i in event_ids_of_run(store, run)] == by_run.get(run, [])
    event = get_event(store, "evt:ev00000004")
    assert (event.run, event.seq, event.resolves) == ("run:aarun00002", 2, "evt:ev00000001")
    assert event_positions(store, ["ev00000004"]) == {"ev00000004": ("aarun00002", 2)}
    assert [line[:3] for line in events_at(store, [("aarun00002", 2), ("nosuchrun1", 1)])] == \
        [("ev00000004", "aarun00002", 2)]
    assert event_id_at(store, "mmrun00003", 3) == "ev00000008"
    assert {h.run for h in search_events(store, "kites", run_id="run:zzrun00001")} == \
        {"run:zzrun00001"}
    assert {h.run for h in search_events(store, "kites", exclude_run_id="run:nosuchrun1")} \
        == {f"run:{r}" for r in RUNS[:3]}
    assert event_page(store, "run:mmrun00003", limit=3).events[0].run == "run:mmrun00003"


def test_a_new_run_takes_the_next_number_and_vacuum_keeps_it(upgraded):
    store, _ = upgraded
    conn = store.conn
    run, _ = start_run(store, "after the upgrade")
    assert conn.execute("SELECT row FROM runs WHERE id = ?", (run.id,)).fetchone() == (5,)
    event = append_event(store, run.ref, "note", "a blimp over the harbour")
    assert event.run == run.ref and event.seq == 1
    assert conn.execute("SELECT run FROM events WHERE id = ?", (event.id,)).fetchone() == (5,)
    with store.transaction():  # a hole below the newest run, which VACUUM may renumber
        conn.execute("DELETE FROM runs WHERE id = 'bbrun00004'")
    before = conn.execute("SELECT id, row FROM runs ORDER BY id").fetchall()
    conn.execute("VACUUM")
    assert conn.execute("SELECT id, row FROM runs ORDER BY id").fetchall() == before
    assert get_event(store, event.ref).run == run.ref
    assert [e.ref for e in list_events(store, run.ref)] == [event.ref]
    again, _ = start_run(store, "after the vacuum")
    assert conn.execute("SELECT row FROM runs WHERE id = ?", (again.id,)).fetchone() == (6,)


def test_every_look_up_by_run_reads_an_index(upgraded):
    """Each statement the run log's readers issue for one run: no full scan of `events`."""
    store, _ = upgraded
    run = get_run(store, "run:aarun00002")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    list_events(store, run.ref)
    list_events(store, run.ref, kind="tool", limit=2)
    event_page(store, run.ref, limit=2, before=6)
    event_page(store, run.ref, kind="question", limit=2)
    working_state(store, run, per_group=1)
    newest_events(store, run.id, 3)
    newest_live_events(store, run.id, ["tool"], 3)
    open_failures(store, run)
    events_at(store, [(run.id, 2)])
    event_id_at(store, run.id, 2)
    store.conn.set_trace_callback(None)
    by_run = [s for s in statements if "SELECT row FROM runs WHERE id" in s
              or "JOIN runs r ON r.id" in s]
    assert len(by_run) >= 10
    for sql in by_run:
        plan = [row[3] for row in store.conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        assert not [step for step in plan if step.startswith("SCAN e") and "events" in step
                    or step in ("SCAN events", "SCAN e")], (sql, plan)
        assert any("USING" in step and ("events_run_kind_seq" in step or
                                        "sqlite_autoindex_events_2" in step)
                   for step in plan), (sql, plan)


def test_an_event_must_name_a_run_that_exists(upgraded):
    store, _ = upgraded
    with pytest.raises(sqlite3.IntegrityError), store.transaction() as conn:
        conn.execute("INSERT INTO events (id, run, seq, kind, text, source, ts) "
                     "VALUES ('x1', 99, 1, 'note', 'orphan', 'user', 't')")
