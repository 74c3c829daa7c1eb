"""Named migrations, applied in order and recorded in `_migrations`.

Never rename or reorder a migration that has shipped: a store records which names it has.
Each domain owns its tables and lists its migrations in its own `schema.py`; this module only
concatenates them in a fixed order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # sqlite_utils is slow to import; only the migrations themselves need it
    import sqlite_utils

Migration = tuple[str, Callable[["sqlite_utils.Database"], None]]


def run_script(db: sqlite_utils.Database, script: str) -> None:
    """Execute several statements inside the caller's transaction.

    sqlite3's executescript() would COMMIT first and break the migration's atomicity, so
    statements are split with sqlite3.complete_statement (safe for triggers' inner `;`).
    """
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            db.conn.execute(buffer)
            buffer = ""
    if buffer.strip():
        db.conn.execute(buffer)


def all_migrations() -> list[Migration]:
    from agentstate.context import schema as context_schema
    from agentstate.memory import schema as memory_schema
    from agentstate.runs import schema as runs_schema
    from agentstate.skills import schema as skills_schema

    return [
        *runs_schema.MIGRATIONS,
        *memory_schema.MIGRATIONS,
        *skills_schema.MIGRATIONS,
        *context_schema.MIGRATIONS,
    ]


def applied_migrations(db: sqlite_utils.Database) -> list[str]:
    conn = db.conn
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone():
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def pending_migrations(db: sqlite_utils.Database) -> list[Migration]:
    done = set(applied_migrations(db))
    return [m for m in all_migrations() if m[0] not in done]


def apply_migrations(db: sqlite_utils.Database, upto: str | None = None) -> list[str]:
    """Apply pending migrations (each in its own transaction); return the names applied.

    `upto` stops after the named migration (tests use it to build older schemas).
    """
    conn = db.conn
    pending = pending_migrations(db)
    if not pending:
        return []
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    applied = []
    for name, function in pending:
        # BEGIN IMMEDIATE: two processes opening a fresh store must not both migrate.
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                conn.execute("COMMIT")
                continue
            function(db)
            conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, datetime('now'))", (name,)
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        applied.append(name)
        if upto == name:
            return applied
    return applied


def schema_version(db: sqlite_utils.Database) -> str:
    names = applied_migrations(db)
    return names[-1] if names else "(blank)"
