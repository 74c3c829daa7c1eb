"""`agentstate backup` and `agentstate restore`: the store as one file, and back.

A backup is a gzip'd tar holding, in this order:
  manifest.json  {"format": "agentstate-backup", "format_version": 1, "agentstate_version",
                  "created", "migrations": [names applied in the copied database],
                  "skills_refs": N, "files": {name: {"bytes", "sha256"}}}
  state.db       a consistent copy made with `VACUUM INTO` (one read transaction: writers
                 keep going, and the copy holds every transaction committed before it began;
                 VACUUM leaves no free page behind, so no erased text rides along)
  skills.bundle  a git bundle of every ref of the skills registry (absent when it is empty)
  config.toml    the store's policy file, used only when no store is there to restore over

Restore validates the whole file before touching anything (a tar with our manifest, a known
format version, migrations this version knows, every checksum, SQLite's integrity check, a
git-verified bundle), builds the new store in a sibling staging folder, re-applies the live
store's purge tombstones there (agentstate.memory.tombstones: purged text is not
resurrected), then swaps the folders with renames and keeps the old store inside the new one
as `before-restore-STAMP/`. Uncommitted skill drafts are not in a backup; they stay in the
folder kept aside.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import tarfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from agentstate.config import CONFIG_NAME
from agentstate.distribution import __version__
from agentstate.errors import AgentStateError, InvalidInput, NotFound
from agentstate.store.db import DB_NAME, Store, connect
from agentstate.store.principals import Principal

FORMAT = "agentstate-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
BUNDLE = "skills.bundle"
MEMBERS = (DB_NAME, BUNDLE, CONFIG_NAME)  # the only names ever read out of a backup
ASIDE_PREFIX = "before-restore-"
CHUNK = 1 << 20


@dataclass
class BackupResult:
    path: str
    bytes: int
    db_bytes: int
    skills_refs: int
    migrations: list[str]
    created: str
    seconds: float
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AsideCopy:
    """A store `restore --force` replaced, kept inside the new one (before-restore-STAMP/)."""

    path: str
    bytes: int


@dataclass
class RestoreResult:
    store: str
    backup: str
    backup_created: str
    migrations_applied: list[str]     # brought the copy up to this version's schema
    skills_refs: int
    kept_aside: str | None            # the replaced store, kept inside the new one
    tombstones: int                   # purge tombstones read from the live store
    purged_again: list[str] = field(default_factory=list)
    carried: dict[str, int] = field(default_factory=dict)
    still_in: list[str] = field(default_factory=list)
    rewrite_command: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Every replaced store still kept, oldest first, after older ones beyond
    # [retention] keep_restore_copies were removed (`removed_aside`).
    aside_copies: list[AsideCopy] = field(default_factory=list)
    removed_aside: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- backup


def backup(store: Store, out: Path | None = None, *, principal: Principal | str
           ) -> BackupResult:
    """Write the backup file. It holds every scope, so it is an owner action (a principal
    that reads every scope); refused before anything is written."""
    from agentstate.store.principals import acting, check_whole_store

    check_whole_store(acting(store, principal), "back up the store", read=True)
    started = time.perf_counter()
    created = store.now()
    stamp = created[:19].replace("-", "").replace(":", "")
    out = (out or Path.cwd()).expanduser().absolute()
    if out.is_dir():  # a folder: the backup goes into it under the default name
        out = out / f"agentstate-backup-{stamp}.tar.gz"
    if out.exists():
        raise InvalidInput(f"{out} already exists; name a new file with --out")
    if not out.parent.is_dir():
        raise InvalidInput(f"no folder {out.parent} to write the backup into")
    from agentstate.skills.bundle import bundle_registry
    from agentstate.store.migrations import applied_migrations

    work = out.parent / f".{out.name}.partial-{store.new_id()}"
    try:
        work.mkdir()
        copy = work / DB_NAME
        store.copy_into(copy)
        probe = connect(copy)
        try:
            migrations = applied_migrations(probe)
        finally:
            probe.conn.close()
        refs = bundle_registry(store.skills_path, work / BUNDLE)
        names = [DB_NAME] + ([BUNDLE] if refs else [])
        if (store.root / CONFIG_NAME).is_file():
            shutil.copyfile(store.root / CONFIG_NAME, work / CONFIG_NAME)
            names.append(CONFIG_NAME)
        manifest: dict[str, Any] = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "agentstate_version": __version__, "created": created,
            "migrations": migrations, "skills_refs": refs,
            "repository": {"root_commits": root_commits(store.work_tree)},
            "files": {name: {"bytes": (work / name).stat().st_size,
                             "sha256": _sha256(work / name)} for name in names},
        }
        partial = work / "backup.tar.gz"
        # Level 1: most of the gain of gzip at a fraction of level 6's time (bench_maintenance).
        with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
            data = json.dumps(manifest, indent=1, sort_keys=True).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
            tar.addfile(info, _BytesReader(data))
            for name in names:
                tar.add(work / name, arcname=name, recursive=False, filter=_anonymous)
        os.chmod(partial, 0o600)  # the store's content: readable by its owner only
        os.replace(partial, out)
    except OSError as exc:
        raise AgentStateError(f"cannot write {out}: {exc.strerror or exc}") from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BackupResult(path=str(out), bytes=out.stat().st_size,
                        db_bytes=manifest["files"][DB_NAME]["bytes"], skills_refs=refs,
                        migrations=migrations, created=created,
                        seconds=round(time.perf_counter() - started, 3),
                        warnings=_exposed(out, store.work_tree))


def _exposed(out: Path, work_tree: Path) -> list[str]:
    """A warning when the backup sits in the host repository's work tree where git sees it:
    the default place is the current folder, and one `git add -A` would then commit (and a
    push publish) everything the store holds."""
    import subprocess

    try:
        out.relative_to(work_tree)
        done = subprocess.run(["git", "check-ignore", "-q", str(out)], cwd=work_tree,
                              capture_output=True, timeout=30, check=False)
    except (ValueError, OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 1:  # 0: ignored; 128: not a git work tree
        return []
    return [f"{out.name} is inside the repository {work_tree} and not git-ignored: `git add "
            "-A` would commit everything the store holds. Move it out of the repository or "
            "ignore it (e.g. `agentstate-backup-*` in .gitignore)"]


def root_commits(work_tree: Path) -> list[str]:
    """The first commits of the host repository: the same in every clone of one project and
    different in any other, so a restore can tell a backup of another repository ([] when
    the work tree is not a git repository or has no commit yet)."""
    import subprocess

    try:
        done = subprocess.run(["git", "rev-list", "--max-parents=0", "HEAD"], cwd=work_tree,
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(done.stdout.split())[:8] if done.returncode == 0 else []


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """No user or group names in the archive; owner-only modes."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o600
    return info


class _BytesReader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        end = len(self.data) if size < 0 else self.at + size
        chunk, self.at = self.data[self.at:end], min(end, len(self.data))
        return chunk


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


# ---------------------------------------------------------------- reading a backup


def read_backup(path: Path, into: Path) -> dict[str, Any]:
    """Check the backup at `path` and write its files into the folder `into`; returns the
    manifest. Anything wrong is InvalidInput naming what, before any store is touched."""
    if path.is_dir():
        raise InvalidInput(f"{path} is a folder: give the backup file made by `agentstate "
                           "backup` (agentstate-backup-….tar.gz)")
    if not path.is_file():
        raise NotFound(f"no backup file {path}")
    bad = f"{path} is not an agentstate backup"
    try:
        tar = tarfile.open(path, "r:*")
    except PermissionError as exc:
        raise AgentStateError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (tarfile.TarError, EOFError, zlib.error, OSError):
        raise InvalidInput(f"{bad} (not a tar archive)") from None
    try:
        with tar:
            manifest = _manifest(tar, bad)
            for name, expected in manifest["files"].items():
                _extract(tar, name, expected, into / name, path)
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise InvalidInput(f"{path} is damaged ({_first_line(exc)})") from exc
    except OSError as exc:
        if isinstance(exc, PermissionError) or exc.filename:
            raise AgentStateError(f"cannot read {path}: {exc.strerror or exc}") from exc
        raise InvalidInput(f"{path} is damaged ({_first_line(exc)})") from exc
    _check_database(into / DB_NAME, path)
    return manifest


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _manifest(tar: tarfile.TarFile, bad: str) -> dict[str, Any]:
    try:
        member = tar.getmember(MANIFEST)
    except KeyError:
        raise InvalidInput(f"{bad} (no {MANIFEST} inside)") from None
    handle = tar.extractfile(member) if member.isfile() and member.size < CHUNK else None
    try:
        manifest = json.loads(handle.read()) if handle is not None else None
    except (UnicodeDecodeError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidInput(f"{bad} ({MANIFEST} is not an agentstate backup manifest)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise InvalidInput(f"{bad} (format_version {version!r} is not a version)")
    if version > FORMAT_VERSION:
        raise InvalidInput(f"the backup was made by a newer agentstate "
                           f"({manifest.get('agentstate_version')}, backup format {version}); "
                           f"this is {__version__}, which reads format {FORMAT_VERSION}")
    files, migrations = manifest.get("files"), manifest.get("migrations")
    if not isinstance(files, dict) or DB_NAME not in files or not set(files) <= set(MEMBERS):
        raise InvalidInput(f"{bad} ({MANIFEST} lists no {DB_NAME} or unknown files)")
    if not isinstance(migrations, list) or not all(isinstance(m, str) for m in migrations):
        raise InvalidInput(f"{bad} ({MANIFEST} has no list of migration names)")
    _known_migrations(migrations)
    return manifest


def _known_migrations(migrations: list[str]) -> None:
    from agentstate.store.migrations import MIGRATION_ORDER

    unknown = [m for m in migrations if m not in {name for name, _ in MIGRATION_ORDER}]
    if unknown:
        raise InvalidInput(f"the backup's database has migrations this agentstate "
                           f"({__version__}) does not know ({', '.join(map(str, unknown[:3]))}):"
                           " it was made by a newer version")


def _extract(tar: tarfile.TarFile, name: str, expected: Any, target: Path, path: Path) -> None:
    try:
        member = tar.getmember(name)
    except KeyError:
        raise InvalidInput(f"{path} is damaged: {name} is missing") from None
    source: IO[bytes] | None = tar.extractfile(member) if member.isfile() else None
    if source is None or not isinstance(expected, dict):
        raise InvalidInput(f"{path} is damaged: {name} is not a regular file")
    digest, size = hashlib.sha256(), 0
    with source, target.open("wb") as sink:
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            sink.write(chunk)
    if digest.hexdigest() != expected.get("sha256") or size != expected.get("bytes"):
        raise InvalidInput(f"{path} is damaged: {name} does not match its checksum")


def _check_database(db_path: Path, path: Path) -> None:
    try:
        conn = sqlite3.connect(str(db_path))
        try:
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
            has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                               "name = '_migrations'").fetchone()
            applied = [str(r[0]) for r in conn.execute(
                "SELECT name FROM _migrations")] if has and rows == ["ok"] else []
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{path} is damaged: its {DB_NAME} is not a database ({exc})") \
            from exc
    if rows != ["ok"]:
        raise InvalidInput(f"{path} is damaged: integrity_check of its {DB_NAME} says "
                           f"{rows[0]}")
    # The database's own list, not only the manifest's: a hand-edited manifest must not let
    # a newer schema in (this version's code would then write to tables it does not know).
    _known_migrations(applied)
