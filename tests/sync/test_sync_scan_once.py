"""A memory text is scanned for secrets once (issue 24): the write gate's scan (or an
import's) is kept as a mark on the version's row (memory/scanned.py, m058), and the export
writes such a version's line without scanning it again; a version stored any other way, a
teammate's record, one whose fields changed since, and anything after the scanner changed
are still scanned."""

from __future__ import annotations

import pytest

from agentstate.memory import scanned
from agentstate.memory.write import remember
from agentstate.sync import export as export_module
from agentstate.sync import fields_scan as import_scan_module
from agentstate.sync import shared_path, sync
from agentstate.sync.records import make_record


@pytest.fixture
def scans(monkeypatch):
    """The lines each side handed to the secret scanner."""
    seen: dict[str, list[str]] = {"export": [], "import": []}
    for side, module in (("export", export_module), ("import", import_scan_module)):
        real = module.find_secrets

        def spy(text, real=real, side=side):
            seen[side].append(text)
            return real(text)

        monkeypatch.setattr(module, "find_secrets", spy)
    return seen


def _insert_raw(store, memory_id: str, text: str) -> None:
    """A version stored without the write gate (as an older store or a direct insert)."""
    store.conn.execute(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES (?, 1, 'fact', 'repo', ?, "
        "'h', 'user', 'active', 0.9, '2026-01-01', '2026-01-01', 'owner')", (memory_id, text))


def _mark(store, memory_id: str) -> str | None:
    return store.value("SELECT scanned_with FROM memories WHERE id = ?", (memory_id,))


def test_an_export_scans_only_what_no_scanner_has_passed(store, scans):
    remember(store, "the gateway listens on port 8080", kind="fact", principal="owner")
    remember(store, "the cache lives in redis", kind="fact", principal="owner")
    _insert_raw(store, "rawfact01", "the queue is rabbitmq on the second host")
    result = sync(store, do_import=False, principal="owner")
    assert result.exported == 3 and not result.skipped_items
    assert [line for line in scans["export"] if '"type":"memory"' in line] == [
        line for line in scans["export"] if "rabbitmq" in line]
    assert len(scans["export"]) == 1
    # The raw version passed the export's scan: its row now carries the mark, so a line of
    # the same fields (a new export, once its mapping is gone) needs no scan.
    assert _mark(store, "rawfact01") == scanned.scanner_mark()
    store.conn.execute("DELETE FROM shared_records")
    (shared_path(store) / "memories.jsonl").unlink()
    scans["export"].clear()
    assert sync(store, do_import=False, principal="owner").exported == 3
    assert scans["export"] == []
    lines = (shared_path(store) / "memories.jsonl").read_text()
    assert "8080" in lines and "redis" in lines and "rabbitmq" in lines


def test_a_secret_stored_without_the_gate_is_still_caught(store, scans):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    _insert_raw(store, "rawsecret1", f"the ci token is {token}")
    result = sync(store, do_import=False, principal="owner")
    assert result.exported == 0 and "secret" in result.skipped_items[0]["reason"]
    assert len(scans["export"]) == 1 and _mark(store, "rawsecret1") is None
    written = shared_path(store) / "memories.jsonl"
    assert not written.exists() or token not in written.read_text()


def test_a_scanned_text_does_not_vouch_for_a_secret_in_another_field(store, scans):
    """The digest covers every field a person wrote: the same text, scope and source under a
    key that holds a token (stored around the gate) is scanned on export, and refused."""
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    remember(store, "the deploy host is tern", kind="fact", principal="owner")
    store.conn.execute(
        "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, "
        "status, confidence, created, last_confirmed, principal) VALUES ('rawkey001', 1, "
        "'fact', ?, 'repo', 'the deploy host is tern', 'h', 'user', 'active', 0.9, "
        "'2026-01-01', '2026-01-01', 'owner')", (f"deploy.{token}",))
    result = sync(store, do_import=False, principal="owner")
    assert result.exported == 1 and "secret" in result.skipped_items[0]["reason"]
    assert token not in (shared_path(store) / "memories.jsonl").read_text()


def test_a_teammates_record_is_scanned_once_on_import_then_not_on_export(store, scans):
    folder = shared_path(store)
    folder.mkdir(parents=True)
    record = make_record("memory", kind="fact", key=None, scope="repo",
                         text="the nightly build runs at 02:00", source="user",
                         principal="alice", created="2026-01-01T00:00:00.000000Z",
                         valid_until=None, parent=None, rel=None, held=None)
    (folder / "memories.jsonl").write_text(record.line + "\n")
    assert sync(store, do_export=False, principal="owner").imported == 1
    # The teammate's record: each field it wrote scanned, once (sync/fields_scan.py; its
    # creation time, in agentstate's own format, cannot hold a secret).
    fields = ["the nightly build runs at 02:00", "repo", "user", "alice", "fact"]
    assert sorted(scans["import"]) == sorted(fields)
    sync(store, principal="owner")
    assert sorted(scans["import"]) == sorted(fields) and scans["export"] == []


def test_a_changed_scanner_scans_again(store, scans, monkeypatch):
    remember(store, "the gateway listens on port 8080", kind="fact", principal="owner")
    monkeypatch.setattr(scanned, "scanner_fingerprint", lambda: "another scanner")
    sync(store, do_import=False, principal="owner")
    assert len(scans["export"]) == 1


def test_a_purge_takes_the_versions_mark_with_it(store):
    """Forgetting really forgets: a purged version keeps no mark (nor any m041 digest); a
    tombstone, which keeps the text, keeps its mark."""
    from agentstate.memory.forget import forget

    kept = remember(store, "the staging box is called heron", kind="fact", principal="owner")
    gone = remember(store, "the old vpn host was kestrel-7", kind="fact", principal="owner")
    mark = scanned.scanner_mark()
    assert _mark(store, kept.memory.id) == mark and _mark(store, gone.memory.id) == mark
    forget(store, kept.memory.ref, principal="owner", reason="outdated")
    forget(store, gone.memory.ref, purge=True, principal="owner", reason="leaked")
    assert _mark(store, kept.memory.id) == mark and _mark(store, gone.memory.id) is None
    assert store.value("SELECT count(*) FROM scanned_texts") == 0


@pytest.mark.parametrize("column", ["text", "key", "scope", "source"])
def test_a_version_whose_fields_change_loses_its_mark(store, scans, column):
    """A mark vouches only for the fields it saw: a hand edit of any of the four drops it,
    and the export scans the line again (and refuses the token the edit put there)."""
    token = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
    made = remember(store, "the deploy host is tern", kind="fact", principal="owner")
    value = {"text": f"the deploy token is {token}", "key": f"deploy.{token}",
             "scope": f"path:{token}", "source": f"tool:{token}"}[column]
    store.conn.execute(f"UPDATE memories SET {column} = ? WHERE id = ?",
                       (value, made.memory.id))
    assert _mark(store, made.memory.id) is None
    result = sync(store, do_import=False, principal="owner")
    assert result.exported == 0 and "secret" in result.skipped_items[0]["reason"]
    assert len(scans["export"]) == 1


def test_a_change_to_another_column_keeps_the_mark(store):
    made = remember(store, "the deploy host is tern", kind="fact", principal="owner")
    store.conn.execute("UPDATE memories SET status = 'superseded', confidence = 0.2, "
                       "text = text WHERE id = ?", (made.memory.id,))
    assert _mark(store, made.memory.id) == scanned.scanner_mark()


def test_an_export_marks_only_the_fields_it_scanned(store):
    """A version changed between the export's scan and its write stays unmarked."""
    _insert_raw(store, "rawfact02", "the queue is rabbitmq on the second host")
    row = store.value("SELECT row FROM memories WHERE id = 'rawfact02'")
    scanned.mark_rows_scanned(store, [(row, "what the scan saw", None, "repo", "user")])
    assert _mark(store, "rawfact02") is None
    scanned.mark_rows_scanned(store, [(row, "the queue is rabbitmq on the second host", None,
                                       "repo", "user")])
    assert _mark(store, "rawfact02") == scanned.scanner_mark()


def test_the_migration_assumes_no_row_scanned(tmp_path):
    """m058 on a store written before it: no existing version is marked (only a scan marks
    one), and the m041 digests, no longer read, are emptied."""
    import sqlite3

    import sqlite_utils

    from agentstate.store.migrations import apply_migrations

    db = sqlite_utils.Database(sqlite3.connect(tmp_path / "old.db", isolation_level=None))
    apply_migrations(db, upto="m057_event_index_after_batch")
    db.conn.execute(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES ('old00001', 1, 'fact', "
        "'repo', 'an older fact', 'h', 'user', 'active', 0.9, '2026-01-01', '2026-01-01', "
        "'owner')")
    db.conn.execute("INSERT INTO scanned_texts (digest) VALUES ('a digest of an older text')")
    assert apply_migrations(db)[0] == "m058_scanned_mark"  # (later migrations follow it)
    assert db.conn.execute("SELECT scanned_with FROM memories").fetchall() == [(None,)]
    assert db.conn.execute("SELECT count(*) FROM scanned_texts").fetchone() == (0,)
