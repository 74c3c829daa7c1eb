"""Restoring a backup never brings back purged text: the live store's purge tombstones are
re-applied to the restored copy before it is put in place (agentstate.memory.tombstones).
Checked in every table, the full-text indexes and the raw bytes of the files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.conftest import git

NEEDLE = "zanzibarquux"  # lower case: how the word indexes store it
TEXT = f"the nightly deploy reads the {NEEDLE} token from the vault"


def _places(repo: Path) -> list[str]:
    """Where NEEDLE still is: any column of any table (FTS shadow tables included), an FTS
    match, or the raw bytes of any file of the store (the kept-aside store too)."""
    store = repo / ".agentstate"
    found = []
    with sqlite3.connect(store / "state.db") as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE "
            "'CREATE VIRTUAL%'")]
        for table in tables:
            for column in [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')]:
                hits = conn.execute(f'SELECT count(*) FROM "{table}" WHERE instr(lower('
                                    f'CAST("{column}" AS TEXT)), ?) > 0', (NEEDLE,)).fetchone()
                if hits[0]:
                    found.append(f"{table}.{column}")
        for index in ("events_fts", "events_tri", "memories_fts", "memories_tri"):
            if conn.execute(f"SELECT count(*) FROM {index} WHERE {index} MATCH ?",
                            (f'"{NEEDLE}"',)).fetchone()[0]:
                found.append(f"{index} MATCH")
    for path in sorted(store.rglob("*")):
        if path.is_file() and ".git" not in path.parts and NEEDLE.encode() in \
                path.read_bytes().lower():
            found.append(str(path.relative_to(store)))
    return found


def _start(cli) -> str:
    cli.ok("run", "start", "purge and restore")
    return cli.json("log", "observation", f"note: {TEXT}")["ref"]


def test_a_purge_after_the_backup_holds_after_restore(initialised, cli, tmp_path):
    event = _start(cli)
    memory = cli.json("remember", TEXT, "--kind", "fact", "--evidence", event)["ref"]
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    assert _places(initialised)  # the needle is there before the purge (the check can fail)
    cli.ok("forget", memory, "--purge")
    assert _places(initialised) == []
    data = cli.json("restore", str(tmp_path / "b.tar.gz"), "--force")
    assert data["tombstones"] == 1 and data["purged_again"] == [memory]
    assert _places(initialised) == []
    assert cli.json("memory", "show", memory)["current"]["purged"] is True
    assert "[purged]" in cli.json("trace", event)["detail"]["text"]
    with sqlite3.connect(initialised / ".agentstate" / "state.db") as conn:
        ops = [r[0] for r in conn.execute("SELECT op FROM memory_history WHERE memory = ? "
                                          "ORDER BY hid", (memory.split(":")[1].split("@")[0],))]
    assert "purge" in ops  # the restored store records it, so its own backups carry it
    # A later purge says that the store kept aside is beyond its reach.
    other = cli.json("remember", "the release train leaves on fridays", "--kind", "fact")
    purged = cli.json("forget", other["ref"], "--purge")
    assert any(line.startswith("before-restore-") for line in purged["still_in"])


def test_text_whose_memory_came_after_the_backup_is_taken_from_the_live_store(
        initialised, cli, tmp_path):
    event = _start(cli)
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    memory = cli.json("remember", TEXT, "--kind", "fact", "--evidence", event)["ref"]
    cli.ok("forget", memory, "--purge")
    data = cli.json("restore", str(tmp_path / "b.tar.gz"), "--force")
    assert data["purged_again"] == [] and data["carried"] == {"events.text": 1}
    assert _places(initialised) == []
    assert cli("recall", NEEDLE).stdout.startswith("nothing matched")


def test_without_a_live_store_only_the_backups_own_purges_hold(initialised, cli, tmp_path):
    event = _start(cli)
    memory = cli.json("remember", TEXT, "--kind", "fact", "--evidence", event)["ref"]
    cli.ok("backup", "--out", str(tmp_path / "before.tar.gz"))
    cli.ok("forget", memory, "--purge")
    cli.ok("backup", "--out", str(tmp_path / "after.tar.gz"))
    for name, holds in (("after", False), ("before", True)):
        target = tmp_path / name
        target.mkdir()
        git(target, "init", "-q", "-b", "main")
        data = cli.json("--dir", str(target), "restore", str(tmp_path / f"{name}.tar.gz"))
        assert data["tombstones"] == 0
        assert any("no store was here" in w for w in data["warnings"])
        # A backup taken after the purge holds none of the text (VACUUM INTO copies no free
        # page); one taken before it cannot know of the purge: said, and shown here.
        assert bool(_places(target)) is holds, name


def test_an_unreadable_live_store_is_refused_unless_told(initialised, cli, tmp_path):
    _start(cli)
    cli.ok("backup", "--out", str(tmp_path / "b.tar.gz"))
    db = initialised / ".agentstate" / "state.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is no longer a database" * 100)
    result = cli("restore", str(tmp_path / "b.tar.gz"), "--force")
    assert result.exit_code == 3 and "--ignore-live-purges" in result.stderr
    assert db.read_bytes().startswith(b"this is no longer")
    assert not list(initialised.glob(".agentstate.*"))
    data = cli.json("restore", str(tmp_path / "b.tar.gz"), "--force", "--ignore-live-purges")
    assert any("could not be read" in w for w in data["warnings"])
    assert cli.json("events")  # the restored store works
