"""The shared full-text search: events by trigger and backfill, CJK, pruning, bad queries."""

from __future__ import annotations

import sqlite3

import pytest

from agentstate.errors import InvalidInput
from agentstate.memory.query_plan import EVENTS, plan_query
from agentstate.memory.search import search_events
from agentstate.memory.terms import split_query
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal


def test_events_are_indexed_by_trigger_and_filtered_by_run(store):
    a, _ = start_run(store, "first")
    b, _ = start_run(store, "second")
    e1 = append_event(store, a.ref, "observation", "the upload endpoint returns 413 for big files")
    e2 = append_event(store, b.ref, "observation", "upload limits are set in nginx.conf")
    append_event(store, b.ref, "note", "lunch")
    hits = search_events(store, "upload")
    assert {h.ref for h in hits} == {e1.ref, e2.ref}
    assert [h.ref for h in search_events(store, "upload", run_id=a.id)] == [e1.ref]
    assert [h.ref for h in search_events(store, "upload", exclude_run_id=a.ref)] == [e2.ref]
    assert [h.ref for h in search_events(store, "upload", kinds=["note"])] == []
    hit = search_events(store, "413 big files")[0]
    assert (hit.ref, hit.run, hit.kind, hit.source) == (e1.ref, a.ref, "observation", "user")
    assert 0 < hit.score <= 1 and hit.ts


def test_event_search_cjk(store):
    run, _ = start_run(store, "调查")
    e = append_event(store, run.ref, "observation", "登录接口在高并发时返回错误")
    append_event(store, run.ref, "observation", "the login page works")
    assert [h.ref for h in search_events(store, "登录接口")] == [e.ref]
    assert [h.ref for h in search_events(store, "并发")] == [e.ref]



def test_a_short_cjk_query_in_one_run_falls_back_to_fragments(store):
    # A one-character CJK segment makes the search scan recent texts; when nothing matches,
    # the fallback to word fragments must still narrow by run (its condition was once
    # rewritten into a WHERE clause by the scan, and the fallback failed with a SQL error).
    run, _ = start_run(store, "login")
    other, _ = start_run(store, "elsewhere")
    e = append_event(store, run.ref, "note", "the login test fails on python")
    append_event(store, other.ref, "note", "the login page works")
    assert search_events(store, "中 zzzqqq", run_id=run.id) == []
    assert [h.ref for h in search_events(store, "中 logi", run_id=run.id)] == [e.ref]

def test_migration_backfills_events_logged_before_it(tmp_path):
    from agentstate.store.db import connect
    from agentstate.store.migrations import apply_migrations

    path = tmp_path / "state.db"
    db = connect(path)
    apply_migrations(db, upto="m001_runs_events")
    db.conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                    "VALUES ('r0000001', 'g', 'active', 't', 't')")
    db.conn.execute("INSERT INTO events (id, run, seq, kind, text, source, ts) VALUES "
                    "('e0000001', 'r0000001', 1, 'note', 'legacy quokka observation', 'user', 't')")
    applied = apply_migrations(db)
    assert "m101_memories" in applied and "m102_event_search" in applied

    class Shim:
        conn = db.conn

    hits = search_events(Shim(), "quokka")
    assert [h.ref for h in hits] == ["evt:e0000001"]
    db.conn.execute("DELETE FROM events WHERE id = 'e0000001'")
    assert search_events(Shim(), "quokka") == []
    db.conn.close()


@pytest.mark.parametrize("query", ["", "   ", "!!!", "...?", "()[]{}", "—"])
def test_queries_without_words_are_invalid(store, query):
    with pytest.raises(InvalidInput):
        search_events(store, query)


def test_split_query_handles_mixed_scripts():
    words, cjk = split_query("Fix the 数据库 migration in café.py テスト")
    assert words == ["fix", "the", "migration", "in", "cafe", "py"]
    assert cjk == ["数据库", "テスト"]


def test_stop_words_and_common_terms_are_pruned(store):
    run, _ = start_run(store, "g")
    with store.transaction():
        for i in range(80):
            append_event(store, run.ref, "note", f"build step {i} finished for the project")
        append_event(store, run.ref, "note", "build step for the walrus target failed")
    plan = plan_query(store, "the build walrus", EVENTS)
    assert plan.stop_words == ["the"] and plan.common == ["build"] and plan.words == ["walrus"]
    assert search_events(store, "the build walrus")[0].text.startswith("build step for the walrus")
    assert len(search_events(store, "the", limit=5)) == 5  # only stop words: still searched


def test_fts_tables_exist_with_expected_tokenizers(store):
    conn: sqlite3.Connection = store.conn
    sql = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                            "('memories_fts', 'memories_tri', 'events_fts', 'events_tri')"))
    assert "remove_diacritics" in sql["memories_fts"] and "trigram" in sql["memories_tri"]
    assert "remove_diacritics" in sql["events_fts"] and "trigram" in sql["events_tri"]


def test_short_cjk_queries_use_trigram_prefixes_not_only_the_recent_scan(store, monkeypatch):
    import agentstate.memory.search as search

    run, _ = start_run(store, "g")
    old = append_event(store, run.ref, "note", "配置迁移脚本在 tools 目录")
    for i in range(5):
        append_event(store, run.ref, "note", f"unrelated note {i}")
    monkeypatch.setattr(search, "SCAN_LIMIT", 1)  # the substring scan sees only the newest
    assert [h.ref for h in search_events(store, "迁移")] == [old.ref]
    assert [h.ref for h in search_events(store, "迁")] == [old.ref]


def test_all_common_terms_take_the_newest_matches(store):
    run, _ = start_run(store, "g")
    with store.transaction():
        for i in range(60):
            append_event(store, run.ref, "note", f"deploy service number {i}")
    plan = plan_query(store, "deploy service", EVENTS)
    assert plan.newest_first and plan.operator == "AND" and plan.common == []
    hits = search_events(store, "deploy service", limit=3)
    assert [h.text for h in hits] == [f"deploy service number {i}" for i in (59, 58, 57)]


def test_every_older_memory_schema_upgrades(tmp_path):
    from agentstate.store.db import connect
    from agentstate.store.migrations import MIGRATION_ORDER, apply_migrations

    for name in [name for name, domain in MIGRATION_ORDER if domain == "memory"]:
        db = connect(tmp_path / f"{name}.db")
        apply_migrations(db, upto=name)
        db.conn.execute("INSERT INTO memories (id, version, kind, scope, text, norm_hash, "
                        "source, status, confidence, created, last_confirmed, principal) VALUES "
                        "('m0000001', 1, 'fact', 'repo', '旧的记忆 about wombats', 'h', 'user', "
                        "'active', 0.9, 't', 't', 'owner')")
        apply_migrations(db)

        class Shim:
            conn = db.conn
            config: dict = {}

        from agentstate.memory.search import search_memory_rows

        assert search_memory_rows(Shim(), "wombats") and search_memory_rows(Shim(), "记忆")
        db.conn.close()


def test_long_queries_keep_a_bounded_number_of_terms(store):
    from agentstate.memory.query_plan import MAX_TERMS

    run, _ = start_run(store, "g")
    append_event(store, run.ref, "note", "word7 and word42 appear here")
    query = " ".join(f"word{i}" for i in range(100))
    plan = plan_query(store, query, EVENTS)
    # Terms in no text cannot match and are left out first.
    assert plan.words == ["word7", "word42"]
    assert search_events(store, query)[0].text.startswith("word7")
    append_event(store, run.ref, "note", query)  # now every term occurs somewhere
    plan = plan_query(store, query, EVENTS)
    assert len(plan.words) == MAX_TERMS and len(plan.dropped) == 100 - MAX_TERMS


def test_index_check_and_rebuild(store):
    from agentstate.memory.indexes import check_indexes, rebuild_indexes
    from agentstate.memory.write import remember

    run, _ = start_run(store, "g")
    append_event(store, run.ref, "note", "the narwhal migration finished")
    remember(store, "narwhals live in the north", kind="fact", principal=resolve_principal(store))
    assert check_indexes(store.conn) == []
    # Damage: every event loses its rows in the word index.
    store.conn.execute("INSERT INTO events_fts(events_fts) VALUES ('delete-all')")
    assert any("not indexed" in p for p in check_indexes(store.conn))
    rebuild_indexes(store)
    assert check_indexes(store.conn) == []
    assert [h.text for h in search_events(store, "narwhal migration")] == [
        "the narwhal migration finished"]


def test_word_fragments_match_when_no_whole_word_does(store):
    from agentstate.memory.recall import recall
    from agentstate.memory.write import remember

    run, _ = start_run(store, "g")
    event = append_event(store, run.ref, "note", "settings live in myconfig.yaml")
    stored = remember(store, "run pytest with -x to stop early", kind="procedure",
                      principal=resolve_principal(store))
    assert [h.ref for h in search_events(store, "config")] == [event.ref]
    assert [h.ref for h in recall(store, "pytes",
                                  principal=resolve_principal(store)).hits] == [stored.ref]
    assert recall(store, "qzx", principal=resolve_principal(store)).matched_nothing


def test_costly_terms_weigh_through_coverage_and_widening(store, monkeypatch):
    """Past SCORED_ROWS texts, the more frequent terms are not ranked by BM25 (a bound on
    the search's work), yet a text holding them still ranks first, and when the rarer terms
    find too few hits the search widens to them."""
    from agentstate.memory import query_plan, search
    from agentstate.runs.log import append_event, start_run

    run, _ = start_run(store, "g")
    for n in range(30):
        append_event(store, run.ref, "note", f"the kettle boiled over, number {n}")
    both = append_event(store, run.ref, "note", "the kettle and the zeppelin")
    rare = append_event(store, run.ref, "note", "a zeppelin flew by")
    monkeypatch.setattr(query_plan, "SCORED_ROWS", 5)
    plan = query_plan.plan_query(store, "zeppelin kettle", query_plan.EVENTS)
    assert plan.words == ["zeppelin"] and plan.costly == ["kettle"]
    hits = search.search_events(store, "zeppelin kettle", limit=2)
    assert [h.ref for h in hits] == [both.ref, rare.ref]
    widened = search.search_events(store, "zeppelin kettle", limit=10)
    assert len(widened) == 10 and {both.ref, rare.ref} <= {h.ref for h in widened}
    assert widened[0].ref == both.ref


def test_document_frequencies_are_counted_up_to_a_bound(store, monkeypatch):
    """Counting a term's texts stops at DF_CAP (an exact count reads its whole posting
    list); when even the rarest term reaches it, the terms are treated as common: all
    required, newest matches first."""
    from agentstate.memory import query_plan, search
    from agentstate.runs.log import append_event, start_run

    run, _ = start_run(store, "g")
    for n in range(60):
        append_event(store, run.ref, "note", f"kettle boiled, teapot warmed, round {n}")
    monkeypatch.setattr(query_plan, "DF_CAP", 10)
    df = query_plan._document_frequencies(store.conn, query_plan.EVENTS, {"kettl": "kettle"})
    assert df == {"kettl": 10}
    plan = query_plan.plan_query(store, "kettle teapot", query_plan.EVENTS)
    assert plan.newest_first and plan.operator == "AND"
    hits = search.search_events(store, "kettle teapot", limit=5)
    assert [h.text for h in hits][0].endswith("round 59")
