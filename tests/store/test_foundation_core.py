"""Store creation, refs, the error envelope: the conventions every command relies on."""

from __future__ import annotations

import sqlite3

import pytest

from agentstate.errors import InvalidInput
from agentstate.store.migrations import all_migrations, applied_migrations
from agentstate.store.refs import parse_ref
from tests.conftest import run_agentstate


def test_init_creates_store_and_is_idempotent(cli, repo):
    first = cli.json("init")
    assert first["changed"] is True
    root = repo / ".agentstate"
    assert (root / "config.toml").exists()
    assert (root / "skills" / ".git").is_dir()
    ignore = (root / ".gitignore").read_text()
    assert "state.db" in ignore and "skills/" in ignore
    mode = sqlite3.connect(root / "state.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    before = {p: p.stat().st_mtime_ns for p in root.iterdir() if p.is_file()}
    again = cli.json("init")
    assert again == {"path": str(root), "changed": False, "created": []}
    after = {p: p.stat().st_mtime_ns for p in root.iterdir() if p.is_file()
             if not p.name.startswith("state.db")}
    assert all(before[p] == after[p] for p in after)
    human = cli.ok("init")
    assert "nothing changed" in human.stdout


def test_init_in_subdirectory_uses_work_tree_root(cli, repo, monkeypatch):
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    data = cli.json("init")
    assert data["path"] == str(repo / ".agentstate")


def test_migrations_from_blank_database(store):
    names = [name for name, _ in all_migrations()]
    assert applied_migrations(store.db) == names
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("text", ["run:", "evt:AB", "mem:x", "foo:abcdef", "", "run:abcd@v2"])
def test_malformed_refs_are_rejected(text):
    with pytest.raises(InvalidInput):
        parse_ref(text)


def test_ref_round_trip():
    assert str(parse_ref("mem:abcd1234@v3")) == "mem:abcd1234@v3"
    assert parse_ref("skill:verify-tests@v2").version == 2


def test_command_outside_store_fails_clearly(tmp_path):
    proc = run_agentstate("log", "note", "hello", cwd=tmp_path)
    assert proc.returncode == 1
    assert "agentstate init" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_secret_in_event_refused_with_exit_3_and_nothing_stored(cli, initialised):
    cli.ok("run", "start", "goal")
    result = cli("log", "note", "key AKIAABCDEFGHIJKLMNOP here", "--json")
    assert result.exit_code == 3
    assert result.json()["error"]["code"] == "refused"
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    assert db.execute("SELECT count(*) FROM events WHERE text LIKE '%AKIA%'").fetchone()[0] == 0
