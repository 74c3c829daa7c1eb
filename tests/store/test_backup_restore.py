"""`agentstate backup` / `restore`: a consistent copy while writers run, a restore that
checks the file first, refuses to replace a store without --force, keeps the old one aside,
and never brings back text that was purged."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sqlite3
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from agentstate.maintenance.backup import FORMAT, read_backup
from tests.conftest import git

WRITER = """
import sys
from pathlib import Path
from agentstate.runs.log import append_event, start_run
from agentstate.store.db import open_store

store = open_store(sys.argv[1])
run, _ = start_run(store, "writer " + sys.argv[2])
stop, out = Path(sys.argv[3]), open(sys.argv[4], "a")
i = 0
while not stop.exists() and i < 5000:
    event = append_event(store, run.ref, "observation", f"writer {sys.argv[2]} note {i}")
    out.write(event.ref + "\\n")  # written only once the event is committed
    out.flush()
    i += 1
"""


def _db(repo: Path) -> sqlite3.Connection:
    return sqlite3.connect(repo / ".agentstate" / "state.db")


def _events(repo: Path) -> dict[str, tuple[str, int]]:
    with _db(repo) as conn:
        rows = conn.execute("SELECT id, run, seq FROM events")
        return {f"evt:{r[0]}": (r[1], r[2]) for r in rows}


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (the store and what is beside it), by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and ".git" not in p.parts}


# ---------------------------------------------------------------- concurrency


def test_a_backup_taken_while_four_processes_write_restores_to_a_consistent_store(
        initialised, cli, tmp_path):
    store_dir = initialised / ".agentstate"
    stop = tmp_path / "stop"
    logs = [tmp_path / f"writer-{n}.log" for n in range(4)]
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(store_dir), str(n), str(stop),
                                 str(log)], stderr=subprocess.PIPE, text=True)
               for n, log in enumerate(logs)]
    try:
        deadline = time.monotonic() + 60
        while not all(log.exists() and len(log.read_text().splitlines()) >= 5 for log in logs):
            assert time.monotonic() < deadline, "writers did not start"
            assert all(w.poll() is None for w in writers), [w.stderr.read() for w in writers]
            time.sleep(0.05)
        committed = {line for log in logs for line in log.read_text().splitlines()}
        cli.ok("backup", "--out", str(tmp_path / "during.tar.gz"))
        during = {line for log in logs for line in log.read_text().splitlines()}
    finally:
        stop.touch()
        for writer in writers:
            assert writer.wait(timeout=60) == 0, writer.stderr.read()
    after = {line for log in logs for line in log.read_text().splitlines()}
    assert len(after) > len(committed)  # the writers really were writing around the backup

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q", "-b", "main")
    data = cli.json("--dir", str(elsewhere), "restore", str(tmp_path / "during.tar.gz"))
    assert data["kept_aside"] is None and data["skills_refs"] > 0
    with _db(elsewhere) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    restored = _events(elsewhere)
    assert committed <= set(restored)            # every event committed before the backup
    assert set(restored) <= during | {r for r in _events(initialised)}
    by_run: dict[str, list[int]] = {}
    for run, seq in restored.values():
        by_run.setdefault(run, []).append(seq)
    for seqs in by_run.values():  # a snapshot: each run's events are a prefix, no holes
        assert sorted(seqs) == list(range(1, len(seqs) + 1))
    # The restored store works: its skills registry and its database.
    listed = cli.json("--dir", str(elsewhere), "skill", "list")
    assert listed


# ---------------------------------------------------------------- refusal, aside, round trip


def _fill(cli) -> str:
    cli.ok("run", "start", "backups")
    cli.ok("log", "observation", "the build needs the postgres fixture")
    return cli.json("remember", "the build needs the postgres fixture", "--kind", "fact")["ref"]


def test_restore_refuses_a_live_store_without_force_and_changes_nothing(initialised, cli,
                                                                        tmp_path):
    _fill(cli)
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    cli.ok("log", "observation", "written after the backup")
    before = _snapshot(initialised)
    result = cli("restore", str(tmp_path / "b.tar.gz"), "--json")
    assert result.exit_code == 3
    error = result.json()["error"]
    assert error["code"] == "refused" and "--force" in error["message"]
    assert _snapshot(initialised) == before
    assert sorted(p.name for p in initialised.iterdir()) == [".agentstate", ".git", "README.md"]


def test_restore_with_force_replaces_the_store_and_keeps_the_old_one_aside(initialised, cli,
                                                                          tmp_path):
    ref = _fill(cli)
    published = cli.json("skill", "list")
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    late = cli.json("log", "observation", "written after the backup")["ref"]
    same_second = {"AGENTSTATE_NOW": "2026-03-01T10:00:00Z"}  # both restores: one stamp
    data = cli.json("restore", str(tmp_path / "b.tar.gz"), "--force", env=same_second)
    aside = Path(data["kept_aside"])
    assert aside.parent == initialised / ".agentstate" and aside.name.startswith("before-restore-")
    # The old store is whole beside it; the new one is the backup's.
    with sqlite3.connect(aside / "state.db") as conn:
        assert conn.execute("SELECT count(*) FROM events WHERE id = ?",
                            (late[4:],)).fetchone() == (1,)
    assert late not in _events(initialised)
    assert cli.json("memory", "show", ref)["ref"] == ref
    assert cli.json("skill", "list") == published
    tags = git(initialised / ".agentstate" / "skills", "tag").split()
    assert tags and all("/v" in tag for tag in tags)
    # The kept-aside store is git-ignored; the store's own files are where they were.
    status = git(initialised, "status", "--porcelain", "-uall")
    assert "before-restore" not in status
    assert (initialised / ".agentstate" / "history.key").read_bytes() == \
        (aside / "history.key").read_bytes()
    # A second restore keeps both earlier stores side by side (not nested).
    cli.ok("restore", str(tmp_path / "b.tar.gz"), "--force", env=same_second)
    kept = sorted(p.name for p in (initialised / ".agentstate").glob("before-restore-*"))
    assert len(kept) == 2 and aside.name in kept
    assert not list((initialised / ".agentstate").glob("before-restore-*/before-restore-*"))


def test_the_backup_file_holds_a_manifest_and_no_free_pages(initialised, cli, tmp_path):
    _fill(cli)
    out = tmp_path / "b.tar.gz"
    data = cli.json("backup", "--out", str(out))
    assert data["path"] == str(out) and out.stat().st_size == data["bytes"]
    with tarfile.open(out) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("manifest.json"))
    assert names[0] == "manifest.json"
    assert {"state.db", "skills.bundle", "config.toml"} <= set(names)
    assert manifest["format"] == FORMAT and manifest["format_version"] == 1
    assert manifest["migrations"][-1] == data["migrations"][-1]
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    again = cli("backup", "--out", str(out))
    assert again.exit_code == 1 and "already exists" in again.stderr


# ---------------------------------------------------------------- bad files


def _tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _members(backup: Path) -> dict[str, bytes]:
    with tarfile.open(backup) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def _with_manifest(members: dict[str, bytes], **changes) -> dict[str, bytes]:
    manifest = json.loads(members["manifest.json"])
    manifest.update(changes)
    return {**members, "manifest.json": json.dumps(manifest).encode()}


def _bad_files(good: Path, folder: Path) -> dict[str, tuple[Path, str]]:
    members = _members(good)
    text = folder / "notes.txt"
    text.write_text("not a backup\n")
    truncated = folder / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    flipped = dict(members)
    db = bytearray(flipped["state.db"])
    db[len(db) // 2] ^= 0xFF
    flipped["state.db"] = bytes(db)
    garbage = b"SQLite format 3\x00" + b"\x01" * 4000
    not_db = _with_manifest({**members, "state.db": garbage}, files={
        "state.db": {"bytes": len(garbage), "sha256": hashlib.sha256(garbage).hexdigest()}})
    return {
        "missing": (folder / "nope.tar.gz", "no backup file"),
        "a text file": (text, "not an agentstate backup"),
        "truncated": (truncated, "damaged"),
        "no manifest": (_tar(folder / "nomanifest.tar.gz", {"state.db": members["state.db"]}),
                        "no manifest.json"),
        "another format": (_tar(folder / "other.tar.gz", _with_manifest(members, format="x")),
                           "not an agentstate backup manifest"),
        "newer format": (_tar(folder / "newer.tar.gz", _with_manifest(members, format_version=9)),
                         "newer agentstate"),
        "unknown migration": (_tar(folder / "mig.tar.gz", _with_manifest(
            members, migrations=[*json.loads(members["manifest.json"])["migrations"],
                                 "m999_future"])), "newer version"),
        "checksum": (_tar(folder / "flipped.tar.gz", flipped), "does not match its checksum"),
        "not a database": (_tar(folder / "notdb.tar.gz", not_db), "damaged"),
        "gzip of nothing": (folder / "empty.gz", "not an agentstate backup"),
    }


def test_bad_restore_files_are_one_clear_line_and_touch_nothing(initialised, cli, tmp_path):
    _fill(cli)
    good = tmp_path / "good.tar.gz"
    cli.ok("backup", "--out", str(good))
    (tmp_path / "empty.gz").write_bytes(gzip.compress(b""))
    before = _snapshot(initialised)
    for what, (path, message) in _bad_files(good, tmp_path).items():
        for force in ((), ("--force",)):
            result = cli("restore", str(path), *force)
            assert result.exit_code == 1, (what, result.stdout, result.stderr)
            assert message in result.stderr, (what, result.stderr)
            assert len(result.stderr.strip().splitlines()) == 1, (what, result.stderr)
            assert "Traceback" not in result.stderr
        assert _snapshot(initialised) == before, what
        assert sorted(p.name for p in initialised.iterdir()) == [".agentstate", ".git",
                                                                 "README.md"], what


def test_read_backup_never_writes_outside_its_folder(tmp_path):
    """Member names come from our own list: a crafted archive cannot write elsewhere."""
    evil = _tar(tmp_path / "evil.tar.gz", {
        "manifest.json": json.dumps({"format": FORMAT, "format_version": 1, "migrations": [],
                                     "files": {"../escape": {"bytes": 1, "sha256": "x"},
                                               "state.db": {"bytes": 1, "sha256": "x"}}}
                                    ).encode(), "../escape": b"x", "state.db": b"x"})
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(Exception, match="unknown files"):
        read_backup(evil, into)
    assert not (tmp_path / "escape").exists() and list(into.iterdir()) == []
