"""Named migrations, applied in order and recorded in `_migrations`.

`MIGRATION_ORDER` below is the one list, append-only, in definition order: a fresh store and
an upgraded one apply the same functions in the same order. Never rename, reorder or remove
an entry that has shipped (stores record the names they have); a new migration is appended
at the end, whichever domain defines it. The functions live in each domain's table module
(`SCHEMA_MODULES`: the domain owns its tables); this module only names them in order.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


# Where each domain's migrations live: modules named for the tables they create, so no two
# packages have a file of the same name (a domain with many tables may keep them in more than
# one). MIGRATION_ORDER names the domain, not the module.
SCHEMA_MODULES: dict[str, tuple[str, ...]] = {
    "runs": ("agentstate.runs.run_tables",),
    "memory": ("agentstate.memory.memory_tables", "agentstate.memory.event_index_tables",
               "agentstate.memory.vector_tables"),
    "skills": ("agentstate.skills.skill_tables",),
    "context": ("agentstate.context.pack_tables",),
    "sync": ("agentstate.sync.shared_tables",),
    "evals": ("agentstate.evals.eval_tables",),
}

# (name, domain) in the order every store applies them. Append only.
MIGRATION_ORDER: tuple[tuple[str, str], ...] = (
    ("m001_runs_events", "runs"),
    ("m101_memories", "memory"),
    ("m102_event_search", "memory"),  # needs `events` (m001)
    ("m103_trigram_vocab", "memory"),
    ("m201_skills_registry", "skills"),
    ("m301_packs", "context"),
    ("m202_publish_journal", "skills"),
    ("m104_purged_history_hashes", "memory"),
    ("m002_events_run_kind_seq", "runs"),
    ("m105_stemmed_word_index", "memory"),  # rebuilds the m101/m102 word indexes
    ("m003_events_collected", "runs"),
    ("m401_shared_records", "sync"),
    ("m302_pack_item_notes", "context"),
    ("m004_events_hook_keys", "runs"),
    ("m015_trigram_for_cjk_events", "memory"),  # issue 24: the store near its content
    ("m016_events_lean_indexes", "runs"),
    ("m020_event_vectors", "memory"),  # dense vectors of events (memory/dense.py)
    ("m030_eval_reports", "evals"),  # issue 25: `eval` reports for the ui's Eval page
    ("m031_memories_status_created", "memory"),  # the ui's memory page, in index order
    ("m032_sync_change_counter", "sync"),  # issue 24: a no-op sync is one read
    # Issue 23: memories in the dense fusion. Numbered past m032 (m020's block was passed
    # while it was open), in a block of its own: m040-m044.
    ("m040_memory_vectors", "memory"),  # dense vectors of memory versions (memory/dense.py)
    ("m041_scanned_texts", "memory"),  # issue 24: a memory text is scanned for secrets once
    ("m042_user_preferences", "memory"),  # issue 24: essentials read what they show
    ("m043_memory_changes", "memory"),  # issue 24: a memory search kept while nothing changed
    # Issue 23: the dense extra's start-up (m043-m049 are kept for the memory block).
    ("m050_dense_queries", "memory"),  # query vectors and their rankings (dense_queries.py)
    ("m052_vector_changes", "memory"),  # a count of deleted vectors (memory/dense.py)
    ("m054_skill_changes", "skills"),  # issue 24: the catalog's scores kept while unchanged
    # Issue 24, the first import: the event index written once a batch.
    ("m056_events_batch", "runs"),  # the marker of a bulk write of events
    ("m057_event_index_after_batch", "memory"),  # the event index waits for the marker
    ("m058_scanned_mark", "memory"),  # issue 24: "scanned?" answered by the version's row
    # Issue 24, the store's size with the dense extra: after m052, whose triggers it makes
    # again, and numbered past m058 so that the names sort in run order.
    ("m060_compact_vectors", "memory"),  # 8-bit vectors keyed by integers, models named once
    ("m061_pack_items_inline", "context"),  # issue 24: a pack's record is its one row
    ("m062_vectors_by_row", "memory"),  # issue 24: event vectors keyed by their row alone
    ("m063_events_keyed_by_row", "memory"),  # issue 24: the event index names `events.row`
    ("m066_line_ids", "memory"),  # issue 24: each version's shared-line id kept with it
    ("m067_events_name_run_by_row", "runs"),  # issue 24: `events.run` is the run's integer row
)


def all_migrations() -> list[Migration]:
    """The migration functions in `MIGRATION_ORDER` (each looked up in its domain's table
    modules, `SCHEMA_MODULES`)."""
    return [(name, _migration_function(name, domain)) for name, domain in MIGRATION_ORDER]


def _migration_function(name: str, domain: str) -> Callable[[sqlite_utils.Database], None]:
    import importlib

    for module in SCHEMA_MODULES[domain]:
        function: Callable[[sqlite_utils.Database], None] | None = getattr(
            importlib.import_module(module), name, None)
        if function is not None:
            return function
    raise LookupError(f"migration {name} is in none of {domain}'s modules")


def backup_database(conn: sqlite3.Connection, target: Path) -> None:
    """A consistent copy of the open database (SQLite's backup API) at `target`, written
    beside it and renamed into place; a copy already there is kept (it is the older one)."""
    if target.exists():
        return
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    copy = sqlite3.connect(str(partial))
    try:
        conn.backup(copy)
    finally:
        copy.close()
    os.replace(partial, target)


def applied_migrations(db: sqlite_utils.Database) -> list[str]:
    conn = db.conn
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone():
        return []
    return [row[0] for row in conn.execute("SELECT name FROM _migrations ORDER BY rowid")]


def pending_migrations(db: sqlite_utils.Database) -> list[Migration]:
    # Names first: a store that is up to date (every hook, every command) imports none of
    # the domains' table modules, which are a dozen modules of schema code.
    done = set(applied_migrations(db))
    return [(name, _migration_function(name, domain)) for name, domain in MIGRATION_ORDER
            if name not in done]


def apply_migrations(db: sqlite_utils.Database, upto: str | None = None,
                     backup_prefix: str | None = None) -> list[str]:
    """Apply pending migrations (each in its own transaction); return the names applied.

    `upto` stops after the named migration (tests use it to build older schemas).
    `backup_prefix`: a database that already has migrations (a store made by an older
    version) is first copied to `{backup_prefix}{first pending migration}`, so an upgrade
    that goes wrong, or a downgrade of agentstate, can go back to it.
    """
    conn = db.conn
    pending = pending_migrations(db)
    if not pending:
        return []
    if backup_prefix is not None and applied_migrations(db):
        backup_database(conn, Path(f"{backup_prefix}{pending[0][0]}"))
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


def store_up_to_date(store: Any) -> bool:
    """Has the open store applied every migration this version knows? (Read only: the
    names recorded in `_migrations`, no domain's schema imported.)"""
    conn = store.conn
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                        "AND name = '_migrations'").fetchone():
        return False
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
    return all(name in done for name, _ in MIGRATION_ORDER)
