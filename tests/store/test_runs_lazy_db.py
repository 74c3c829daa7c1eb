"""The lazily built sqlite_utils.Database behind `store.db` behaves like the real one."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from agentstate.store.db import LazyDatabase


@pytest.fixture
def pair(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO t (name) VALUES (?)", [("a",), ("b",), ("c",)])
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    return LazyDatabase(conn), sqlite_utils.Database(conn)


@pytest.mark.parametrize("sql, params", [
    ("SELECT * FROM t ORDER BY id", None),
    ("  select name FROM t WHERE id > ?", (1,)),
    ("SELECT id, name FROM t WHERE name = :n", {"n": "b"}),
    ("SELECT 1 AS x, 2 AS x", None),  # duplicate names: delegated, renamed like sqlite_utils
    ("WITH q AS (SELECT 1 AS v) SELECT v FROM q", None),
    ("PRAGMA table_info(t)", None),
])
def test_query_matches_sqlite_utils(pair, sql, params):
    lazy, real = pair
    assert list(lazy.query(sql, params)) == list(real.query(sql, params))


def test_table_names_and_writes_match(pair):
    lazy, real = pair
    assert lazy.table_names() == real.table_names()
    assert lazy.table_names(fts5=True) == real.table_names(fts5=True) == ["f"]
    lazy["t"].insert({"name": "d"})  # builds the real Database on first write
    assert real.execute("SELECT count(*) FROM t").fetchone()[0] == 4
    with pytest.raises(ValueError):
        list(lazy.query("UPDATE t SET name = 'z'"))  # sqlite_utils' rule: use execute()
    assert real.execute("SELECT count(*) FROM t WHERE name = 'z'").fetchone()[0] == 0
