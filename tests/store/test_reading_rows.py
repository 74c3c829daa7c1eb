"""Rows are read one way (`Store.rows` / `Store.row`: dicts keyed by column name, on the raw
connection) and inserted one way (`Store.insert`), and the lazily built sqlite_utils.Database
behind `store.db` behaves like the real one for what is still asked of it (migrations, the
table list)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

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


def test_the_lazy_database_delegates_to_the_real_one(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(body)")
    lazy, real = LazyDatabase(conn), sqlite_utils.Database(conn)
    assert lazy.table_names() == real.table_names()
    assert lazy.table_names(fts5=True) == real.table_names(fts5=True) == ["f"]
    lazy["t"].insert({"name": "d"})  # builds the real Database on first use
    assert real.execute("SELECT count(*) FROM t").fetchone()[0] == 1


def test_value_and_has_table(table):
    assert table.value("SELECT name FROM t WHERE id = ?", (2,)) == "b"
    assert table.value("SELECT name FROM t WHERE id = 99") is None
    assert table.value("SELECT count(*) FROM t") == 3
    assert table.has_table("t") and table.has_table("runs")
    assert not table.has_table("T_missing") and not table.has_table("memories_fts_data ")


def test_insert_writes_one_row_as_given(table):
    table.insert("t", {"id": 7, "name": "it's \"quoted\""})
    assert table.row("SELECT * FROM t WHERE id = 7") == {"id": 7, "name": 'it\'s "quoted"'}
    table.insert("t", {"name": None})
    assert table.row("SELECT count(*) AS n FROM t WHERE name IS NULL") == {"n": 1}


def test_insert_or_ignore_skips_a_duplicate_and_plain_insert_refuses_it(table):
    table.insert("t", {"id": 1, "name": "again"}, or_ignore=True)
    assert table.row("SELECT name FROM t WHERE id = 1") == {"name": "a"}
    with pytest.raises(sqlite3.IntegrityError):
        table.insert("t", {"id": 1, "name": "again"})


@pytest.mark.parametrize("name, row", [
    ("t; DROP TABLE t", {"name": "x"}),
    ("t", {"name) VALUES ('x'); --": "x"}),
    ("t", {"": "x"}),
])
def test_insert_takes_plain_identifiers_only(table, name, row):
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        table.insert(name, row)
    assert table.row("SELECT count(*) AS n FROM t") == {"n": 3}


def test_inserts_inside_a_transaction_roll_back_with_it(table):
    # The raise must happen inside the transaction: that is what rolls it back.
    with pytest.raises(RuntimeError), table.transaction():  # noqa: PT012
        table.insert("t", {"name": "gone"})
        raise RuntimeError
    assert table.row("SELECT count(*) AS n FROM t") == {"n": 3}


def test_no_domain_inserts_through_sqlite_utils():
    """One way to insert: `store.insert` or SQL, never sqlite_utils' table API (it costs
    ~150 ms to import on hot paths; see docs/architecture.md)."""
    import agentstate

    package = Path(agentstate.__file__).parent
    offenders = [p.relative_to(package).as_posix() for p in sorted(package.rglob("*.py"))
                 if re.search(r"(?:\.table\(|\bdb\[)[^\n]*\.(?:insert|upsert|insert_all|"
                              r"upsert_all|update)\(", p.read_text(encoding="utf-8"))]
    assert offenders == []
