"""`agentstate restore FILE`: replace the store with a backup, purges kept.

Order, so that a failure at any step before the swap leaves the live store untouched:
1. read and check the whole backup into a staging folder *inside* the store,
   `.agentstate/.restoring-ID/`, git-ignored (agentstate.maintenance.backup.read_backup): a
   restore killed mid-way leaves nothing in the repository root that `git add -A` would
   commit (its staging holds the backup's whole database); `doctor` reports leftovers and
   `doctor --repair` removes them;
2. refuse when a store is there and `--force` was not given;
3. take the live store's write lock (BEGIN IMMEDIATE: running writers wait, readers go on)
   and read its purge tombstones;
4. finish the staging store: the live store's own files (config.toml, history.key, …),
   migrations up to this version, the skills registry from the bundle, the tombstones
   re-applied (agentstate.memory.tombstones), SQLite's integrity check;
5. swap with renames: live → a sibling, staging → the store, then the old one moves into the
   new store as `before-restore-STAMP/` (git-ignored).

What is guaranteed about purged text: every purge recorded in the live store (or in the
backup itself) holds in the restored store — rows, full-text indexes and the raw file. When
no live store is there (or its database cannot be read and `--ignore-live-purges` was
given), only the purges the backup itself recorded hold: a purge made after the backup on a
store that is gone cannot be known.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from agentstate.config import CONFIG_NAME, Settings, load_settings
from agentstate.config_template import write_default_config
from agentstate.errors import (
    AgentStateError,
    CorruptStore,
    InvalidInput,
    NotFound,
    Refused,
    StoreMissing,
)
from agentstate.maintenance.backup import (
    ASIDE_PREFIX,
    BUNDLE,
    AsideCopy,
    RestoreResult,
    read_backup,
)
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import (
    DB_NAME,
    GITIGNORE,
    SKILLS_DIR,
    STORE_DIR,
    Store,
    connect,
    find_store,
    init_location,
    translate_sqlite_error,
)

# Never copied from the live store into the new one: its database, its registry, its locks,
# and earlier kept-aside stores (moved over separately, not nested).
STAGING_PREFIX = ".restoring-"  # inside the store, git-ignored
_NOT_CARRIED = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal", SKILLS_DIR)


def restore(backup_file: Path, *, override: str | Path | None = None,
            start: Path | None = None, force: bool = False,
            ignore_live_purges: bool = False, clock: Clock | None = None,
            ids: IdSource | None = None) -> RestoreResult:
    clock, ids = clock or Clock(), ids or IdSource()
    root = _target(override, start)
    if not root.parent.is_dir():  # never a folder made up from a typo in --dir
        raise NotFound(f"no folder {root.parent} to restore the store into (create it first)")
    live = root.exists()
    _check_owner(root if live else None)
    if live and not root.is_dir():
        raise InvalidInput(f"{root} is not a folder")
    made_root = False
    ignore_before: str | None = None
    lock: sqlite3.Connection | None = None
    staging = root / f"{STAGING_PREFIX}{ids.new()}"
    try:
        if not live:
            root.mkdir()
            made_root = True
        # Ignored before the staging holds a byte; put back as it was if the restore fails.
        ignore_before = _ignore(root, f"{STAGING_PREFIX}*/")
        staging.mkdir()
        manifest = read_backup(backup_file.expanduser().absolute(), staging)
        if live and not force:
            raise Refused(f"a store is already at {root}; `restore --force` replaces it (the "
                          f"current one is kept aside inside the new store as "
                          f"{ASIDE_PREFIX}…/)")
        result = RestoreResult(store=str(root), backup=str(backup_file),
                               backup_created=str(manifest.get("created", "")),
                               migrations_applied=[], skills_refs=0, kept_aside=None,
                               tombstones=0)
        _same_repository(manifest, root.parent, result)
        tombstones: list[Any] = []
        live_db = root / DB_NAME
        if live and live_db.exists():
            lock, tombstones = _lock_and_read(live_db, root, ignore_live_purges, result)
        elif live:
            result.warnings.append(f"{root} has no {DB_NAME}: no purge tombstones to carry")
        else:
            result.warnings.append("no store was here: only the purges recorded in the "
                                   "backup itself hold (later ones on a lost store cannot be "
                                   "known)")
        _complete(staging, root if live else None, manifest, result)
        _reapply(staging, tombstones, live_db if lock is not None else None, clock, ids,
                 result)
        stamp = clock.now_ts()[:19].replace("-", "").replace(":", "")
        name, n = f"{ASIDE_PREFIX}{stamp}", 1
        while live and (root / name).exists():  # two restores within one second
            n += 1
            name = f"{ASIDE_PREFIX}{stamp}-{n}"
        result.kept_aside = _swap(root, staging, live, name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if ignore_before is not None and not made_root:
            (root / ".gitignore").write_text(ignore_before, encoding="utf-8")
        if made_root and not (root / DB_NAME).exists():
            shutil.rmtree(root, ignore_errors=True)  # no store was here: none is left
        raise
    finally:
        if lock is not None:
            lock.close()  # rolls back the read-only lock transaction on the old file
    # The restore is done: bounding the kept copies may fail (a file held open elsewhere)
    # without undoing it.
    try:
        keep = load_settings(root / CONFIG_NAME).retention.keep_restore_copies
        result.removed_aside = trim_aside_copies(root, keep)
    except (OSError, AgentStateError) as exc:
        result.warnings.append(f"older stores kept aside by restore were not all removed: "
                               f"{exc}")
    if result.kept_aside is not None and not Path(result.kept_aside).exists():
        result.kept_aside = None  # keep_restore_copies = 0: not even the newest is kept
    result.aside_copies = aside_copies(root)
    return result


def _check_owner(live: Path | None) -> None:
    """Replacing a store (or creating one from a file) rewrites every scope: an owner action,
    decided by the environment's principal under the live store's config.toml (the defaults
    when there is none), before anything is read or staged."""
    from agentstate.store.principals import check_whole_store, principal_from_environment

    settings = load_settings(live / CONFIG_NAME) if live is not None else Settings()
    who = principal_from_environment(settings.principals).principal
    check_whole_store(who, "restore a store from a backup", read=True, write=True)


def _target(override: str | Path | None, start: Path | None) -> Path:
    """The store to replace, or where a store would be created (as `init` places it)."""
    try:
        return find_store(start, override)
    except StoreMissing:
        pass
    explicit = override if override is not None else os.environ.get("AGENTSTATE_DIR")
    if explicit:
        named = Path(explicit).expanduser().absolute()
        return named if named.name == STORE_DIR else named / STORE_DIR
    return init_location(start) / STORE_DIR


def _same_repository(manifest: dict[str, Any], work_tree: Path, result: RestoreResult) -> None:
    """A warning when the backup was made in another project (no first commit in common)."""
    from agentstate.maintenance.backup import root_commits

    recorded = manifest.get("repository")
    theirs = recorded.get("root_commits") if isinstance(recorded, dict) else None
    if not isinstance(theirs, list) or not theirs:
        return  # an older backup, or made outside a git repository: nothing to compare
    ours = root_commits(work_tree)
    if ours and not set(ours) & {str(c) for c in theirs}:
        result.warnings.append(
            f"the backup was made in another repository (its first commit is "
            f"{str(theirs[0])[:12]}, this one's is {ours[0][:12]}): its memories and skills "
            "are about that project")


def _lock_and_read(live_db: Path, root: Path, ignore: bool,
                   result: RestoreResult) -> tuple[sqlite3.Connection | None, list[Any]]:
    from agentstate.memory.tombstones import read_tombstones

    try:
        db = connect(live_db)
    except (CorruptStore, AgentStateError) as exc:
        return None, _unreadable(exc.message, ignore, result)
    conn = db.conn
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        conn.close()
        raise translate_sqlite_error(exc, root) from exc
    try:
        tombstones = read_tombstones(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        return None, _unreadable(str(exc), ignore, result)
    result.tombstones = len(tombstones)
    return conn, tombstones


def _unreadable(why: str, ignore: bool, result: RestoreResult) -> list[Any]:
    if not ignore:
        raise Refused(f"the live store's database cannot be read ({why}), so purges made "
                      "after the backup cannot be carried over; add --ignore-live-purges to "
                      "restore anyway")
    result.warnings.append(f"the live database could not be read ({why}): purges made after "
                           "the backup are not re-applied")
    return []


def _complete(staging: Path, live_root: Path | None, manifest: dict[str, Any],
              result: RestoreResult) -> None:
    """Everything but the database's content: files, migrations, the skills registry."""
    from agentstate.store.migrations import apply_migrations

    if live_root is not None:
        for item in sorted(live_root.iterdir()):
            if item.name in _NOT_CARRIED or item.name.startswith((ASIDE_PREFIX, STAGING_PREFIX)) \
                    or item.suffix == ".lock":
                continue
            target = staging / item.name
            if item.is_dir() and not item.is_symlink():
                shutil.copytree(item, target, symlinks=True)
            else:
                shutil.copy2(item, target, follow_symlinks=False)
    elif not (staging / CONFIG_NAME).exists():
        write_default_config(staging / CONFIG_NAME)
    if not (staging / ".gitignore").exists():
        (staging / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    load_settings(staging / CONFIG_NAME)  # a bad config.toml fails before the swap
    db = connect(staging / DB_NAME)
    try:
        db.conn.execute("PRAGMA journal_mode = WAL")
        result.migrations_applied = apply_migrations(db)
    finally:
        db.conn.close()
    bundle = staging / BUNDLE
    if bundle.exists():
        from agentstate.skills.bundle import unbundle_registry
        from agentstate.skills.registry import ensure_registry

        result.skills_refs = unbundle_registry(bundle, staging / SKILLS_DIR)
        ensure_registry(staging / SKILLS_DIR)
        bundle.unlink()
    else:
        from agentstate.maintenance.init import _skills
        from agentstate.store.init import InitResult

        _skills(staging, InitResult(staging))


def _reapply(staging: Path, tombstones: list[Any], live_db: Path | None, clock: Clock,
             ids: IdSource, result: RestoreResult) -> None:
    from agentstate.memory.tombstones import reapply_purges

    store = Store(root=staging, db=connect(staging / DB_NAME),
                  settings=load_settings(staging / CONFIG_NAME), clock=clock, ids=ids)
    try:
        done = reapply_purges(store, tombstones, live_db)
        check = [r["integrity_check"] for r in store.rows("PRAGMA integrity_check")]
        if check != ["ok"]:
            raise CorruptStore(f"the restored database fails integrity_check: {check[0]}")
    finally:
        store.close()
    result.purged_again, result.carried = done.purged, done.carried
    result.still_in, result.rewrite_command = done.still_in, done.rewrite_command


def _swap(root: Path, staging: Path, live: bool, aside_name: str) -> str | None:
    """Put the staging store (inside `root`) in place; the old store ends up inside the new
    one as `aside_name`. The old store is outside the store folder only between two renames."""
    if not live:
        for item in sorted(staging.iterdir()):
            target = root / item.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(item, target)
        staging.rmdir()
        _ignore(root, f"{STAGING_PREFIX}*/")
        return None
    outside = root.parent / f"{root.name}.{aside_name}"
    root.rename(outside)
    try:
        (outside / staging.name).rename(root)
    except OSError:
        outside.rename(root)  # put the live store back: nothing changed
        raise
    kept = root / aside_name
    outside.rename(kept)
    for earlier in sorted(kept.glob(f"{ASIDE_PREFIX}*")):  # keep them side by side
        earlier.rename(root / earlier.name)
    _ignore(root, f"{ASIDE_PREFIX}*/")
    _ignore(root, f"{STAGING_PREFIX}*/")
    return str(kept)


def _ignore(root: Path, line: str) -> str | None:
    """`line` in the store's .gitignore (appended once). → the file's text before, when it
    was changed."""
    ignore = root / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    lines = text.splitlines()
    if line in lines:
        return None
    with ignore.open("a", encoding="utf-8") as handle:
        handle.write(("" if not text or text.endswith("\n") else "\n") + f"{line}\n")
    return text


def restore_leftovers(root: Path) -> list[Path]:
    """What interrupted restores left: staging folders inside the store, and (from older
    versions, or a crash between the swap's renames) `.agentstate.restoring-*/` and
    `.agentstate.before-restore-*/` beside it, in the repository root."""
    found = sorted(root.glob(f"{STAGING_PREFIX}*")) if root.is_dir() else []
    found += sorted(root.parent.glob(f"{root.name}.restoring-*"))
    found += sorted(root.parent.glob(f"{root.name}.{ASIDE_PREFIX}*"))
    return [p for p in found if p.is_dir() and not p.is_symlink()]


def remove_restore_leftovers(root: Path) -> list[str]:
    """Staging folders are deleted (a backup's copy, purged text included); an old store
    left beside the new one by a crash mid-swap is moved inside it, as a finished restore
    keeps it. One line per change."""
    actions = []
    for path in restore_leftovers(root):
        aside = path.name.startswith(f"{root.name}.{ASIDE_PREFIX}")
        if aside and root.is_dir():
            target = root / path.name[len(root.name) + 1:]
            if not target.exists():
                path.rename(target)
                _ignore(root, f"{ASIDE_PREFIX}*/")
                actions.append(f"moved {path.name}/ (the store before a restore) into "
                               f"{root.name}/")
                continue
        if not aside:
            shutil.rmtree(path, ignore_errors=True)
            actions.append(f"removed {path.name}/ left by an interrupted restore")
    return actions


def _aside_order(path: Path) -> tuple[str, int]:
    """before-restore-STAMP or before-restore-STAMP-N (a second restore in one second):
    by stamp, then N, so `-10` comes after `-9`."""
    stamp, _, n = path.name[len(ASIDE_PREFIX):].partition("-")
    return stamp, int(n) if n.isdigit() else 1


def _aside_paths(root: Path) -> list[Path]:
    found = root.glob(f"{ASIDE_PREFIX}*") if root.is_dir() else []
    return sorted((p for p in found if p.is_dir() and not p.is_symlink()), key=_aside_order)


def _folder_bytes(path: Path) -> int:
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file() and not item.is_symlink():
                total += item.stat().st_size
        except OSError:  # a file removed while counting: it no longer takes room
            continue
    return total


def aside_copies(root: Path) -> list[AsideCopy]:
    """The stores `restore --force` replaced and kept inside this one, oldest first, with
    the bytes each takes (a whole store: its database, skills registry and files)."""
    return [AsideCopy(path=str(p), bytes=_folder_bytes(p)) for p in _aside_paths(root)]


def trim_aside_copies(root: Path, keep: int) -> list[str]:
    """Remove all but the newest `keep` replaced stores ([retention] keep_restore_copies);
    → the paths removed. Each is a whole copy of an older store, so without a bound every
    restore would leave another one behind."""
    paths = _aside_paths(root)
    removed = paths[:max(len(paths) - keep, 0)]
    for path in removed:
        shutil.rmtree(path)
    return [str(p) for p in removed]
