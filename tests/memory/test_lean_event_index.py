"""The event index near its content (issue 24, migrations m015 and m016): the trigram index
holds only texts with CJK, fragments of ASCII words are still found, the triggers keep the
contentless index consistent through updates and deletes, and an upgraded store ends where
a fresh one does."""

from __future__ import annotations

import sqlite3

from agentstate.memory.event_index_tables import CJK_GLOB
from agentstate.memory.indexes import check_indexes, rebuild_indexes
from agentstate.memory.search import search_events
from agentstate.memory.terms import _CJK
from agentstate.runs.log import append_event, start_run


def _trigram_rows(conn: sqlite3.Connection) -> int:
    # Contentless FTS5 keeps one docsize row per indexed text.
    return conn.execute("SELECT count(*) FROM events_tri_docsize").fetchone()[0]


def _tri_match(conn: sqlite3.Connection, gram: str) -> int:
    return conn.execute("SELECT count(*) FROM events_tri WHERE events_tri MATCH ?",
                        (f'"{gram}"',)).fetchone()[0]


def test_the_trigger_glob_is_the_searchs_cjk_class():
    """The migration froze the CJK ranges; the query planner reads terms._CJK. If one moves
    without the other, CJK texts would miss the index the planner sends CJK queries to."""
    assert CJK_GLOB == f"*[{_CJK}]*"


def test_only_texts_with_cjk_enter_the_trigram_index(store):
    run, _ = start_run(store, "g")
    append_event(store, run.ref, "observation", "FAILED tests/test_login.py::test_timeout")
    append_event(store, run.ref, "observation", "ﾃｽﾄ failed")  # half-width katakana
    cjk = append_event(store, run.ref, "observation", "登录接口在高并发时返回错误 (HTTP 500)")
    conn = store.conn
    assert _trigram_rows(conn) == 2
    assert _tri_match(conn, "log") == 0 and _tri_match(conn, "500") == 1
    assert [h.ref for h in search_events(store, "并发")] == [cjk.ref]
    assert check_indexes(conn) == []


def test_updates_and_deletes_keep_the_contentless_index_consistent(store):
    """A 'delete' on a contentless index must name what was inserted: text that moves in or
    out of CJK (a purge scrubbing it, say) and deleted rows of both kinds leave the index
    whole. Planting the bug (deleting ASCII texts from the trigram index too) fails the
    integrity check."""
    run, _ = start_run(store, "g")
    ascii_event = append_event(store, run.ref, "note", "plain words only")
    cjk_event = append_event(store, run.ref, "note", "数据库迁移失败")
    conn = store.conn
    with store.transaction():
        conn.execute("UPDATE events SET text = '变成中文了' WHERE id = ?", (ascii_event.id,))
        conn.execute("UPDATE events SET text = 'now ascii' WHERE id = ?", (cjk_event.id,))
    assert _trigram_rows(conn) == 1 and check_indexes(conn) == []
    assert [h.ref for h in search_events(store, "中文")] == [ascii_event.ref]
    assert search_events(store, "迁移") == []
    with store.transaction():
        conn.execute("DELETE FROM events WHERE id IN (?, ?)", (ascii_event.id, cjk_event.id))
    assert _trigram_rows(conn) == 0 and check_indexes(conn) == []


def test_fragments_of_ascii_words_are_found_by_prefix_and_recent_scan(store, monkeypatch):
    """Without ASCII texts in the trigram index: a word's start is found in every text (the
    word index by prefix), a piece inside a word in the newest SCAN_LIMIT texts."""
    import agentstate.memory.search as search

    run, _ = start_run(store, "g")
    old = append_event(store, run.ref, "note", "ran pytest with -x on the whole suite")
    inside = append_event(store, run.ref, "note", "settings live in myconfig.yaml")
    for i in range(3):
        append_event(store, run.ref, "note", f"unrelated note {i}")
    assert [h.ref for h in search_events(store, "pytes")] == [old.ref]
    assert [h.ref for h in search_events(store, "config")] == [inside.ref]
    assert [h.ref for h in search_events(store, "CONFIG", run_id=run.ref)] == [inside.ref]
    monkeypatch.setattr(search, "SCAN_LIMIT", 2)  # the scan no longer reaches it
    assert search_events(store, "config") == []  # the documented price of m015
    assert [h.ref for h in search_events(store, "pytes")] == [old.ref]  # prefixes: all


def test_rebuild_refills_only_cjk_texts(store):
    run, _ = start_run(store, "g")
    append_event(store, run.ref, "note", "a plain observation")
    cjk = append_event(store, run.ref, "note", "缓存失效导致超时")
    conn = store.conn
    conn.execute("INSERT INTO events_tri(events_tri) VALUES ('delete-all')")
    rebuild_indexes(store)
    assert _trigram_rows(conn) == 1 and check_indexes(conn) == []
    assert [h.ref for h in search_events(store, "失效")] == [cjk.ref]


def test_upgrade_moves_ascii_texts_out_of_the_trigram_index(tmp_path):
    from agentstate.store.db import connect
    from agentstate.store.migrations import apply_migrations

    db = connect(tmp_path / "state.db")
    apply_migrations(db, upto="m004_events_hook_keys")
    conn = db.conn
    conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                 "VALUES ('r0000001', 'g', 'active', 't', 't')")
    conn.executemany(
        "INSERT INTO events (id, run, seq, kind, text, source, ts) "
        "VALUES (?, 'r0000001', ?, 'note', ?, 'user', 't')",
        [("e1", 1, "legacy quokka observation in quokkaconfig.toml"),
         ("e2", 2, "旧的日志 about the quokka"), ("e3", 3, "another plain text")])
    assert _trigram_rows(conn) == 3
    applied = apply_migrations(db)
    assert applied[:2] == ["m015_trigram_for_cjk_events", "m016_events_lean_indexes"]
    assert _trigram_rows(conn) == 1 and check_indexes(conn) == []

    class Shim:
        conn = db.conn

    assert [h.ref for h in search_events(Shim(), "日志")] == ["evt:e2"]
    assert {h.ref for h in search_events(Shim(), "quokka")} == {"evt:e1", "evt:e2"}
    assert [h.ref for h in search_events(Shim(), "config")] == ["evt:e1"]  # recent scan
    conn.execute("INSERT INTO events (id, run, seq, kind, text, source, ts) "
                 "VALUES ('e4', (SELECT row FROM runs WHERE id = 'r0000001'), 4, 'note', "
                 "'新的一条', 'user', 't')")
    conn.execute("DELETE FROM events WHERE id IN ('e2', 'e3')")
    assert _trigram_rows(conn) == 1 and check_indexes(conn) == []
    conn.close()


def test_lookups_by_resolves_and_supersedes_use_the_partial_indexes(store):
    """m016 keeps only the events that resolve or supersede another in those indexes; the
    lookups the run log makes still go through them, not through a table scan."""
    conn = store.conn
    for column in ("resolves", "supersedes"):
        plan = " ".join(row[3] for row in conn.execute(
            f"EXPLAIN QUERY PLAN SELECT id FROM events WHERE {column} = ?", ("evt",)))
        assert f"USING INDEX events_{column}" in plan, plan
    plan = " ".join(row[3] for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT seq FROM events WHERE run = ? AND kind = ? "
        "ORDER BY seq DESC LIMIT 5", ("r", "note")))
    assert "events_run_kind_seq" in plan, plan
