"""A first export spelled by SQLite from the line ids kept with each version (m066,
sync/export_first.py) writes the bytes, mappings and counts of the Python plan, and is taken
only where it can: every kind of version is added to a plain store in turn, and the store
is exported both ways (issue 24). A stored id that a later change made stale is never
written: the triggers drop it, and the folder's own id check would refuse such a line."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

import pytest

from agentstate.memory.forget import forget
from agentstate.memory.memory_tables import m066_line_ids
from agentstate.memory.scanned import mark_rows_scanned
from agentstate.memory.shared_line import fill_line_ids
from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import add_evidence, insert_version
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from agentstate.store.init import create_store
from agentstate.sync import export as export_module
from agentstate.sync import shared_files, shared_path, sync

AWKWARD = ['a "quoted" ,"key": value', "路径 ünïcode\tand a tab", "back\\slash and \x01",
           "line\u2028separator and emoji 🚀", "nul \x00 del \x7f slash /"]
PLAIN = {"kind": "fact", "source": "user", "confidence": 0.9, "principal": "owner",
         "reason": "test", "scanned": True}
REFS = [("user", "user"), ("evt:abcd1234", "evt"), ("file:src/a.py@abc", "file")]


def _open(path):
    return open_store(path / ".agentstate", clock=Clock(datetime(2026, 1, 15, tzinfo=UTC)),
                      ids=IdSource(seed=3))


def _fact(store, memory_id, text, *, version=1, supersedes=None, status=MemoryStatus.ACTIVE,
          scope="repo", key=None, evidence=None, **changed):
    fields = {**PLAIN, **changed}
    return insert_version(store, memory_id=memory_id, version=version, key=key, scope=scope,
                          text=text, status=status, supersedes=supersedes,
                          valid_until=fields.pop("valid_until", None),
                          evidence=REFS[:2] if evidence is None else evidence, **fields)


def _chain(store, memory_id, texts, statuses, key):
    for n, (text, status) in enumerate(zip(texts, statuses, strict=True), start=1):
        _fact(store, memory_id, text, version=n, supersedes=n - 1 or None, status=status,
              key=key)


def _base(store) -> None:
    """Versions a first export in SQL takes: awkward texts in every shared scope and some
    that are not shared, expiry dates, every kind of evidence ref, chains of two and three,
    two versions of the same content (one line, the first version mapped)."""
    scopes = ("repo", "branch:main", "path:src/", "user", "run:r1")
    with store.transaction():
        for n, text in enumerate(AWKWARD):
            _fact(store, f"fact{n:04d}", f"{text} {n}", scope=scopes[n % len(scopes)],
                  valid_until="2027-01-01T00:00:00Z" if n % 2 else None,
                  evidence=REFS[n % len(REFS):] or REFS)
        _chain(store, "chain001", ["port 1", "port 2"],
               [MemoryStatus.SUPERSEDED, MemoryStatus.ACTIVE], "port")
        _chain(store, "chain002", ["host a", "host b", "host c"],
               [MemoryStatus.SUPERSEDED] * 2 + [MemoryStatus.ACTIVE], "host")
        _fact(store, "twin0001", "the same fact twice")
        _fact(store, "twin0002", "the same fact twice")


def _contested(store):
    _chain(store, "rival001", ["mode fast", "mode slow"],
           [MemoryStatus.ACTIVE, MemoryStatus.CONTESTED], "mode")


def _candidate(store):
    _fact(store, "held0001", "a candidate fact", status=MemoryStatus.CANDIDATE)


def _quarantined(store):
    _fact(store, "held0002", "a quarantined fact", status=MemoryStatus.QUARANTINED)


def _forgotten(store):
    _fact(store, "gone0001", "a fact to forget")
    forget(store, "mem:gone0001", reason="test", principal="owner")


def _purged(store):
    _fact(store, "gone0002", "a fact to purge")
    forget(store, "mem:gone0002", reason="test", purge=True, principal="owner")


def _forgotten_parent(store):
    """A parent not written: the Python plan gives its child a null parent, not the id the
    child's stored id was hashed with."""
    _chain(store, "orphan01", ["level 1", "level 2"],
           [MemoryStatus.SUPERSEDED, MemoryStatus.ACTIVE], "level")
    store.conn.execute("UPDATE memories SET status = 'forgotten' WHERE id = 'orphan01' AND "
                       "version = 1")


def _unscanned(store):
    _fact(store, "raw00001", "a fact the scanner never passed", scanned=False)


def _secret_ref(store):
    _fact(store, "leak0001", "a fact citing a token",
          evidence=[("file:ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8@abc", "file")])


def _rescanned(store, where):
    """A changed text passed by the scanner again (as an export's own scan marks it): only
    the stored id is left to tell that the line changed."""
    mark_rows_scanned(store, store.conn.execute(
        f"SELECT row, text, key, scope, source FROM memories WHERE {where}").fetchall())


def _changed_text(store):
    """Changed after it was written: its stored id is stale."""
    where = "id = 'chain001' AND version = 2"
    store.conn.execute(f"UPDATE memories SET text = 'port 9' WHERE {where}")
    _rescanned(store, where)


def _changed_parent(store):
    where = "id = 'chain002' AND version = 1"
    store.conn.execute(f"UPDATE memories SET text = 'host z' WHERE {where}")
    _rescanned(store, where)


def _changed_expiry(store):
    store.conn.execute("UPDATE memories SET valid_until = '2030-01-01T00:00:00Z' "
                       "WHERE id = 'fact0000'")


def _changed_ref(store):
    store.conn.execute("UPDATE memory_evidence SET ref = 'evt:zzzz9999' "
                       "WHERE ref = 'evt:abcd1234' AND memory_row = (SELECT min(row) FROM "
                       "memories)")


def _later_evidence(store):
    """Evidence added to a version after it was written: its id comes from the version's."""
    row = store.conn.execute("SELECT row FROM memories WHERE id = 'chain001' AND "
                             "version = 2").fetchone()[0]
    add_evidence(store, row, [("file:src/b.py@def", "file")], "owner")


def _teammate(store):
    """A teammate's versions imported first: they are mapped, so the export is not a first."""
    other = store.root.parent.parent / "teammate"
    other.mkdir()
    create_store(target=other)
    mate = _open(other)
    with mate.transaction():
        _chain(mate, "mate0001", ["shared 1", "shared 2"],
               [MemoryStatus.SUPERSEDED, MemoryStatus.ACTIVE], "shared")
    sync(mate, principal="owner")
    mate.close()
    shutil.copytree(other / ".agentstate" / "shared", shared_path(store))
    sync(store, do_export=False, principal="owner")
    shutil.rmtree(shared_path(store))


HELD = {"include_candidates": True, "include_quarantined": True}
# (what is added to the plain store, the export's options, whether SQL writes it)
CASES = [
    (None, {}, True), (None, HELD, True), (_candidate, {}, True), (_quarantined, {}, True),
    (_forgotten, {}, True), (_purged, {}, True), (_later_evidence, {}, True),
    (_contested, {}, False), (_candidate, HELD, False), (_quarantined, HELD, False),
    (_forgotten_parent, {}, False), (_unscanned, {}, False), (_secret_ref, {}, False),
    (_changed_text, {}, False), (_changed_parent, {}, False), (_changed_expiry, {}, False),
    (_changed_ref, {}, False), (_teammate, {}, False),
]


def _export(path, options, monkeypatch, *, sql: bool):
    taken = []
    with monkeypatch.context() as patch:
        real = export_module.first_export
        patch.setattr(export_module, "first_export", lambda *a: taken.append(
            real(*a) if sql else None) or taken[-1])
        opened = _open(path)
        result = sync(opened, do_import=False, principal="owner", **options)
        mapped = sorted(opened.conn.execute(
            "SELECT record_id, memory, version, origin, rel FROM shared_records"))
        opened.close()
    files = {p.name: p.read_bytes()
             for p in sorted((path / ".agentstate" / "shared").glob("*.jsonl"))}
    counts = (result.exported, result.exported_evidence, result.exported_tombstones,
              result.skipped_items)
    return files, mapped, counts, any(t is not None for t in taken)


@pytest.mark.parametrize("added, options, in_sql", CASES,
                         ids=[f"{(a.__name__ if a else 'plain').strip('_')}-"
                              f"{'held' if o else 'shared'}" for a, o, _ in CASES])
def test_a_first_export_in_sql_writes_the_python_plans_bytes(tmp_path, monkeypatch, added,
                                                             options, in_sql):
    (tmp_path / "sql").mkdir()
    create_store(target=tmp_path / "sql")
    store = _open(tmp_path / "sql")
    _base(store)
    if added is not None:
        added(store)  # a purge compacts the store: not inside a transaction
    store.close()
    shutil.copytree(tmp_path / "sql", tmp_path / "python")
    files, mapped, counts, taken = _export(tmp_path / "sql", options, monkeypatch, sql=True)
    expected = _export(tmp_path / "python", options, monkeypatch, sql=False)
    assert taken is in_sql
    assert (files, mapped, counts) == expected[:3]
    assert files["memories.jsonl"] and files["evidence.jsonl"]
    # Every id is the hash of its line's content (what a teammate's import checks).
    folder = shared_files.read_folder(tmp_path / "sql" / ".agentstate" / "shared")
    assert len(folder.records) == counts[0] + counts[1] + counts[2]


def test_a_full_sync_imports_after_a_first_export_in_sql(tmp_path):
    """The import that follows reads the folder the SQL path wrote."""
    create_store(target=tmp_path)
    store = _open(tmp_path)
    _base(store)
    first = sync(store, principal="owner")
    mapped = store.conn.execute("SELECT count(*) FROM shared_records").fetchone()[0]
    assert first.exported == mapped >= 8  # the twins are one record, mapped once
    assert first.imported == 0 and not first.skipped_items
    again = sync(store, principal="owner")
    assert (again.exported, again.exported_evidence, again.imported) == (0, 0, 0)
    store.close()


def _delete_parent(store):
    store.conn.execute("DELETE FROM memory_evidence WHERE memory_row IN (SELECT row FROM "
                       "memories WHERE id = 'chain002' AND version = 1)")
    store.conn.execute("DELETE FROM memories WHERE id = 'chain002' AND version = 1")


def _replace_parent(store):
    """The parent deleted and another version written in its place: the child's stored id
    holds the old parent's id."""
    _delete_parent(store)
    _fact(store, "chain002", "host q", key="host", status=MemoryStatus.SUPERSEDED)


def _renumbered_parent(store):
    """The parent moved to another version number (and forgotten there, so that it is not
    written) and a version written in its place: the child's stored id holds the old
    parent's id."""
    store.conn.execute("UPDATE memories SET version = 9, status = 'forgotten' "
                       "WHERE id = 'chain002' AND version = 1")
    _fact(store, "chain002", "host q", key="host", status=MemoryStatus.SUPERSEDED)


@pytest.mark.parametrize("change", [
    _changed_text, _changed_parent, _changed_expiry, _renumbered_parent,
    lambda store: store.conn.execute("UPDATE memories SET key = 'other' WHERE id = "
                                     "'chain001' AND version = 2"),
    _delete_parent, _replace_parent,
])
def test_a_stale_stored_id_is_never_written(tmp_path, change):
    """A version changed after it was written (or whose parent changed, or went): its
    stored id is not its line's any more, and the export never writes it with that id."""
    create_store(target=tmp_path)
    store = _open(tmp_path)
    _base(store)
    stored = dict(store.conn.execute("SELECT row, line_id FROM memories"))
    with store.transaction():
        change(store)
    sync(store, do_import=False, principal="owner")
    # Every line's id is checked against its content: a stale id would raise here (the
    # line is spelled from the row as it is now, its parent's id from the parent's row).
    folder = shared_files.read_folder(shared_path(store))
    lines = [r.data for r in folder.records.values() if r.type == "memory"]
    assert len(lines) >= 8
    assert {line["parent"] for line in lines} - {None} <= {line["id"] for line in lines}
    assert any(line_id != stored[row] for row, line_id in store.conn.execute(
        "SELECT row, line_id FROM memories") if row in stored)  # the triggers dropped some
    # An evidence row's id hashes its version's: it goes when that one goes.
    assert store.conn.execute(
        "SELECT count(*) FROM memory_evidence v JOIN memories m ON m.row = v.memory_row "
        "WHERE m.line_id IS NULL AND v.line_id IS NOT NULL").fetchone()[0] == 0
    store.close()


def test_the_migration_stores_the_ids_the_write_path_stores(tmp_path):
    create_store(target=tmp_path)
    store = _open(tmp_path)
    _base(store)
    with store.transaction():
        _contested(store)
        _later_evidence(store)
    versions = store.conn.execute("SELECT row, line_id FROM memories ORDER BY row").fetchall()
    evidence = store.conn.execute("SELECT memory_row, ref, line_id FROM memory_evidence "
                                  "ORDER BY 1, 2").fetchall()
    assert all(line_id for _, line_id in versions)
    with store.transaction():
        store.conn.execute("UPDATE memories SET line_id = NULL")
        store.conn.execute("UPDATE memory_evidence SET line_id = NULL")
        fill_line_ids(store.conn)
    assert store.conn.execute("SELECT row, line_id FROM memories ORDER BY row").fetchall() \
        == versions
    assert store.conn.execute("SELECT memory_row, ref, line_id FROM memory_evidence "
                              "ORDER BY 1, 2").fetchall() == evidence
    assert m066_line_ids.__doc__
    store.close()


def test_an_imported_version_keeps_no_line_id(tmp_path):
    """An import's versions are mapped to their records: no first export reads their ids,
    and the per-record import stores none, as its batches do not."""
    create_store(target=tmp_path)
    store = _open(tmp_path)
    _teammate(store)
    assert store.conn.execute("SELECT count(*), count(line_id) FROM memories").fetchone() \
        == (2, 0)
    store.close()
