"""Document frequencies kept per process (memory/search.py, `_document_frequencies`): a
long-lived process plans the same query on every call and counts each term once — until
the word index changes, by any connection or process, or another file takes the store's
place. The plan shows the frequencies: a term in more than half of the texts is `common`
(COMMON_FRACTION), so a stale count puts the wrong term there."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from agentstate.memory import search
from agentstate.memory.search import EVENTS, plan_query
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
    return sum(len(kept) for (path, _), (_, kept) in search._DF_KEPT.items()
               if Path(path) == db)


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
