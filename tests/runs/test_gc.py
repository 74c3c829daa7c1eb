"""`agentstate gc`: the retention period removes old events of finished runs, keeps every
cited one as ref + kind + hash (trace says the body was collected), updates the search
indexes, and changes nothing under --dry-run or when no period is configured."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstate.context.trace import trace
from agentstate.maintenance.gc import gc
from agentstate.memory.write import remember
from agentstate.runs.log import append_event, end_run, start_run
from agentstate.store.principals import resolve_principal
from tests.conftest import configure, fresh_store, store_pack_listing


def _rows(store) -> list[tuple]:
    return store.conn.execute("SELECT id, kind, text, meta, collected_at, body_hash FROM events "
                              "ORDER BY id").fetchall()


def _indexed(store, word: str) -> int:
    return store.conn.execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH ?",
                              (word,)).fetchone()[0]


def _in_pack(store, ref: str) -> None:
    """A stored pack that lists `ref` (dropped): it keeps the event's row."""
    store_pack_listing(store, "p1", [ref], store.now())


def _old_run(store, goal: str, texts: list[str], status: str = "done") -> list:
    run, _ = start_run(store, goal)
    events = [append_event(store, run.ref, "observation", text) for text in texts]
    end_run(store, run.ref, status)
    return events


def test_gc_keeps_every_cited_event_as_ref_kind_and_hash(store):
    run, _ = start_run(store, "old work")
    old = [append_event(store, run.ref, "observation", text) for text in (
        "alpha plain note", "bravo cited by memory evidence", "charlie source of a memory",
        "delta listed in a pack")]
    old.append(append_event(store, run.ref, "question", "echo asked, answered later"))
    abandoned = _old_run(store, "abandoned work", ["foxtrot abandoned note"], "abandoned")
    remember(store, "bravo fact", kind="fact", evidence=[old[1].ref],
             principal=resolve_principal(store))
    remember(store, "charlie fact", kind="fact", source=old[2].ref,
             principal=resolve_principal(store))
    _in_pack(store, old[3].ref)
    store.clock.advance(timedelta(days=35))  # a young event of the same run resolves `echo`
    resolver = append_event(store, run.ref, "answer", "golf resolves echo",
                            resolves=old[4].ref)
    end_run(store, run.ref, "done")
    store.clock.advance(timedelta(days=5))
    active, _ = start_run(store, "current work")
    fresh = append_event(store, active.ref, "observation", "hotel fresh note")
    configure(store, "retention", keep_events_days=30)

    result = gc(store, principal=resolve_principal(store))
    ids = {r[0]: r for r in _rows(store)}
    assert result.removed == 2 and result.collected == 4 and result.vacuumed
    assert result.already_collected == 0  # none was collected before this gc
    assert old[0].id not in ids and abandoned[0].id not in ids
    for kept in old[1:]:
        row = ids[kept.id]
        assert row[1] == kept.kind and row[2] == "" and row[3] == "{}"
        assert row[4] == store.now() and row[5].startswith("hmac-sha256:")
    assert ids[resolver.id][2] == "golf resolves echo" and ids[fresh.id][2] == "hotel fresh note"
    for word, count in (("alpha", 0), ("bravo", 0), ("delta", 0), ("foxtrot", 0),
                        ("golf", 1), ("hotel", 1)):
        assert _indexed(store, word) == count, word
    node = trace(store, old[1].ref, principal=resolve_principal(store))
    assert "body collected by gc" in node.summary and node.detail["collected_at"]
    assert store.conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # A second gc finds them collected already and removes nothing more.
    again = gc(store, principal=resolve_principal(store))
    assert (again.removed, again.collected, again.already_collected) == (0, 0, 4)


def test_an_event_a_tool_call_or_a_kept_event_points_at_is_collected_not_deleted(store):
    run, _ = start_run(store, "links")
    first = append_event(store, run.ref, "observation", "india first")
    second = append_event(store, run.ref, "observation", "juliet supersedes india",
                          supersedes=first.ref)
    third = append_event(store, run.ref, "observation", "kilo called a tool")
    store.conn.execute("INSERT INTO tool_calls (id, event, run, command, program, allowed, ts) "
                       "VALUES ('t1', ?, ?, '[]', 'true', 1, ?)", (third.id, run.id, store.now()))
    remember(store, "juliet fact", kind="fact", evidence=[second.ref],
             principal=resolve_principal(store))
    end_run(store, run.ref, "done")
    store.clock.advance(timedelta(days=10))
    configure(store, "retention", keep_events_days=1)
    result = gc(store, principal=resolve_principal(store))
    ids = {r[0] for r in _rows(store)}
    assert {first.id, second.id, third.id} <= ids and result.removed == 0
    assert result.collected == 3


def test_dry_run_and_an_unconfigured_period_change_nothing(store):
    _old_run(store, "old", ["lima one", "mike two"])
    store.clock.advance(timedelta(days=400))
    before = _rows(store)
    unset = gc(store, principal=resolve_principal(store))
    assert not unset.configured and unset.removed == 0 and _rows(store) == before
    configure(store, "retention", keep_events_days=30)
    dry = gc(store, dry_run=True, principal=resolve_principal(store))
    assert dry.dry_run and dry.removed == 2 and dry.body_bytes > 0 and not dry.vacuumed
    assert _rows(store) == before and _indexed(store, "lima") == 1


def test_gc_command(initialised, cli):
    unset = cli.json("gc")
    assert unset["configured"] is False
    assert "not configured" in cli.ok("gc").stdout
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# keep_events_days = 0",
                                                 "keep_events_days = 7"))
    cli.ok("run", "start", "short lived")
    cli.ok("log", "observation", "november old note")
    cli.ok("run", "end", "--status", "done")
    later = {"AGENTSTATE_NOW": "2099-01-01T00:00:00Z"}
    dry = cli.json("gc", "--dry-run", env=later)
    assert dry["removed"] == 1 and dry["dry_run"] is True
    done = cli.json("gc", env=later)
    assert done["removed"] == 1 and done["bytes_after"] <= done["bytes_before"]
    assert "removed: 0" in cli.ok("gc", env=later).stdout
    config.write_text(config.read_text().replace("keep_events_days = 7",
                                                 "keep_events_days = -3"))
    bad = cli("gc")
    assert bad.exit_code == 1 and "keep_events_days" in bad.stderr


PLAN = st.lists(st.tuples(st.integers(0, 3),            # which run (3: the active one)
                          st.integers(0, 60),           # age in days
                          st.sampled_from(["none", "evidence", "source", "pack"])),
                min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=PLAN, keep=st.integers(1, 50))
def test_property_cited_events_always_survive_and_nothing_young_or_active_changes(plan, keep):
    with fresh_store() as store:
        start = store.clock.now()
        runs = [start_run(store, f"run {n}")[0] for n in range(4)]
        made, listed = [], []
        for n, (which, age, cite) in enumerate(sorted(plan, key=lambda p: -p[1])):
            store.clock.fixed = start + timedelta(days=60 - age)
            event = append_event(store, runs[which].ref, "observation", f"event number {n}")
            made.append((event, which, age, cite))
            if cite == "evidence":
                remember(store, f"event number {n} is a fact", kind="fact", evidence=[event.ref],
                         principal=resolve_principal(store))
            elif cite == "source":
                remember(store, f"event number {n} was seen", kind="fact", source=event.ref,
                         principal=resolve_principal(store))
            elif cite == "pack":
                listed.append(event.ref)
        if listed:
            store_pack_listing(store, "p", listed)
        for run in runs[:3]:
            end_run(store, run.ref, "done")
        store.clock.fixed = start + timedelta(days=60)
        configure(store, "retention", keep_events_days=keep)
        result = gc(store, principal=resolve_principal(store))
        rows = {r[0]: r for r in _rows(store)}
        for event, which, age, cite in made:
            old = which < 3 and age > keep
            if not old:
                assert rows[event.id][2] == event.text  # untouched
            elif cite == "none":
                assert event.id not in rows
            else:
                assert rows[event.id][2] == "" and rows[event.id][4] is not None
        assert result.removed == sum(1 for _, w, a, c in made if w < 3 and a > keep
                                     and c == "none")
        assert sqlite3.connect(store.db_path).execute(
            "PRAGMA integrity_check").fetchone() == ("ok",)


def _most_old(store) -> None:
    """Nine events of a finished run (two with CJK text, one of them in a stored pack),
    then three young ones (one with CJK): a gc after 30 days removes more rows than stay."""
    old = _old_run(store, "old work", [
        *(f"india{n} plain note about the parser" for n in range(6)),
        "数据库连接超时 removed with its run", "配置文件格式错误 cited, so collected",
        "juliet cited by memory evidence"])
    remember(store, "juliet cited by memory evidence", kind="fact", evidence=[old[8].ref],
             principal=resolve_principal(store))
    _in_pack(store, old[7].ref)
    store.clock.advance(timedelta(days=35))
    _old_run(store, "young work", ["kilo stays", "缓存命中率下降 stays", "lima stays"])
    configure(store, "retention", keep_events_days=30)


def _index_terms(store) -> tuple[list[tuple], list[tuple]]:
    return (store.conn.execute("SELECT term, doc, cnt FROM events_vocab ORDER BY term"
                               ).fetchall(),
            store.conn.execute("SELECT term, doc, cnt FROM events_tri_vocab ORDER BY term"
                               ).fetchall())


def test_a_gc_removing_most_events_refills_the_index_as_row_by_row_would():
    """The rewrite (store/rewrite.py: the rows that stay copied into a new file, the index
    filled from them) ends with the same index terms as the per-row triggers, and keeps
    the triggers so later writes are indexed again."""
    from agentstate.memory.indexes import check_indexes

    with fresh_store() as bulk, fresh_store() as rows:
        _most_old(bulk)
        _most_old(rows)
        triggers = bulk.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = "
                                     "'trigger' ORDER BY name").fetchall()
        done = gc(bulk, principal="owner")
        assert done.removed == 7 and done.rewritten  # chosen by the share removed
        in_place = gc(rows, principal="owner", rewrite=False)
        assert in_place.removed == 7 and not in_place.rewritten
        assert _index_terms(bulk) == _index_terms(rows)
        assert check_indexes(bulk.conn) == []
        for word, count in (("india0", 0), ("juliet", 0), ("kilo", 1), ("lima", 1)):
            assert _indexed(bulk, word) == count, word
        tri = "SELECT count(*) FROM events_tri WHERE events_tri MATCH ?"
        assert [bulk.conn.execute(tri, (w,)).fetchone()[0]
                for w in ("连接超", "文件格", "命中率")] == [0, 0, 1]
        assert bulk.conn.execute("SELECT name, sql FROM sqlite_master WHERE type = "
                                 "'trigger' ORDER BY name").fetchall() == triggers
        # The triggers work again: a new event is found, deleting it takes it out.
        later, _ = start_run(bulk, "later work")
        new = append_event(bulk, later.ref, "observation", "mike 新的记录文本")
        assert _indexed(bulk, "mike") == 1
        assert bulk.conn.execute(tri, ("记录文",)).fetchone()[0] == 1
        bulk.conn.execute("DELETE FROM events WHERE id = ?", (new.id,))
        assert _indexed(bulk, "mike") == 0


AWKWARD = ["quote \" backslash \\ tab \t newline \n", "line\u2028separator\u2029 nel \x85",
           "bell \x07 del \x7f é 数据 🦉 \ufeff", "", "{\"a\": [1, 2.5, null]}"]


@given(text=st.one_of(st.text(), st.sampled_from(AWKWARD)),
       meta=st.one_of(st.text(), st.sampled_from(AWKWARD)))
def test_a_collected_bodys_hashed_form_is_the_encoders(text, meta):
    import json

    from agentstate.runs.retention import body_json

    assert body_json(text, meta) == json.dumps([text, meta], ensure_ascii=False)


def test_a_collected_body_keeps_the_hash_of_its_text_and_meta(store):
    """The hash a gc keeps is the keyed hash of `json.dumps([text, meta])`, so a kept copy
    of the body can be checked against it (in place and in a rewrite alike)."""
    import json

    from agentstate.store.keys import keyed_hash

    run, _ = start_run(store, "old work")
    cited = append_event(store, run.ref, "observation", AWKWARD[0] + AWKWARD[1] + AWKWARD[2],
                         meta={"tool": "pytest", "note": AWKWARD[1]})
    append_event(store, run.ref, "observation", "kilo plain, removed")
    _in_pack(store, cited.ref)
    end_run(store, run.ref, "done")
    text, meta = store.conn.execute("SELECT text, meta FROM events WHERE id = ?",
                                    (cited.id,)).fetchone()
    store.clock.advance(timedelta(days=35))
    configure(store, "retention", keep_events_days=30)
    assert gc(store, principal="owner").collected == 1
    kept = store.conn.execute("SELECT body_hash FROM events WHERE id = ?",
                              (cited.id,)).fetchone()[0]
    assert kept == keyed_hash(store.root, json.dumps([text, meta], ensure_ascii=False))
