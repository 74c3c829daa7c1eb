"""`agentstate gc` removing most of the run log rewrites the store (store/rewrite.py): the rows
that stay go into a new file, copied back over the live one in one SQLite transaction.

What must hold: every table's rows, the schema (tables, indexes, triggers, FTS and vector
tables, the migrations record) and the header's user version are those an in-place gc
leaves; search and recall find what stayed; removed text is in no table and not in the file;
a process killed at any step leaves the old store or the new one, never a mix; a write by
another process between the build and the copy back is never lost."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest

from agentstate.errors import AgentStateError
from agentstate.maintenance.gc import gc
from agentstate.maintenance.init import init_store
from agentstate.memory.recall import recall
from agentstate.memory.write import remember
from agentstate.runs.log import append_event, end_run, start_run
from agentstate.store import rewrite as rewrite_module
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from tests.conftest import store_pack_listing

START = "2026-01-15T09:00:00+00:00"
REMOVED_MARK = "zuluremoved"      # in every removed event's text: must leave the file
COLLECTED_MARK = "yankeecollected"  # in the cited (collected) events: must leave the file
KEPT_MARK = "xraykept"            # in the young events: must stay, and be found


def _open(root: Path, *, now: str = START, seed: int = 7):
    from datetime import datetime

    return open_store(root / ".agentstate", clock=Clock(datetime.fromisoformat(now)),
                      ids=IdSource(seed=seed))


def _build(root: Path) -> None:
    """Thirteen old events of a finished run (two cited, CJK among them), five young ones
    (the last logged with the earliest time), a memory, dense vectors for some events (and
    one for an event never logged), a kv row, a header user version; retention 30 days in
    config.toml; the store's clock is then 40 days later (`LATER`)."""
    root.mkdir(parents=True, exist_ok=True)
    init_store(target=root)
    store = _open(root)
    run, _ = start_run(store, "old work")
    old = [append_event(store, run.ref, "observation", f"{REMOVED_MARK}{n} the parser failed")
           for n in range(10)]
    old.append(append_event(store, run.ref, "observation", "数据库连接超时 " + REMOVED_MARK))
    cited = [append_event(store, run.ref, "observation", f"{COLLECTED_MARK} 配置文件格式错误"),
             append_event(store, run.ref, "observation",
                          f"{COLLECTED_MARK} the parser needs the flag")]
    end_run(store, run.ref, "done")
    remember(store, "the parser needs the flag", kind="fact", evidence=[cited[1].ref],
             principal="owner")
    store_pack_listing(store, "p1", [cited[0].ref], store.now())
    store.clock.advance(timedelta(days=35))
    young, _ = start_run(store, "young work")
    kept = [append_event(store, young.ref, "observation", f"{KEPT_MARK}{n} 缓存命中率下降")
            for n in range(4)]
    # Logged last with the earliest time of its run: its row (the index's and the vectors'
    # key) is not in time order, so rows renumbered in time order would differ.
    store.clock.advance(timedelta(days=-1))
    append_event(store, young.ref, "observation", "whiskey logged late, dated early")
    # The last is a vector whose event was never logged (a row no event has): no
    # trigger removes it in place.
    store.conn.execute("INSERT INTO vector_models (id, name) VALUES (1, 'm')")
    for event in (old[0], cited[0], kept[0]):
        store.conn.execute("INSERT INTO event_vectors (row, model, vec) SELECT row, 1, ? "
                           "FROM events WHERE id = ?", (b"\x00" * 8, event.id))
    store.conn.execute("INSERT INTO event_vectors (row, model, vec) VALUES (999999, 1, ?)",
                       (b"\x00" * 8,))
    # A kept dense ranking of event vectors (m050): the removed vectors must clear it, as
    # the triggers do in place, and count as deleted (m052); one of memories stays.
    for kind in ("event_vectors", "memory_vectors"):
        store.conn.execute("INSERT INTO dense_queries (model, kind, digest, vec, ranked) "
                           "VALUES ('m', ?, 'd', x'00', '[]')", (kind,))
    store.conn.execute("INSERT INTO kv (key, value) VALUES ('note', 'kept')")
    store.conn.execute("PRAGMA user_version = 3")
    store.close()
    config = root / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# keep_events_days = 0",
                                                 "keep_events_days = 30"))


LATER = "2026-02-24T09:00:00+00:00"


def _snapshot(db: Path) -> dict:
    """Everything a store holds, comparable between two stores: the schema, the header's
    user version, every ordinary table's rows with their rowids, and each full-text
    index's terms (its fts5vocab table: term, documents, occurrences)."""
    conn = sqlite3.connect(db)
    kinds = {r[1]: r[2] for r in conn.execute("PRAGMA main.table_list")}
    shot: dict = {
        "schema": sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")),
        "user_version": conn.execute("PRAGMA user_version").fetchone()[0],
    }
    for name, kind in kinds.items():
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        if kind == "table" and not name.startswith("sqlite_"):
            rowid = "" if "WITHOUT ROWID" in sql[0].upper() else "rowid, "
            shot[name] = sorted(map(repr, conn.execute(f"SELECT {rowid}* FROM {name}")))
        elif kind == "virtual" and "fts5vocab" in sql[0]:
            shot[name] = sorted(conn.execute(f"SELECT * FROM {name}"))
    conn.close()
    return shot


def _gc(root: Path, **kwargs):
    store = _open(root, now=LATER)
    try:
        return gc(store, principal="owner", **kwargs)
    finally:
        store.close()


def _file_bytes(root: Path) -> bytes:
    db = root / ".agentstate" / "state.db"
    return b"".join(p.read_bytes() for p in (db, Path(f"{db}-wal")) if p.exists())


@pytest.fixture
def pair(tmp_path):
    """Two identical stores (one copied from the other: the same keyed-hash key too)."""
    _build(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    return tmp_path / "a", tmp_path / "b"


def test_a_rewrite_leaves_what_an_in_place_gc_leaves_in_every_table(pair):
    rewritten, in_place = pair
    done = _gc(rewritten, rewrite=True)
    reference = _gc(in_place, rewrite=False)
    assert done.rewritten and not reference.rewritten
    assert (done.removed, done.collected) == (reference.removed, reference.collected) == (11, 2)
    after, expected = (_snapshot(r / ".agentstate" / "state.db") for r in pair)
    assert after.keys() == expected.keys()
    for name in expected:
        assert after[name] == expected[name], name
    # The comparison is not empty-handed: the tables it is about hold rows.
    assert len(after["events"]) == 7 and len(after["event_vectors"]) == 2
    assert len(after["vector_changes"]) == 1 and len(after["dense_queries"]) == 2
    assert len(after["_migrations"]) > 10 and after["user_version"] == 3
    assert any(row[0] == "events_search_ad" for row in [r[1:] for r in after["schema"]])
    conn = sqlite3.connect(rewritten / ".agentstate" / "state.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    for fts in ("memories_fts", "memories_tri"):
        conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")


def test_after_a_rewrite_search_and_recall_find_what_stayed_and_nothing_that_went(tmp_path):
    from agentstate.memory.indexes import check_indexes
    from agentstate.memory.search import search_events

    _build(tmp_path)
    assert _gc(tmp_path).rewritten  # chosen by the share removed: 11 of 17 go
    store = _open(tmp_path, now=LATER, seed=8)
    try:
        assert check_indexes(store.conn) == []
        found = search_events(store, KEPT_MARK + "2")
        assert [hit.text for hit in found][:1] == [f"{KEPT_MARK}2 缓存命中率下降"]
        assert search_events(store, REMOVED_MARK + "3") == []
        assert search_events(store, COLLECTED_MARK) == []
        tri = "SELECT count(*) FROM events_tri WHERE events_tri MATCH ?"
        assert [store.conn.execute(tri, (w,)).fetchone()[0]
                for w in ("连接超", "文件格", "命中率")] == [0, 0, 4]
        hits = recall(store, "parser flag", principal="owner", dense=False).hits
        assert [hit.text for hit in hits] == ["the parser needs the flag"]
        # The triggers are back: a new event is indexed, deleting it takes it out.
        run, _ = start_run(store, "later")
        new = append_event(store, run.ref, "observation", "mike 新的记录文本")
        assert len(search_events(store, "mike")) == 1
        store.conn.execute("DELETE FROM events WHERE id = ?", (new.id,))
        assert search_events(store, "mike") == []
    finally:
        store.close()


def test_removed_and_collected_text_leaves_every_table_and_the_file(tmp_path):
    _build(tmp_path)
    assert REMOVED_MARK.encode() in _file_bytes(tmp_path)
    _gc(tmp_path)
    data = _file_bytes(tmp_path)
    assert KEPT_MARK.encode() in data  # the check can see text when it is there
    assert REMOVED_MARK.encode() not in data and COLLECTED_MARK.encode() not in data
    assert "数据库连接超时".encode() not in data
    assert not (tmp_path / ".agentstate" / "state.db-rewrite").exists()


def test_a_copy_missing_a_table_or_trigger_is_refused_and_changes_nothing(tmp_path, monkeypatch):
    """A planted fault: a step drops a trigger (then a table) from the new file. The rewrite
    compares the schemas before copying back and refuses; the store is as it was."""
    from agentstate.memory import indexes

    _build(tmp_path)
    before = _snapshot(tmp_path / ".agentstate" / "state.db")
    real = indexes.event_index_rewrite_plan
    for drop in ("DROP TABLE rewrite.kv",
                 "CREATE TRIGGER rewrite.planted AFTER INSERT ON kv BEGIN SELECT 1; END"):
        def planted(collected, drop=drop):
            plan = real(collected)
            plan.steps.append(lambda conn, schema: conn.execute(drop))
            return plan

        monkeypatch.setattr(indexes, "event_index_rewrite_plan", planted)
        with pytest.raises(AgentStateError, match="schema differs"):
            _gc(tmp_path)
        assert _snapshot(tmp_path / ".agentstate" / "state.db") == before


def test_a_write_between_the_build_and_the_copy_back_is_never_lost(tmp_path, monkeypatch):
    _build(tmp_path)
    db = tmp_path / ".agentstate" / "state.db"

    def intrude(step):
        if step == "unlocked":
            with sqlite3.connect(db) as other:
                other.execute("INSERT INTO kv (key, value) VALUES ('intruder', 'kept')")

    monkeypatch.setattr(rewrite_module, "_reached", intrude)
    with pytest.raises(rewrite_module.StoreChanged):
        _gc(tmp_path)
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM kv WHERE key = 'intruder'").fetchone() == ("kept",)
    assert conn.execute("SELECT count(*) FROM events").fetchone() == (18,)
    conn.close()
    monkeypatch.undo()
    assert _gc(tmp_path).removed == 11  # run again, it goes through


KILL = textwrap.dedent("""
    import os, sys
    from datetime import datetime
    from agentstate.store import rewrite
    from agentstate.store.clock import Clock, IdSource
    from agentstate.store.db import open_store
    from agentstate.maintenance.gc import gc

    def stop(step):
        if step == sys.argv[2]:
            os._exit(9)

    rewrite._reached = stop
    store = open_store(sys.argv[1], clock=Clock(datetime.fromisoformat(sys.argv[3])),
                       ids=IdSource(seed=7))
    gc(store, principal="owner")
""")


@pytest.mark.parametrize("step, finished", [
    ("rows", False), ("built", False), ("unlocked", False), ("copying", False),
    ("copied", True)])
def test_a_process_killed_at_any_step_leaves_the_old_store_or_the_new_one(tmp_path, step,
                                                                         finished):
    """`copying` stops inside SQLite's copy back, after its first step has written pages
    into the write-ahead log without a commit; `copied` after the commit, before the log
    went back into the file."""
    old, new = tmp_path / "old", tmp_path / "new"
    _build(old)
    shutil.copytree(old, new)
    _gc(new)
    before = _snapshot(old / ".agentstate" / "state.db")
    proc = subprocess.run([sys.executable, "-c", KILL, str(old / ".agentstate"), step, LATER],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 9, proc.stderr
    after = _snapshot(old / ".agentstate" / "state.db")
    assert after == (_snapshot(new / ".agentstate" / "state.db") if finished else before)
    conn = sqlite3.connect(old / ".agentstate" / "state.db")
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    # The next gc clears the leftover file and finishes the work (or finds it done).
    again = _gc(old)
    assert again.removed == (0 if finished else 11)
    assert not (old / ".agentstate" / "state.db-rewrite").exists()
    assert _snapshot(old / ".agentstate" / "state.db")["events"] == \
        _snapshot(new / ".agentstate" / "state.db")["events"]


@pytest.mark.parametrize("first, second", [("t_one", "t_two"), ("t_two", "t_one")])
def test_the_tables_a_plan_names_are_copied_first_in_its_order(tmp_path, first, second):
    """A plan's condition may read a table copied before it (`rewrite.<table>`): gc's map of
    indexed events keeps the rows of the events the new file holds. Both orders are tried,
    so one of them is the opposite of the order SQLite lists the tables in."""
    from agentstate.store.rewrite import CopyPlan, Rewrite

    init_store(target=tmp_path)
    store = _open(tmp_path)
    for table in ("t_one", "t_two"):
        store.conn.execute(f"CREATE TABLE {table} (x INTEGER)")
        store.conn.executemany(f"INSERT INTO {table} VALUES (?)", [(n,) for n in range(6)])
    plan = CopyPlan(keep={first: "x < 3", second: f"x IN (SELECT x FROM rewrite.{first})"})
    with Rewrite(store) as rewrite:
        rewrite.build(plan)
        rewrite.swap()
    for table in ("t_one", "t_two"):
        assert store.conn.execute(f"SELECT x FROM {table} ORDER BY x").fetchall() == \
            [(0,), (1,), (2,)], table
    store.close()


def test_a_small_removal_stays_in_place(tmp_path):
    _build(tmp_path)
    store = _open(tmp_path, now=LATER, seed=8)
    run = store.conn.execute("SELECT id FROM runs WHERE goal = 'young work'").fetchone()[0]
    for n in range(30):  # now more rows stay than go
        append_event(store, f"run:{run}", "observation", f"more young text {n}")
    store.close()
    done = _gc(tmp_path)
    assert done.removed == 11 and not done.rewritten and done.vacuumed
    assert REMOVED_MARK.encode() not in _file_bytes(tmp_path)
