"""The storage half of `agentstate init`: config.toml, .gitignore, state.db and its migrations.

It knows no domain: `agentstate.maintenance.init.init_store` composes it with the skills
registry and the shipped skills through the `extra` callback, which runs on the (possibly
still staged) store directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.config import CONFIG_NAME, load_settings
from agentstate.config_template import write_default_config
from agentstate.errors import AgentStateError
from agentstate.store.db import (
    DB_NAME,
    GITIGNORE,
    OLD_GITIGNORE,
    STORE_DIR,
    connect,
    init_location,
)
from agentstate.store.migrations import apply_migrations

# A new store's pages (SQLite's default is 4 KB). The run log's rows are ~1 KB of text each,
# and a page's unused tail is on average half a row: at 4 KB that was ~0.1 MB of every
# 1,000 events (issue 24, docs/architecture.md "The store's size"); at 16 KB a quarter of
# it. A store made with smaller pages keeps them (the size is fixed by the file's first
# write, and the WAL file cannot change it).
PAGE_SIZE = 16384


@dataclass
class InitResult:
    path: Path
    created: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.created)


Extra = Callable[[Path, "InitResult"], None]


def create_store(
    start: Path | None = None,
    target: Path | None = None,
    override: str | Path | None = None,
    extra: Extra | None = None,
) -> InitResult:
    """Create whatever part of `.agentstate/` is missing; an existing part is left alone.

    Where: `target` (a directory to put `.agentstate/` in); else `override` (`--dir` /
    AGENTSTATE_DIR, read the way every other command reads it: a directory holding the
    store, or the `.agentstate` directory itself); else the git work-tree root of `start`.

    A brand-new store is built in a sibling temp directory and renamed into place, so a
    failure (read-only directory, full disk) leaves no half-made store behind.
    """
    if target is None and override:
        named = Path(override).expanduser()
        target = named.parent if named.name == STORE_DIR else named
    base = target.resolve() if target else init_location(start)
    root = base / STORE_DIR
    if root.exists():
        return _complete(root, InitResult(root), extra)
    staging = base / f".agentstate.init-{os.getpid()}"
    try:
        staging.mkdir(parents=False, exist_ok=False)
        result = _complete(staging, InitResult(root), extra)
        staging.rename(root)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise AgentStateError(f"cannot create {root}: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


def _complete(root: Path, result: InitResult, extra: Extra | None) -> InitResult:
    config = root / CONFIG_NAME
    if config.exists():
        load_settings(config)  # a committed config with a mistake fails before anything is made
    else:
        write_default_config(config)
        result.created.append(CONFIG_NAME)
    ignore = root / ".gitignore"
    if not ignore.exists():
        ignore.write_text(GITIGNORE, encoding="utf-8")
        result.created.append(".gitignore")
    elif _read(ignore) == OLD_GITIGNORE and _untracked(ignore):
        # An earlier version's rules let `git add .agentstate` commit config.toml and this
        # file, which then collided with a teammate's own copies on pull.
        ignore.write_text(GITIGNORE, encoding="utf-8")
        result.created.append(".gitignore (only shared/ is for git now)")
    db_path = root / DB_NAME
    fresh_db = not db_path.exists()
    db = connect(db_path)
    try:
        if fresh_db:
            # Before the first write: the page size is fixed once the file has content.
            db.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            db.conn.execute("PRAGMA journal_mode = WAL")
        # An older store upgraded by `init` keeps a copy from before, as on any first use.
        applied = apply_migrations(db, backup_prefix=None if fresh_db else f"{db_path}-before-")
    finally:
        db.conn.close()
    if fresh_db:
        result.created.append(DB_NAME)
    elif applied:
        result.created.append(f"{DB_NAME} migrations: {', '.join(applied)}")
    from agentstate.store.keys import KEY_FILE, store_key

    if not (root / KEY_FILE).exists():
        store_key(root)
        result.created.append(KEY_FILE)
    if extra is not None:
        extra(root, result)
    return result


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _untracked(path: Path) -> bool:
    """True when git does not track `path` (or there is no git): ours to rewrite."""
    try:
        out = subprocess.run(["git", "ls-files", "--error-unmatch", "--", path.name],
                             cwd=path.parent, capture_output=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return True
    return out.returncode != 0
