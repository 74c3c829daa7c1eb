"""`agentstate doctor`: reports health, exits non-zero when something is broken."""

from __future__ import annotations

import sqlite3
import sys
import types

from tests.conftest import git


def _checks(data: dict) -> dict:
    return {c["name"]: c for c in data["checks"]}


def test_doctor_on_a_healthy_store(cli, initialised):
    data = cli.json("doctor")
    assert data["healthy"] is True
    checks = _checks(data)
    assert set(checks) == {"config", "principal", "schema", "integrity", "wal", "writable",
                           "tokenizer", "skills", "git", "search", "publish", "registry",
                           "hooks", "skill-tools", "restore", "restore-copies", "sandbox",
                           "retrieval", "install"}
    # the sandbox check is a warning where bubblewrap is missing (tests/tools covers it)
    assert all(c["status"] == "ok" for n, c in checks.items() if n != "sandbox"), checks
    assert checks["schema"]["status"] == "ok" and checks["schema"]["data"]["pending"] == []
    assert checks["integrity"]["detail"] == "PRAGMA integrity_check: ok"
    assert checks["wal"]["status"] == "ok"
    assert "SHA-256 verified" in checks["tokenizer"]["detail"]
    assert checks["skills"]["status"] == "ok" and checks["skills"]["data"]["head"]
    human = cli.ok("doctor").stdout
    assert "healthy" in human and "integrity" in human


def test_doctor_warns_of_an_editable_install_through_an_import_finder(cli, initialised,
                                                                      monkeypatch):
    """setuptools' default editable install loads its finder in every Python process (what
    its .pth file does): each hook pays for it, so doctor says how to reinstall."""
    name = "__editable___agentstate_cli_0_1_0_finder"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    data = cli.json("doctor")
    check = _checks(data)["install"]
    assert check["status"] == "warn" and check["data"]["finder"] == name
    assert "editable_mode=compat" in check["detail"]
    assert data["healthy"] is True  # a slower start is not a broken store


def test_doctor_reports_pending_migrations_without_applying_them(cli, initialised):
    db_path = initialised / ".agentstate" / "state.db"
    db = sqlite3.connect(db_path)
    last = db.execute("SELECT name FROM _migrations ORDER BY rowid DESC LIMIT 1").fetchone()[0]
    db.execute("DELETE FROM _migrations WHERE name = ?", (last,))
    db.commit()
    data = cli.json("doctor")  # a warning, not a failure
    schema = _checks(data)["schema"]
    assert schema["status"] == "warn" and schema["data"]["pending"] == [last]
    assert db.execute("SELECT count(*) FROM _migrations WHERE name = ?", (last,)).fetchone()[0] == 0


def test_doctor_fails_on_broken_config_dirty_skills_and_bad_db(cli, initialised):
    root = initialised / ".agentstate"
    (root / "skills" / "stray.txt").write_text("uncommitted")
    data = cli.json("doctor")
    # An unpublished draft in the registry's work tree is normal, and reported.
    assert _checks(data)["skills"]["status"] == "ok"
    assert "stray.txt" in _checks(data)["skills"]["detail"]

    (root / "config.toml").write_text("[tokens\nbroken = ")
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    payload = result.json()
    assert payload["ok"] is False and payload["error"]["code"] == "unhealthy"
    assert _checks(payload["data"])["config"]["status"] == "fail"
    assert "config" in payload["error"]["message"]

    (root / "config.toml").write_text("")
    git(root / "skills", "init", "-q")  # still a repo
    import shutil

    shutil.rmtree(root / "skills" / ".git")
    result = cli("doctor")
    assert result.exit_code == 1
    assert "FAIL skills" in result.stdout and "not its own git repository" in result.stdout

    for extra in root.glob("state.db-*"):
        extra.unlink()
    (root / "state.db").write_bytes(b"garbage" * 200)
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    assert _checks(result.json()["data"])["database"]["status"] == "fail"


def test_doctor_fails_on_wrong_journal_mode_and_bad_tokenizer_config(cli, initialised):
    root = initialised / ".agentstate"
    db = sqlite3.connect(root / "state.db")
    db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    (root / "config.toml").write_text('[tokens]\ncalibration = 50\n')
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    checks = _checks(result.json()["data"])
    assert checks["wal"]["status"] == "fail" and checks["config"]["status"] == "fail"
    assert "[tokens] calibration must be a number between 0.1 and 10, got 50" in \
        checks["config"]["detail"]
    (root / "config.toml").write_text('[tokens]\nencoding = "no_such_encoding"\n')
    checks = _checks(cli("doctor", "--json").json()["data"])
    assert checks["config"]["status"] == "ok" and checks["tokenizer"]["status"] == "fail"
    assert checks["integrity"]["status"] == "ok"


def test_doctor_fails_when_registry_tags_and_database_disagree(cli, initialised):
    skills = initialised / ".agentstate" / "skills"
    git(skills, "tag", "-d", "verify-tests/v1")
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    registry = _checks(result.json()["data"])["registry"]
    assert registry["status"] == "fail" and "verify-tests/v1" in registry["detail"]


def test_doctor_fails_when_an_event_is_missing_from_the_search_index(cli, initialised):
    cli.ok("run", "start", "index check")
    cli.ok("log", "note", "an indexed note")
    db = sqlite3.connect(initialised / ".agentstate" / "state.db")
    db.execute("INSERT INTO events_fts(events_fts) VALUES ('delete-all')")
    db.commit()
    db.close()
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    search = _checks(result.json()["data"])["search"]
    assert search["status"] == "fail" and "not indexed" in search["detail"]


def test_doctor_reports_a_tampered_token_count_cache(cli, initialised, tmp_path, monkeypatch):
    from agentstate import tokens

    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "cache"))
    cli.ok("init")  # builds this cache's vocabulary copy
    assert _checks(cli.json("doctor"))["tokenizer"]["status"] == "ok"
    conn = sqlite3.connect(tokens.count_memo_path())
    conn.execute("UPDATE vocabulary SET rank = rank + 1 WHERE token = ?", (b"hello",))
    conn.commit()
    conn.close()
    result = cli("doctor", "--json")
    assert result.exit_code != 0
    check = _checks(result.json()["data"])["tokenizer"]
    assert check["status"] == "fail" and "vocabulary copy differs" in check["detail"]
