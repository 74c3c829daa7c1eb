"""Rewrite the database into a new file, keeping only chosen rows, and copy it back over the
live one in one SQLite transaction (`agentstate gc` when it removes most of the run log).

Why a copy: deleting most rows in place costs a b-tree update per index and trigger per
removed row, then VACUUM rewrites what stays (issue 24: ~30× a copy of the file). Writing
what stays into a fresh file (no journal, indexes built after the rows) and copying that
file's pages over the live one touches only what stays.

Safety, step by step:

- **One writer.** The rewrite holds the live database's write lock (BEGIN IMMEDIATE) while it
  reads the rows and builds the new file, so no commit can land in between and be lost.
  Readers go on. The lock is let go for the copy back, which takes it again at once; a
  probe connection's `PRAGMA data_version` (which moves when another connection commits),
  read while the lock was held and again once the copy holds it, tells whether a writer
  slipped into that gap. If one did, the copy is rolled back and the caller is told
  (`StoreChanged`), and nothing has changed.
- **Old or new, never a mix.** The copy back is SQLite's backup of the new file into the
  live connection: one write transaction through the live file's write-ahead log. A crash
  before its commit leaves the old store; after it, recovery replays the log into the new
  one. The new file beside the store (`state.db-rewrite`, ignored as `state.db-*`) is
  deleted afterwards, or by the next rewrite when a crash left it.
- **The same schema.** Every table, virtual table, index, trigger and view is created
  from the live store's own SQL, the migrations record and every other table are copied
  whole unless the plan names a condition, and the new file's schema is compared with the
  live one before anything is copied back (a missing trigger stops the rewrite).
- **Really gone.** The backup writes every page of the new file and truncates the live file
  to its size, and the log is then checkpointed and truncated: removed rows are in neither.

Other processes with the store open are not disturbed: they see the new content on their
next read, as after any commit. Row ids are kept (VACUUM keeps them only for INTEGER PRIMARY
KEY tables; a dense-vector query orders events by rowid).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import AgentStateError
from agentstate.store.db import BUSY_TIMEOUT_MS, Store, translate_sqlite_error

SCHEMA = "rewrite"  # the new file's name on the rewriting connection

# SQLite's own tables: created by SQLite (sqlite_sequence with the first AUTOINCREMENT table,
# sqlite_stat* by ANALYZE), never by CREATE TABLE.
_INTERNAL = "sqlite_"
_CREATE = re.compile(r"^(CREATE\s+(?:UNIQUE\s+|VIRTUAL\s+)?(?:TABLE|INDEX|TRIGGER|VIEW)\s+"
                     r"(?:IF\s+NOT\s+EXISTS\s+)?)", re.IGNORECASE)


class StoreChanged(AgentStateError):
    """Another process committed between the build and the copy back; nothing changed."""


@dataclass
class CopyPlan:
    """What the new file keeps. `keep`: table → SQL condition on the live table's rows (the
    rows it keeps; other tables are copied whole). The tables it names are copied first, in
    its order, so a condition may read a table copied before it (`rewrite.<table>`).
    `refill`: virtual tables created empty, filled by a step of `steps`. `steps`: run in
    order on the rewriting connection once rows and indexes are in the new file and before
    its triggers exist, each given the schema name of the new file (`rewrite`)."""

    keep: dict[str, str] = field(default_factory=dict)
    refill: set[str] = field(default_factory=set)
    steps: list[Callable[[sqlite3.Connection, str], None]] = field(default_factory=list)

    def add(self, other: CopyPlan) -> CopyPlan:
        return CopyPlan({**self.keep, **other.keep}, self.refill | other.refill,
                        self.steps + other.steps)


def _reached(step: str) -> None:
    """Where a rewrite stands; tests replace this to stop the process at a chosen step."""


class Rewrite:
    """A connection to the live database holding its write lock, with the new file attached.

    Use as a context manager: on entry the lock is taken (waiting the store's busy timeout);
    `conn` then reads the live store and may change it in place (a small removal commits with
    `commit`); `build(plan)` writes the new file and `swap()` copies it back. Leaving without
    either rolls back and deletes the new file."""

    def __init__(self, store: Store) -> None:
        self.live = store.db_path
        self.path = self.live.with_name(self.live.name + "-rewrite")
        self.root = store.root
        self.conn: sqlite3.Connection = sqlite3.connect(
            str(self.live), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        self.probe: sqlite3.Connection | None = None
        self.built = False

    def __enter__(self) -> Rewrite:
        _remove(self.path)  # a crash's leftover: only rows that are in the live store too
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # The copy fills tables in the schema's order; the rows were checked when written.
        conn.execute("PRAGMA foreign_keys = OFF")
        # The caller's marks (gc: ~90,000 ids of a large run log) are temp tables: in memory
        # they fill ~30% faster than in a temporary file, for a few MB.
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("ATTACH DATABASE ? AS rewrite", (str(self.path),))
        # The new file needs no journal: until it is copied back it is nobody's store.
        conn.execute("PRAGMA rewrite.journal_mode = OFF")
        conn.execute("PRAGMA rewrite.synchronous = OFF")
        conn.execute(f"PRAGMA rewrite.page_size = {_one(conn, 'PRAGMA main.page_size')}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self.close()
            raise translate_sqlite_error(exc, self.root) from exc
        return self

    def __exit__(self, *exc: object) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.close()

    def close(self) -> None:
        for conn in (self.probe, self.conn):
            if conn is not None:
                conn.close()
        _remove(self.path)

    def commit(self) -> None:
        """Commit what was changed in place (the new file stays empty and is deleted)."""
        self.conn.execute("COMMIT")

    def build(self, plan: CopyPlan) -> None:
        """Write the new file: the live schema with the rows `plan` keeps."""
        conn = self.conn
        entries = conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master "
                               "WHERE sql IS NOT NULL ORDER BY rowid").fetchall()
        kinds = {row[1]: row[2] for row in conn.execute("PRAGMA main.table_list")
                 if row[0] == "main"}
        for kind, name, _, sql in entries:
            if kind == "table" and kinds.get(name) in ("table", "virtual") \
                    and not name.startswith(_INTERNAL):
                conn.execute(_in_schema(sql))
        for name in sorted(kinds, key=lambda name: _order(name, plan)):
            kind = kinds[name]
            if kind in ("table", "shadow") and not name.startswith(_INTERNAL) \
                    and not _left_empty(name, kind, kinds, plan):
                _copy_rows(conn, name, plan.keep.get(name))
        for kind, _name, _, sql in entries:
            if kind == "index":
                conn.execute(_in_schema(sql))
        _reached("rows")
        for step in plan.steps:
            step(conn, SCHEMA)
        for kind, _name, _, sql in entries:
            if kind in ("trigger", "view"):
                conn.execute(_in_schema(sql))
        _copy_settings(conn)
        _same_schema(conn)
        self.built = True
        _reached("built")

    def swap(self) -> None:
        """Copy the new file over the live database (see the module's notes), then let the
        write-ahead log go back into the file."""
        if not self.built:
            raise RuntimeError("Rewrite.swap before build")
        conn = self.conn
        self.probe = sqlite3.connect(str(self.live), isolation_level=None)
        mark = _one(self.probe, "PRAGMA data_version")  # read while our lock is held
        conn.execute("COMMIT")  # the live file was only read; the new one is complete
        conn.execute("DETACH DATABASE rewrite")
        _reached("unlocked")
        source = sqlite3.connect(str(self.path))
        pages = _one(source, "PRAGMA page_count")
        probe = self.probe

        checked: list[bool] = []

        def check(_status: int, _remaining: int, _total: int) -> None:
            # Called after each step. The first step takes the live write lock and keeps it
            # until the last one commits, so a commit by anyone else came before it: checked
            # once, there (later calls would see our own commit).
            if checked:
                return
            checked.append(True)
            if _one(probe, "PRAGMA data_version") != mark:
                raise StoreChanged("another process wrote to the store during the rewrite; "
                                   "nothing was changed (run it again)")
            _reached("copying")

        try:
            source.backup(conn, pages=max(1, pages // 2), progress=check)
        finally:
            source.close()
        _reached("copied")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _in_schema(sql: str) -> str:
    """`CREATE … name` → `CREATE … rewrite.name` (SQLite stores the SQL without the schema
    name, so the new file's schema text is the live one's)."""
    changed, count = _CREATE.subn(lambda m: m.group(1) + SCHEMA + ".", sql, count=1)
    if not count:
        raise AgentStateError(f"cannot rewrite the store: unexpected schema entry {sql[:60]!r}")
    return changed


def _order(name: str, plan: CopyPlan) -> int:
    """The tables the plan names first, in its order; then the others (a stable sort)."""
    names = list(plan.keep)
    return names.index(name) if name in plan.keep else len(names)


def _left_empty(name: str, kind: str, kinds: dict[str, str], plan: CopyPlan) -> bool:
    """A shadow table of a virtual table the plan refills (FTS5 names them `<table>_<part>`)."""
    if kind != "shadow":
        return False
    return any(name.startswith(owner + "_") for owner in plan.refill
               if kinds.get(owner) == "virtual")


def _copy_rows(conn: sqlite3.Connection, table: str, where: str | None) -> None:
    columns = _columns(conn, table)
    names = ", ".join(columns)
    conn.execute(f'DELETE FROM rewrite."{table}"')  # a virtual table's shadows start with rows
    conn.execute(f'INSERT INTO rewrite."{table}" ({names}) SELECT {names} FROM main."{table}"'
                 + (f" WHERE {where}" if where else ""))


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    """The stored columns, with `rowid` first for a rowid table without an INTEGER PRIMARY KEY
    (whose rowid is a column already)."""
    info = conn.execute(f'PRAGMA main.table_xinfo("{table}")').fetchall()
    columns = [f'"{row[1]}"' for row in info if row[6] == 0]
    sql = _one(conn, "SELECT sql FROM main.sqlite_master WHERE name = ?", (table,))
    keys = [row for row in info if row[5]]
    alias = len(keys) == 1 and str(keys[0][2]).upper() == "INTEGER"
    if alias or "WITHOUT ROWID" in str(sql).upper():
        return columns
    return ["rowid", *columns]


def _copy_settings(conn: sqlite3.Connection) -> None:
    """AUTOINCREMENT counters, the header's user version and application id, statistics."""
    names = {row[0] for row in conn.execute("SELECT name FROM main.sqlite_master")}
    if "sqlite_sequence" in names:
        conn.execute("DELETE FROM rewrite.sqlite_sequence")
        conn.execute("INSERT INTO rewrite.sqlite_sequence SELECT * FROM main.sqlite_sequence")
    for pragma in ("user_version", "application_id"):
        conn.execute(f"PRAGMA rewrite.{pragma} = {int(_one(conn, f'PRAGMA main.{pragma}'))}")
    if "sqlite_stat1" in names:
        conn.execute("ANALYZE rewrite")


def _same_schema(conn: sqlite3.Connection) -> None:
    def schema(name: str) -> set[tuple[str, str, str, str | None]]:
        return set(conn.execute(f"SELECT type, name, tbl_name, sql FROM {name}.sqlite_master "
                                "WHERE name NOT LIKE 'sqlite_stat%'"))
    missing, extra = schema("main") - schema(SCHEMA), schema(SCHEMA) - schema("main")
    if missing or extra:
        names = sorted({entry[1] for entry in missing | extra})
        raise AgentStateError(f"cannot rewrite the store: the copy's schema differs from the "
                              f"store's ({', '.join(names)}); nothing was changed")


def _one(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> Any:
    return conn.execute(sql, params).fetchone()[0]


def _remove(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + "-journal")):
        leftover.unlink(missing_ok=True)
