"""What a process keeps of a full-text index (memory/kept_index.py, `_kept_for`): a long-lived
process plans and runs the same query on every call, and counts each term and runs each
MATCH once — until the index changes, by any connection or process, or another file takes
the store's place. The plan shows the document frequencies: a term in more than half of
the texts is `common` (COMMON_FRACTION), so a stale count puts the wrong term there; the
hits show the kept MATCH rows."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from agentstate.memory import kept_index
from agentstate.memory.query_plan import EVENTS, plan_query
from agentstate.memory.search import search_events
from agentstate.runs.log import append_event, start_run
from agentstate.store.db import open_store

QUERY = "alpha gamma"


def _log(store, texts: list[str]) -> None:
    run, _ = start_run(store, "count the words")
    for text in texts:
        append_event(store, run.ref, "note", text)


def _common(repo: Path) -> list[str]:
    """The plan's common terms, from a store opened afresh (as each MCP call opens it)."""
    store = open_store(start=repo)
    try:
        return plan_query(store, QUERY, EVENTS).common
    finally:
        store.close()


def _kept_terms(db: Path) -> int:
    return sum(1 for (path, _), (_, kept) in kept_index._KEPT.items() if Path(path) == db
               for key in kept if key[0] == "df")


def _texts(alpha: int, gamma: int) -> list[str]:
    return [f"alpha note {n}" for n in range(alpha)] + [f"gamma note {n}" for n in range(gamma)]


def test_a_second_plan_counts_nothing_and_gives_the_same_plan(store, repo):
    _log(store, _texts(10, 50))
    first = plan_query(store, QUERY, EVENTS)
    assert first.common == ["gamma"] and first.words == ["alpha"]
    assert _kept_terms(store.db_path) == 2
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        again = plan_query(store, QUERY, EVENTS)
    finally:
        store.conn.set_trace_callback(None)
    assert again == first
    assert not [s for s in seen if "MATCH" in s], seen


def test_events_another_process_logs_between_two_plans_are_counted(store, repo):
    _log(store, _texts(10, 50))
    assert _common(repo) == ["gamma"]
    script = textwrap.dedent("""
        from agentstate.runs.log import append_event, current_run
        from agentstate.store.db import open_store
        store = open_store()
        run = current_run(store)
        for n in range(100):
            append_event(store, run.ref, "note", f"alpha again {n}")
        store.close()
    """)
    subprocess.run([sys.executable, "-c", script], cwd=repo, check=True, env=os.environ)
    # 110 of 160 texts hold alpha now, 50 gamma.
    assert _common(repo) == ["alpha"]


def test_events_deleted_by_another_connection_are_no_longer_counted(store, repo):
    _log(store, _texts(10, 50))
    assert _common(repo) == ["gamma"]
    other = sqlite3.connect(store.db_path)
    with other:
        other.execute("DELETE FROM events WHERE id IN (SELECT id FROM events "
                      "WHERE text LIKE 'gamma%' ORDER BY seq LIMIT 45)")
    other.close()
    assert _common(repo) == []  # gamma in 5 texts, alpha in 10


def test_a_text_rewritten_in_place_is_counted_as_it_is_now(store, repo):
    _log(store, _texts(10, 50))
    assert _common(repo) == ["gamma"]
    other = sqlite3.connect(store.db_path)
    with other:  # as a purge scrubs a text
        other.execute("UPDATE events SET text = replace(text, 'gamma', 'alpha') WHERE id IN "
                      "(SELECT id FROM events WHERE text LIKE 'gamma%' ORDER BY seq LIMIT 40)")
    other.close()
    assert _common(repo) == ["alpha"]


def test_another_file_put_at_the_store_path_is_counted_afresh(store, repo, tmp_path):
    """Two stores written alike (the same number of texts of the same sizes) can have the
    same index structure; a copy restored over the store is another file all the same."""
    _log(store, _texts(10, 50))
    other_repo = tmp_path / "other"
    other_repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=other_repo, check=True)
    from agentstate.maintenance.init import init_store

    init_store(target=other_repo)
    other = open_store(start=other_repo)
    _log(other, _texts(50, 10))  # the words swapped: the same shape, other counts
    other.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    other_db = other.db_path
    other.close()
    db = store.db_path
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert _common(repo) == ["gamma"]
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.replace(other_db, db)
    assert _common(repo) == ["alpha"]


def test_a_search_run_again_reads_the_index_once_and_sees_every_later_write(store, repo):
    _log(store, _texts(10, 50))
    hits = {h.ref for h in search_events(store, "alpha", limit=100)}
    assert len(hits) == 10
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        assert {h.ref for h in search_events(store, "alpha", limit=100)} == hits
    finally:
        store.conn.set_trace_callback(None)
    assert not [s for s in seen if "MATCH" in s], seen
    other = sqlite3.connect(store.db_path)
    with other:
        other.execute("DELETE FROM events WHERE id IN (SELECT id FROM events "
                      "WHERE text LIKE 'alpha%' ORDER BY seq LIMIT 4)")
    other.close()
    after_delete = {h.ref for h in search_events(store, "alpha", limit=100)}
    assert len(after_delete) == 6 and after_delete < hits
    added = subprocess.run(
        [sys.executable, "-c", "from agentstate.runs.log import append_event, current_run\n"
         "from agentstate.store.db import open_store\n"
         "store = open_store()\n"
         "print(append_event(store, current_run(store).ref, 'note', 'alpha once more').ref)"],
        cwd=repo, check=True, env=os.environ, capture_output=True, text=True).stdout.strip()
    assert {h.ref for h in search_events(store, "alpha", limit=100)} == after_delete | {added}


def test_a_longer_search_is_not_answered_with_the_rows_a_shorter_one_kept(store, repo):
    _log(store, _texts(150, 0))
    assert len(search_events(store, "alpha", limit=10)) == 10  # the 100 best rows read
    assert len(search_events(store, "alpha", limit=150)) == 150


def _insert_in_transaction(conn, word: str, commit: bool) -> None:
    conn.execute("BEGIN")
    for n in range(100):
        conn.execute("INSERT INTO events (id, run, seq, kind, text, source, ts) "
                     "SELECT ?, run, ? + 1000, 'note', ?, 'user', ts FROM events LIMIT 1",
                     (f"tx{n:04d}", n, f"{word} in the transaction {n}"))
    if not commit:
        return
    conn.execute("COMMIT")


def test_nothing_read_inside_a_transaction_is_kept(store, repo):
    """A transaction's searches see its own writes; after a rollback they are gone, and a
    transaction of the same shape over other words is counted as it is. (FTS5 writes a
    transaction's rows to new segments at each statement's savepoint, so the structure
    record changes inside it too; nothing read there is kept all the same.)"""
    _log(store, _texts(10, 50))
    assert plan_query(store, QUERY, EVENTS).common == ["gamma"]
    _insert_in_transaction(store.conn, "alpha", commit=False)
    assert len(search_events(store, "alpha", limit=200)) == 110  # its own writes seen
    assert plan_query(store, QUERY, EVENTS).common == ["alpha"]
    store.conn.execute("ROLLBACK")
    assert len(search_events(store, "alpha", limit=200)) == 10
    _insert_in_transaction(store.conn, "gamma", commit=True)
    assert plan_query(store, QUERY, EVENTS).common == ["gamma"]
    assert len(search_events(store, "alpha", limit=200)) == 10
