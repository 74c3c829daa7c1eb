"""A new store's pages are PAGE_SIZE (issue 24: a store near its content); a store made with
smaller pages keeps them and works as before."""

from __future__ import annotations

import sqlite3

from agentstate.maintenance.init import init_store
from agentstate.memory.search import search_events
from agentstate.runs.log import append_event, start_run
from agentstate.store import init as init_module
from agentstate.store.db import open_store
from agentstate.store.init import PAGE_SIZE


def _page_size(repo) -> int:
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        size: int = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    return size


def test_a_new_store_has_large_pages_and_the_write_ahead_log(repo):
    init_store(target=repo)
    assert PAGE_SIZE > 4096
    assert _page_size(repo) == PAGE_SIZE
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_store_with_small_pages_keeps_them_and_works(repo, monkeypatch):
    # Made as before 16 KB pages (SQLite's default), then used by this version.
    monkeypatch.setattr(init_module, "PAGE_SIZE", 4096)
    init_store(target=repo)
    monkeypatch.undo()
    init_store(target=repo)  # a second `init` leaves the database as it is
    store = open_store(start=repo)
    try:
        run, _ = start_run(store, "keep the pages")
        append_event(store, run.ref, "note", "the cello lesson moved to Tuesday")
        assert [hit.text for hit in search_events(store, "cello")] == [
            "the cello lesson moved to Tuesday"]
    finally:
        store.close()
    assert _page_size(repo) == 4096
