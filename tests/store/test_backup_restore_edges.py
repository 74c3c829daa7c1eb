"""`backup` / `restore` at their edges: a hand-edited manifest or a database newer than the
manifest says is refused in one line; `--out` may name a folder; a backup of another
repository restores with a warning that says so."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess

from tests.store.test_backup_restore import _members, _tar, _with_manifest


def _good(initialised, cli, tmp_path):
    cli.ok("remember", "the build uses make", "--kind", "fact", "--evidence", "user")
    good = tmp_path / "good.tar.gz"
    cli.ok("backup", "--out", str(good))
    return good


def test_a_manifest_with_odd_values_is_one_line_not_an_internal_error(initialised, cli,
                                                                      tmp_path):
    members = _members(_good(initialised, cli, tmp_path))
    for n, migrations in enumerate(([1, {}], "m001", None, [["a"]])):
        bad = _tar(tmp_path / f"bad{n}.tar.gz", _with_manifest(members, migrations=migrations))
        got = cli("restore", str(bad), "--force")
        assert got.exit_code == 1, (migrations, got.output)
        assert "not an agentstate backup" in got.stderr, got.stderr
        assert len(got.stderr.strip().splitlines()) == 1


def test_a_database_newer_than_its_manifest_says_is_refused(initialised, cli, tmp_path):
    members = _members(_good(initialised, cli, tmp_path))
    db = tmp_path / "copy.db"
    db.write_bytes(members["state.db"])
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO _migrations VALUES ('m999_future', '2030-01-01')")
    conn.close()
    data = db.read_bytes()
    manifest = json.loads(members["manifest.json"])
    files = {**manifest["files"], "state.db": {"bytes": len(data),
                                               "sha256": hashlib.sha256(data).hexdigest()}}
    lying = _tar(tmp_path / "lying.tar.gz",
                 _with_manifest({**members, "state.db": data}, files=files))
    got = cli("restore", str(lying), "--force")
    assert got.exit_code == 1 and "m999_future" in got.stderr, got.output
    assert "newer version" in got.stderr


def test_backup_out_may_name_a_folder(initialised, cli, tmp_path):
    folder = tmp_path / "backups"
    folder.mkdir()
    got = cli.json("backup", "--out", str(folder))
    assert got["path"].startswith(str(folder) + "/") and got["path"].endswith(".tar.gz")
    assert [p.name for p in folder.iterdir()] == [got["path"].rsplit("/", 1)[1]]
    again = cli("backup", "--out", got["path"])  # an existing file is never overwritten
    assert again.exit_code == 1 and "already exists" in again.stderr


def test_a_backup_of_another_repository_restores_with_a_warning(initialised, cli, tmp_path,
                                                                  monkeypatch):
    good = _good(initialised, cli, tmp_path)
    same = cli.json("restore", str(good), "--force")
    assert not any("another repository" in w for w in same["warnings"])
    other = tmp_path / "other"
    subprocess.run(["git", "init", "-q", "-b", "main", str(other)], check=True)
    (other / "x").write_text("x\n")
    subprocess.run(["git", "add", "x"], cwd=other, check=True)
    subprocess.run(["git", "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-q", "-m",
                    "other"], cwd=other, check=True)
    monkeypatch.chdir(other)
    cli.ok("init")
    got = cli("restore", str(good), "--force")
    assert got.exit_code == 0, got.output
    assert "warning: the backup was made in another repository" in got.stderr


def test_a_backup_git_would_commit_is_written_with_a_warning(initialised, cli, tmp_path,
                                                             monkeypatch):
    monkeypatch.chdir(initialised)
    inside = cli("backup")  # the default place: the current folder, here the work tree
    assert inside.exit_code == 0, inside.output
    assert "warning:" in inside.stderr and "not git-ignored" in inside.stderr
    (initialised / ".gitignore").write_text("agentstate-backup-*\n")
    ignored = cli.json("backup", "--out", str(initialised / "agentstate-backup-2.tar.gz"))
    assert ignored["warnings"] == []
    outside = cli.json("backup", "--out", str(tmp_path / "safe.tar.gz"))
    assert outside["warnings"] == []


def test_a_purge_holds_after_restore_when_gc_collected_the_event_it_came_from(
        initialised, cli, tmp_path):
    """The event a purged memory came from was collected by gc (before or after the purge):
    the live row holds no purge mark, the backup the original body. The body stays out."""
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# keep_events_days = 0",
                                                 "keep_events_days = 7"))
    # A text apiece: once purged, a text is scrubbed from whatever is written later too, and
    # an event scrubbed of the fact is no evidence for it.
    secrets = ("the staging deploy key rotates on fridays",
               "the billing export key rotates on mondays")
    for n, gc_first in enumerate((True, False)):
        secret = secrets[n]
        cli.ok("run", "start", f"work {n}")
        event = cli.json("log", "observation", f"note {n}: {secret}")["ref"]
        cli.ok("run", "end", "--status", "done")
        backup = tmp_path / f"before-{n}.tar.gz"
        cli.ok("backup", "--out", str(backup))
        memory = cli.json("remember", secret, "--kind", "fact", "--evidence",
                          event)["ref"].split("@")[0]
        later = {"AGENTSTATE_NOW": f"{2090 + n}-01-01T00:00:00Z"}
        steps = [("gc",), ("forget", memory, "--purge", "--reason", "wrong")]
        for step in (steps if gc_first else steps[::-1]):
            cli.ok(*step, env=later)
        restored = cli.json("restore", str(backup), "--force", env=later)
        assert restored["carried"].get("events (collected by gc in the live store)") == 1, \
            restored
        db = initialised / ".agentstate" / "state.db"
        with sqlite3.connect(db) as conn:
            text, collected = conn.execute("SELECT text, collected_at FROM events WHERE id = ?",
                                           (event.split(":")[1],)).fetchone()
        conn.close()
        assert text == "" and collected, (gc_first, text)
        assert secret.split(" key ")[1].encode() not in db.read_bytes(), gc_first


def test_restore_into_a_missing_folder_or_from_a_folder_is_one_clear_line(initialised, cli,
                                                                          tmp_path):
    good = _good(initialised, cli, tmp_path)
    missing = tmp_path / "no-such-folder"
    got = cli("restore", str(good), "--dir", str(missing))
    assert got.exit_code == 1 and f"no folder {missing} to restore" in got.stderr, got.stderr
    assert not missing.exists() and list(tmp_path.glob("*.restoring-*")) == []
    folder = cli("restore", str(tmp_path), "--force")
    assert folder.exit_code == 1 and "is a folder" in folder.stderr, folder.stderr
