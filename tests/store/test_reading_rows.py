"""Rows are read one way (`Store.rows` / `Store.row`: dicts keyed by column name, on the raw
connection), and the lazily built sqlite_utils.Database behind `store.db` behaves like the
real one for what is still asked of it (inserts, the table list)."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from agentstate.store.db import LazyDatabase


@pytest.fixture
def table(store):
    store.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    store.conn.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",), ("c",)])
    return store


@pytest.mark.parametrize("sql, params", [
    ("SELECT * FROM t ORDER BY id", ()),
    ("  select name FROM t WHERE id > ?", (1,)),
    ("SELECT id, name FROM t WHERE name = :n", {"n": "b"}),
    ("WITH q AS (SELECT 1 AS v) SELECT v FROM q", ()),
    ("PRAGMA table_info(t)", ()),
    ("SELECT * FROM t WHERE id > 99", ()),
])
def test_rows_are_what_sqlite_utils_would_return(table, sql, params):
    expected = list(sqlite_utils.Database(table.conn).query(sql, params))
    assert table.rows(sql, params) == expected
    assert table.row(sql, params) == (expected[0] if expected else None)


def test_duplicate_column_names_are_refused_not_silently_merged(table):
    with pytest.raises(ValueError, match="duplicate column names"):
        table.rows("SELECT 1 AS x, 2 AS x")
    with pytest.raises(ValueError, match="duplicate column names"):
        table.row("SELECT a.id, b.id FROM t a JOIN t b ON a.id = b.id")


def test_table_names_and_writes_match(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    lazy, real = LazyDatabase(conn), sqlite_utils.Database(conn)
    assert lazy.table_names() == real.table_names()
    assert lazy.table_names(fts5=True) == real.table_names(fts5=True) == ["f"]
    lazy["t"].insert({"name": "d"})  # builds the real Database on first write
    assert real.execute("SELECT count(*) FROM t").fetchone()[0] == 1
