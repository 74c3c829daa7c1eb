"""A new store's pages are PAGE_SIZE (issue 24: a store near its content); a store made with
smaller pages keeps them and works as before."""

from __future__ import annotations

import sqlite3

from agentstate.maintenance.init import init_store
from agentstate.store.db import open_store
from agentstate.store.init import PAGE_SIZE
from agentstate.store.migrations import apply_migrations


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


def test_a_store_with_small_pages_keeps_them_and_works(repo):
    (repo / ".agentstate").mkdir()
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    from agentstate.store.db import connect

    db = connect(repo / ".agentstate" / "state.db")
    apply_migrations(db)
    db.conn.close()
    init_store(target=repo)  # the rest of the folder: the database is left as it is
    store = open_store(start=repo)
    try:
        store.conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                           "VALUES ('r1', 'g', 'active', 't', 't')")
    finally:
        store.close()
    assert _page_size(repo) == 4096
