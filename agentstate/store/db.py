"""Finding, creating and opening the `.agentstate/` store.

The store is found like git finds `.git`: walk up from the working directory; `--dir` or
AGENTSTATE_DIR override. The database is SQLite in WAL mode with a busy timeout (several agent
processes write at once) and foreign keys on.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.config import CONFIG_NAME, Settings, load_settings
from agentstate.errors import AgentStateError, CorruptStore, StoreMissing
from agentstate.lazy_re import LazyPattern
from agentstate.store.clock import Clock, IdSource, clock_from_env, ids_from_env

if TYPE_CHECKING:
    import sqlite_utils

# Query parameters: positional (a sequence) or named (a mapping), as sqlite3 takes them.
Params = Sequence[Any] | Mapping[str, Any]
_IDENTIFIER = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]*")

STORE_DIR = ".agentstate"
DB_NAME = "state.db"
SKILLS_DIR = "skills"
BUSY_TIMEOUT_MS = 10_000
# The write-ahead log a one-shot process may leave for the next close (Store.close_at_exit):
# ~10 pack records of 16 KB pages, read again by the next open in well under a millisecond.
LOG_LEFT_MAX = 1 << 20
_LEFT_OPEN: list[sqlite3.Connection] = []
# An allow-list: only shared/ (written by the first `agentstate sync`) is for git. Everything
# else here, this file and config.toml included, is the clone's own, so `git add .agentstate`
# never commits a file that a teammate's `init` also creates (their pull would abort on it,
# "untracked working tree files would be overwritten"); git replaces an ignored file freely.
# The named lines keep the private files ignored even if someone drops the first rule.
GITIGNORE = (
    "# agentstate: only shared/ (written by `agentstate sync`) is meant for git; the rest is\n"
    "# this clone's own. To share the policy too: git add -f .agentstate/config.toml\n"
    "/*\n!/shared/\n"
    "state.db\nstate.db-*\nskills/\n*.lock\nhook-errors.log\nhistory.key\n"
)
# What earlier versions wrote: a store that still has it (untracked) is brought forward.
OLD_GITIGNORE = (
    "# agentstate: the database and the skills repository are local state.\n"
    "state.db\nstate.db-*\nskills/\n*.lock\nhook-errors.log\nhistory.key\n"
)


@dataclass
class Store:
    """An open store. Domain functions take one of these; nothing else is global."""

    root: Path  # the .agentstate directory
    db: sqlite_utils.Database
    settings: Settings  # config.toml, validated when the store was opened
    clock: Clock = field(default_factory=Clock)
    ids: IdSource = field(default_factory=IdSource)
    # Set by open_store when it upgraded a store made by an older version: the migrations
    # applied and the copy of the database taken before them (the CLI says so on stderr).
    upgraded: list[str] = field(default_factory=list)
    backup: Path | None = None

    @property
    def work_tree(self) -> Path:
        """The directory that holds `.agentstate/` (the repository root)."""
        return self.root.parent

    @property
    def db_path(self) -> Path:
        return self.root / DB_NAME

    @property
    def skills_path(self) -> Path:
        return self.root / SKILLS_DIR

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def rows(self, sql: str, params: Params = ()) -> list[dict[str, Any]]:
        """The one way to read rows: each row a dict keyed by column name.

        On the raw connection (sqlite_utils is not imported for a read). The columns must
        have distinct names (alias them: `SELECT a.id AS a_id, b.id AS b_id`)."""
        cursor = self.db.conn.execute(sql, params)
        keys = _column_names(cursor)
        return [dict(zip(keys, row, strict=True)) for row in cursor]

    def row(self, sql: str, params: Params = ()) -> dict[str, Any] | None:
        """The first row `sql` returns, as for `rows`, or None."""
        cursor = self.db.conn.execute(sql, params)
        row = cursor.fetchone()
        return None if row is None else dict(zip(_column_names(cursor), row, strict=True))

    def insert(self, table: str, row: Mapping[str, Any], *, or_ignore: bool = False) -> None:
        """The one way to insert: one row (column → value) as a hand-written INSERT on the raw
        connection, so a write never imports sqlite_utils either. `or_ignore` skips a row
        that would break a uniqueness constraint. Table and column names come from code,
        never from input (checked: plain identifiers only)."""
        names = [table, *row]
        bad = [n for n in names if not _IDENTIFIER.fullmatch(n)]
        if bad:
            raise ValueError(f"not a plain SQL identifier: {bad[0]!r}")
        verb = "INSERT OR IGNORE" if or_ignore else "INSERT"
        self.db.conn.execute(
            f"{verb} INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            tuple(row.values()),
        )

    def value(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row `sql` returns, or None (a count, a kv value,
        an id: where a dict per row would only be unpacked again)."""
        row = self.db.conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def has_table(self, name: str) -> bool:
        """Whether the database has a table of this name (a store opened without migrating
        may lack a domain's tables)."""
        return self.value("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                          (name,)) is not None

    def copy_into(self, path: Path) -> None:
        """A consistent copy of the database at `path`, taken while writers go on (VACUUM
        INTO writes no free pages, so text erased from the live file is not in the copy)."""
        self.db.conn.execute("VACUUM INTO ?", (str(path),))

    def vacuum(self) -> None:
        """Give freed pages back to the file system (the WAL checkpointed before and after,
        so the space really leaves both files)."""
        conn = self.db.conn
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def set_busy_timeout(self, ms: int) -> None:
        """How long a write waits for another process's lock before it fails."""
        self.db.conn.execute(f"PRAGMA busy_timeout = {int(ms)}")

    def now(self) -> str:
        return self.clock.now_ts()

    def new_id(self) -> str:
        return self.ids.new()

    def close(self) -> None:
        self.db.conn.close()

    def close_at_exit(self, log_limit: int = LOG_LEFT_MAX) -> None:
        """For a process that ends with `os._exit` next: leave the connection open when the
        write-ahead log is under `log_limit` bytes, so that the last close's checkpoint (an
        fsync of the log, the copy into the file, an fsync of the file) is left to the next
        command that closes the store, which folds this log with its own; close as usual
        otherwise. The commits are in the log, as a killed process leaves them: the next
        open reads them. What waits is durability across a power loss (`synchronous =
        NORMAL` syncs at checkpoints only), never the data's consistency."""
        try:
            size = os.stat(f"{self.db_path}-wal").st_size
        except OSError:
            size = 0
        if size >= log_limit:
            self.close()
        else:  # referenced until the process ends: a connection freed is a connection closed
            _LEFT_OPEN.append(self.db.conn)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or a savepoint when already inside one.

        Every multi-row write goes through this, so a failure leaves nothing half-written and
        concurrent writers queue on the busy timeout instead of failing mid-way.
        """
        conn = self.db.conn
        if conn.in_transaction:
            name = f"sp_{self.ids.new()}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
                raise
            conn.execute(f"RELEASE {name}")
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, self.root) from exc
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise translate_sqlite_error(exc, self.root) from exc


def _column_names(cursor: sqlite3.Cursor) -> list[str]:
    keys = [d[0] for d in cursor.description or ()]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate column names in a query's result: {keys}")
    return keys


def find_store(start: Path | None = None, override: str | Path | None = None) -> Path:
    """Return the `.agentstate` directory to use, or raise StoreMissing."""
    explicit = override if override is not None else os.environ.get("AGENTSTATE_DIR")
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if path.name != STORE_DIR and (path / STORE_DIR).is_dir():
            path = path / STORE_DIR
        if not (path / DB_NAME).exists():
            raise StoreMissing(f"no agentstate store at {path} (run `agentstate init` there)")
        return path
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / STORE_DIR / DB_NAME).exists():
            return candidate / STORE_DIR
    raise StoreMissing(
        f"no .agentstate store in {here} or any parent; run `agentstate init` first"
    )


def init_location(start: Path | None = None) -> Path:
    """Where `init` puts the store: the git work-tree root, or the directory itself."""
    import subprocess  # here: opening a store (every hook) never runs a process

    here = (start or Path.cwd()).resolve()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=here, capture_output=True, text=True, check=False,
        )
    except FileNotFoundError:
        return here
    if out.returncode == 0 and out.stdout.strip():
        return Path(out.stdout.strip())
    return here


def connect(db_path: Path) -> sqlite_utils.Database:
    """Open the database with the pragmas every process needs, checking it is SQLite."""
    try:
        conn = sqlite3.connect(str(db_path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Touch the schema: a file that is not a database fails here, not mid-command.
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        # A read-only .agentstate/ or an unopenable file is not corruption: say what it is.
        text = str(exc)
        if "readonly" in text or "read-only" in text or "unable to open" in text:
            raise translate_sqlite_error(exc, db_path.parent) from exc
        raise CorruptStore(f"{db_path} is not a usable SQLite database ({exc})") from exc
    except sqlite3.DatabaseError as exc:
        raise CorruptStore(f"{db_path} is not a usable SQLite database ({exc})") from exc
    return LazyDatabase(conn)  # type: ignore[return-value]


class LazyDatabase:
    """A sqlite_utils.Database that is imported and built on first use.

    Importing sqlite_utils costs 60-90 ms (click, dateutil, plugin entry points) and no
    command needs it once the store is migrated: rows are read with `Store.rows` /
    `Store.row` and inserted with `Store.insert`, all on `.conn`. Only a pending migration
    (which receives a sqlite_utils.Database) builds the real Database, on the same
    connection, and anything asked of it is delegated there.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._real: Any = None

    @property
    def real(self) -> sqlite_utils.Database:
        if self._real is None:
            import sqlite_utils

            self._real = sqlite_utils.Database(self.conn)
        return self._real

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __getitem__(self, name: str) -> Any:
        return self.real[name]


def open_store(
    override: str | Path | None = None,
    *,
    start: Path | None = None,
    clock: Clock | None = None,
    ids: IdSource | None = None,
    migrate: bool = True,
) -> Store:
    """Find and open the store, applying pending migrations."""
    from agentstate.store.migrations import apply_migrations

    root = find_store(start, override)
    settings = load_settings(root / CONFIG_NAME)  # a bad config fails before the db opens
    db = connect(root / DB_NAME)
    store = Store(
        root=root,
        db=db,
        settings=settings,
        clock=clock or clock_from_env(),
        ids=ids or ids_from_env(),
    )
    if migrate:
        prefix = f"{root / DB_NAME}-before-"
        try:
            store.upgraded = apply_migrations(db, backup_prefix=prefix)
        except sqlite3.OperationalError as exc:
            store.close()
            raise translate_sqlite_error(exc, root) from exc
        if store.upgraded:
            copy = Path(f"{prefix}{store.upgraded[0]}")
            store.backup = copy if copy.exists() else None  # None: it was a blank database
    return store


def translate_sqlite_error(exc: sqlite3.Error, root: Path | None = None) -> AgentStateError:
    """One-line messages for the SQLite failures a user can cause."""
    text = str(exc)
    where = f" ({root})" if root else ""
    if "readonly" in text or "read-only" in text:
        return AgentStateError(f"the store is read-only{where}: {text}")
    if "unable to open" in text:
        # On a read-only file system SQLite cannot create the WAL's -shm file and says only
        # "unable to open database file": name the cause when the directory is not writable.
        if root is not None and root.is_dir() and not os.access(root, os.W_OK):
            return AgentStateError(f"the store is read-only{where}: {text}")
        return AgentStateError(f"cannot open the store database{where}: {text}")
    if "locked" in text or "busy" in text:
        return AgentStateError(f"the store is busy (another process holds a lock){where}")
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return CorruptStore(f"the store database is damaged{where}: {text}")
    return AgentStateError(f"database error{where}: {text}")


def as_agentstate_error(exc: BaseException) -> AgentStateError | None:
    """Map the failures a user can cause (bad db file, read-only dir) to our error family."""
    if isinstance(exc, AgentStateError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return translate_sqlite_error(exc)
    if isinstance(exc, PermissionError):
        return AgentStateError(f"permission denied: {exc.filename or exc}")
    if isinstance(exc, OSError):
        return AgentStateError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    return None



class IdleConnection:
    """One connection to a store's database held by a long-lived process between its
    calls (the MCP server), so that closing a call's connection is not the last close: the
    last connection to close a WAL database checkpoints the log into the file, which a
    process that opens the store afresh for every call would otherwise pay on each one.

    It reads once (SQLite counts a connection among a WAL database's users from its first
    read, when it maps the shared-memory index) and never again, but for `checkpoint`: it
    holds no transaction, so it pins no snapshot and keeps no checkpoint or writer waiting,
    and nothing a call reads goes through it. When another file is at the store's path (a
    restore moves the old store aside) it follows the new file and lets go of the old one.
    Use it on one thread (sqlite3's rule for a connection)."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None

    def hold(self, store: Store) -> None:
        """Hold a connection to the file `store` has open (call it before the store
        closes, so that the file is still in use)."""
        try:
            info = os.stat(store.db_path)
        except OSError:
            return
        identity = (info.st_dev, info.st_ino)
        if identity == self._identity:
            return
        self.close()
        conn = sqlite3.connect(str(store.db_path), isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error:  # only a saving: the call's close checkpoints, as before
            conn.close()
            return
        self._conn, self._identity = conn, identity

    def checkpoint(self) -> None:
        """Copy the log into the database file where no reader needs its frames, waiting
        for no lock (PASSIVE: a writer or reader at work is left alone, and what they hold
        is copied by a later checkpoint). For a moment nothing waits on: a fully copied
        log is started afresh by the next commit, which then never runs SQLite's
        auto-checkpoint itself."""
        if self._conn is None:
            return
        try:
            self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:  # a saving only: the next commit's auto-checkpoint is still there
            pass

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._identity = None, None


def change_mark(db_path: Path) -> tuple[int, ...]:
    """A value that changes when anything is committed to the database, by any process:
    the size and modification time of the database file and of its write-ahead log (in
    WAL mode every commit appends to the log; a checkpoint rewrites the file). Read from
    the file system, with no connection: a long-lived connection kept only to watch
    (`PRAGMA data_version`) would keep a maintenance job in exclusive locking mode out.
    Not exact: two commits within one tick of the file system's clock that leave the log
    the same size look like one; a reader that caches on this mark also bounds the age
    of what it keeps (web/previews.py)."""
    mark: list[int] = []
    for path in (Path(db_path), Path(f"{db_path}-wal")):
        try:
            info = path.stat()
        except FileNotFoundError:
            info = None
        # An empty log holds nothing: SQLite creates and deletes it as connections come and
        # go (the last one to close checkpoints and removes it), with no change to the data.
        mark += [info.st_size, info.st_mtime_ns] if info and info.st_size else [-1, -1]
    return tuple(mark)
