"""SQLite spells the export's memory lines (sync/spelled.py): the proof that its bytes are
the canonical encoder's, on arbitrary field values, and the ways back to Python when they
might not be (a SQLite that escapes differently, a blob in a column)."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstate.memory.bulk_reads import all_shared_fields
from agentstate.memory.shared_line import quote
from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import insert_version
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from agentstate.store.init import create_store
from agentstate.sync import records, shared_files, shared_path, spelled, sync

# Characters two JSON encoders are most likely to treat apart, mixed into arbitrary text
# (as UTF-8 can hold them: a lone surrogate cannot be stored, see below).
_AWKWARD_CHARS = st.sampled_from(['"', "\\", "/", "'", "\x00", "\x01", "\x1f", "\x7f", "\b",
                                  "\f", "\n", "\r", "\t", "\u0085", "\u2028", "\u2029",
                                  "\ufeff", "\uffff", "\U0001f680", "\U0010ffff", "é", "路"])
_TEXT = st.text(st.one_of(_AWKWARD_CHARS, st.characters(codec="utf-8")), max_size=40)
# Numbers as SQLite stores them in these TEXT columns: as their text.
_VALUE = st.one_of(_TEXT, st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False),
                   st.floats(allow_nan=False).map(repr))
_STATUSES = [MemoryStatus.ACTIVE, MemoryStatus.CONTESTED, MemoryStatus.SUPERSEDED,
             MemoryStatus.CANDIDATE, MemoryStatus.QUARANTINED]


def _open(path: Path):
    return open_store(path / ".agentstate", clock=Clock(datetime(2026, 1, 15, tzinfo=UTC)),
                      ids=IdSource(seed=5))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("spelled")
    create_store(target=root)
    opened = _open(root)
    yield opened
    opened.close()


def _insert(store, values: dict) -> None:
    store.conn.execute(
        "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, status,"
        " confidence, valid_until, created, last_confirmed, supersedes, principal) VALUES "
        "('prop0001', 1, :kind, :key, :scope, :text, 'h', :source, :status, 0.9, "
        ":valid_until, :created, 'now', NULL, :principal)", values)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=_VALUE, key=st.none() | _VALUE, scope=_TEXT, text=_VALUE, source=_VALUE,
       principal=_VALUE, created=_VALUE, valid_until=st.none() | _VALUE,
       status=st.sampled_from(_STATUSES),
       parent=st.none() | st.text("0123456789abcdef", min_size=32, max_size=32))
def test_sqlite_spells_a_memory_line_as_the_canonical_encoder(
        store, kind, key, scope, text, source, principal, created, valid_until, status,
        parent):
    values = {"kind": kind, "key": key, "scope": f"branch:{scope}", "text": text,
              "source": source, "status": status.value, "valid_until": valid_until,
              "created": created, "principal": principal}
    _insert(store, values)
    try:
        (row,) = [r for r in spelled.spelled_rows(store) if r[1] == "prop0001"]
        (fields,) = [f for f in all_shared_fields(store) if f.id == "prop0001"]
    finally:
        store.conn.execute("DELETE FROM memories WHERE id = 'prop0001'")
    # The fields as the Python path reads them back (a number was stored as its text).
    names = ("kind", "key", "scope", "text", "source", "principal", "created", "valid_until")
    stored = {name: getattr(fields, name) for name in names}
    assert all(isinstance(v, str) for v in stored.values() if v is not None)
    held = status.value if status in (MemoryStatus.CANDIDATE, MemoryStatus.QUARANTINED) \
        else None
    rel = None if parent is None else ("contests" if status == MemoryStatus.CONTESTED
                                       else "supersedes")
    body = row[7] if parent is None else spelled.with_parent(row[7], parent, rel)
    record_id, line = spelled.memory_line(body)
    general = records.make_record("memory", **stored, parent=parent, rel=rel, held=held)
    assert (record_id, line, body) == (general.id, general.line, general.body)
    assert line == records.canonical(general.data)


def test_a_lone_surrogate_never_reaches_sqlite(store):
    """What the property cannot generate cannot be stored either."""
    with pytest.raises(UnicodeEncodeError):
        store.conn.execute("SELECT json_quote(?)", ("half \ud83d of an emoji",))


def test_the_probe_passes_here_and_refuses_a_sqlite_that_escapes_otherwise(store,
                                                                          monkeypatch):
    """A SQLite whose json_object writes `/` as `\\/` (valid JSON, other bytes) is not
    trusted; this machine's SQLite is (else the property above proves nothing)."""
    monkeypatch.setattr(spelled, "_CHECKED", {})
    assert spelled.sqlite_spells_canonically(store.conn)
    conn = sqlite3.connect(":memory:")

    def escaping_slash(*args):
        pairs = [f"{quote(str(k))}:" + ("null" if v is None else str(v) if
                 isinstance(v, int) else quote(v).replace("/", "\\/"))
                 for k, v in zip(args[::2], args[1::2], strict=True)]
        return "{" + ",".join(pairs) + "}"

    conn.create_function("json_object", -1, escaping_slash)
    monkeypatch.setattr(spelled, "_CHECKED", {})
    assert not spelled.sqlite_spells_canonically(conn)
    conn.close()


def _two_stores(tmp_path: Path, fill) -> list:
    (tmp_path / "one").mkdir(parents=True)
    create_store(target=tmp_path / "one")
    first = _open(tmp_path / "one")
    fill(first)
    first.close()
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    return [tmp_path / "one", tmp_path / "two"]


def _facts(store) -> None:
    plain = {"kind": "fact", "source": "user", "confidence": 0.9, "principal": "owner",
             "reason": "test", "scanned": True, "valid_until": None, "supersedes": None,
             "status": MemoryStatus.ACTIVE, "key": None}
    with store.transaction():
        for n, text in enumerate(['a "quoted" / slashed fact', "tab\tand \x00 nul",
                                  "emoji 🚀 and \u2028"]):
            insert_version(store, memory_id=f"fact{n:04d}", version=1, scope="repo",
                           text=text, evidence=[("user", "user")], **plain)


def _exported(path: Path) -> dict[str, bytes]:
    opened = _open(path)
    assert sync(opened, do_import=False, principal="owner").exported == 3
    files = {p.name: p.read_bytes() for p in sorted(shared_path(opened).glob("*.jsonl"))}
    opened.close()
    return files


def test_a_sqlite_that_escapes_otherwise_leaves_the_lines_to_python(tmp_path, monkeypatch):
    one, two = _two_stores(tmp_path, _facts)
    spelled_files = _exported(one)
    monkeypatch.setattr(spelled, "_CHECKED", {spelled.sqlite3.sqlite_version: False})
    monkeypatch.setattr(spelled, "shared_fields_with", _no_json(spelled.shared_fields_with))
    assert _exported(two) == spelled_files
    assert b"/ slashed" in spelled_files["memories.jsonl"]


def _no_json(read):
    """The versions' read, failing if asked to spell JSON (the probe said no)."""
    def reading(store, columns, *fields):
        assert "json_object" not in columns
        return read(store, columns, *fields)
    return reading


def test_a_blob_in_an_unshared_version_leaves_the_lines_to_python(tmp_path):
    """`json_object` cannot hold a blob: the export reads again without SQLite's spelling
    (the Python path never builds a line for an unshared version, as before)."""
    def with_blob(store) -> None:
        _facts(store)
        insert_version(store, memory_id="blob0001", version=1, kind="fact", key=None,
                       scope="user", text="x", source="user", status=MemoryStatus.ACTIVE,
                       confidence=0.9, valid_until=None, supersedes=None, principal="owner",
                       reason="test", evidence=[("user", "user")])
        store.conn.execute("UPDATE memories SET text = CAST('raw' AS BLOB) WHERE id = "
                           "'blob0001'")

    blob, _ = _two_stores(tmp_path / "blob", with_blob)
    plain, _ = _two_stores(tmp_path / "plain", _facts)
    assert _exported(blob) == _exported(plain)


def test_the_digests_kept_for_written_files_are_those_of_their_bytes(tmp_path):
    """The export keeps each written file's sha256 as it wrote it (not read back): the next
    sync parses such a file without checking its lines, so the digest must be the file's."""
    import hashlib

    from agentstate.sync.shared import checked_files

    one, _ = _two_stores(tmp_path, _facts)
    opened = _open(one)
    sync(opened, principal="owner")
    kept = checked_files(opened)
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in shared_path(opened).glob("*.jsonl")}
    opened.close()
    assert set(files) == {"memories.jsonl", "evidence.jsonl"} and kept == files


def test_a_line_a_merge_doubled_is_written_once_beside_new_ones(tmp_path):
    """A union merge can leave a line twice; the next export that writes the file writes
    it once, as before, among the new lines in id order."""
    one, _ = _two_stores(tmp_path, _facts)
    opened = _open(one)
    sync(opened, do_import=False, principal="owner")
    file = shared_path(opened) / "memories.jsonl"
    lines = [t for t in shared_files.file_lines(file.read_text(encoding="utf-8")) if t]
    file.write_text("\n".join([*lines, lines[0]]) + "\n", encoding="utf-8")
    insert_version(opened, memory_id="late0001", version=1, kind="fact", key=None,
                   scope="repo", text="a later fact", source="user",
                   status=MemoryStatus.ACTIVE, confidence=0.9, valid_until=None,
                   supersedes=None, principal="owner", reason="test",
                   evidence=[("user", "user")], scanned=True)
    assert sync(opened, do_import=False, principal="owner").exported == 1
    written = [t for t in shared_files.file_lines(file.read_text(encoding="utf-8")) if t]
    opened.close()
    assert len(written) == 4 and set(lines) < set(written) and len(set(written)) == 4
    ids = [shared_files.line_id(line) for line in written]
    assert ids == sorted(ids)


def test_the_folder_as_the_export_left_it_holds_what_parsing_its_lines_gives(tmp_path):
    """A full sync imports from the folder the export left, its new records made from the
    rows, not parsed: the data must be what parsing each line would give."""
    import json

    from agentstate.sync.export import plan_export, updated
    from agentstate.sync.shared_files import Folder
    from tests.sync.test_sync_export_lines import _varied

    one, _ = _two_stores(tmp_path, _varied)
    opened = _open(one)
    plan = plan_export(opened, Folder(shared_path(opened)), include_candidates=True,
                       include_quarantined=True)
    fresh = updated(Folder(shared_path(opened)), plan)
    opened.close()
    kinds = {r.type for r in fresh.records.values()}
    assert kinds == {"memory", "evidence"} and len(fresh.records) == len(plan.new) > 20
    assert any(r.data["held"] for r in fresh.records.values() if r.type == "memory")
    assert any(r.data["parent"] for r in fresh.records.values() if r.type == "memory")
    for record in fresh.records.values():
        assert record.data == json.loads(record.line)
        assert record.body == records.canonical({k: v for k, v in record.data.items()
                                                 if k != "id"})


def test_a_purge_of_every_shared_fact_leaves_empty_files(tmp_path):
    """The lines a purge removes leave the file empty, not a lone line end (as before)."""
    from agentstate.memory.forget import forget

    one, _ = _two_stores(tmp_path, _facts)
    opened = _open(one)
    sync(opened, do_import=False, principal="owner")
    for n in range(3):
        forget(opened, f"mem:fact{n:04d}", reason="test", purge=True, principal="owner")
    assert sync(opened, do_import=False, principal="owner").removed_lines == 6
    folder = shared_path(opened)
    opened.close()
    assert (folder / "memories.jsonl").read_bytes() == b""
    assert (folder / "evidence.jsonl").read_bytes() == b""
    assert (folder / "tombstones.jsonl").read_bytes().count(b"\n") == 3
