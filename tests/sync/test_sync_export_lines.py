"""The export spells each memory and evidence line out and reads the versions as narrow
tuples (issue 24: the sorted-key encoder and a record object per version were most of a
first export). The lines must be byte for byte the ones the general encoder writes: the
same store exported both ways is the oracle."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pytest

from agentstate.memory.bulk_reads import shared_fields_with
from agentstate.memory.forget import forget
from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import insert_version
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from agentstate.sync import export as export_module
from agentstate.sync import records, shared_files, shared_path, spelled, sync

AWKWARD = ['a "quoted" ,"key": value', "路径 ünïcode\tand a tab", "ends with a brace }",
           "back\\slash and \x01 control", "line\u2028separator and emoji 🚀", "/* \n */",
           "  padded with spaces\t ", "nul \x00 del \x7f slash / and \u2029"]


@pytest.mark.parametrize("text", AWKWARD)
@pytest.mark.parametrize("optional", [None, "x"])
def test_a_spelled_out_memory_line_is_the_encoders(text, optional):
    fields = {"kind": "fact", "key": optional and f"key {text}", "scope": "branch:main",
              "text": text, "source": "file:a.py@1", "principal": "alice",
              "created": "2026-01-01T00:00:00.000000Z", "valid_until": optional,
              "parent": optional and "0" * 32, "rel": optional and "contests",
              "held": optional and "candidate"}
    quick = records.memory_record(**fields)
    general = records.make_record("memory", **fields)
    assert (quick.line, quick.body, quick.data) == (general.line, general.body, general.data)
    assert quick.line == records.canonical(general.data)


def test_a_field_that_is_not_a_string_takes_the_encoder():
    fields = {"kind": "fact", "key": None, "scope": "repo", "text": "t", "source": "user",
              "principal": "alice", "created": 20260101, "valid_until": None, "parent": None,
              "rel": None, "held": None}
    assert records.memory_record(**fields).line == records.make_record("memory", **fields).line


def _varied(store) -> None:
    """Chains, rivals, held versions, expiry dates, unshared scopes, awkward texts, every
    kind of evidence ref, a forgotten and a purged fact."""
    plain = {"kind": "fact", "source": "user", "confidence": 0.9, "principal": "owner",
             "reason": "test", "scanned": True}
    with store.transaction():
        for n, text in enumerate(AWKWARD):
            scope = ("repo", "branch:main", "path:src/", "user")[n % 4]
            insert_version(store, memory_id=f"fact{n:04d}", version=1, key=None, scope=scope,
                           text=f"{text} {n}", status=MemoryStatus.ACTIVE,
                           valid_until="2027-01-01T00:00:00Z" if n % 2 else None,
                           supersedes=None, evidence=[("user", "user"),
                                                      (f"file:src/{text[:3]}.py@abc", "file")],
                           **plain)
        for n, (second, held) in enumerate([(MemoryStatus.ACTIVE, None),
                                            (MemoryStatus.CONTESTED, None),
                                            (MemoryStatus.CANDIDATE, "held"),
                                            (MemoryStatus.QUARANTINED, "held")]):
            memory_id = f"chain{n:04d}"
            insert_version(store, memory_id=memory_id, version=1, key=f"setting-{n}",
                           scope="repo", text=f"the value {n} is one",
                           status=MemoryStatus.SUPERSEDED if held is None and n == 0
                           else MemoryStatus.ACTIVE, valid_until=None, supersedes=None,
                           evidence=[("evt:abcd1234", "evt")], **plain)
            insert_version(store, memory_id=memory_id, version=2, key=f"setting-{n}",
                           scope="repo", text=f"the value {n} is two", status=second,
                           valid_until=None, supersedes=1, evidence=[("user", "user")],
                           **plain)
        insert_version(store, memory_id="gone0001", version=1, key=None, scope="repo",
                       text="a fact to forget", status=MemoryStatus.ACTIVE, valid_until=None,
                       supersedes=None, evidence=[("user", "user")], **plain)
        insert_version(store, memory_id="gone0002", version=1, key=None, scope="repo",
                       text="a fact to purge", status=MemoryStatus.ACTIVE, valid_until=None,
                       supersedes=None, evidence=[("user", "user")], **plain)


def _grow_chains(store) -> None:
    """New versions whose parents an earlier export mapped: a plain one and a rival."""
    with store.transaction():
        for n, status in ((0, MemoryStatus.ACTIVE), (1, MemoryStatus.CONTESTED)):
            insert_version(store, memory_id=f"chain{n:04d}", version=3, kind="fact",
                           key=f"setting-{n}", scope="repo", text=f"the value {n} is three",
                           source="user", status=status, confidence=0.9, valid_until=None,
                           supersedes=2, principal="owner", reason="test",
                           evidence=[("user", "user")], scanned=True)


def _general_evidence(memory: str, ref: str) -> records.Record:
    data = {"v": records.FORMAT, "type": "evidence", "memory": memory, "ref": ref}
    body = records.canonical(data)
    data["id"] = records.record_id(data, body)
    return records.Record(data, records.canonical(data), "", body)


def _general_evidence_line(memory: str, ref: str) -> tuple[str, str, str]:
    record = _general_evidence(memory, ref)
    return record.id, record.line, record.body


def _general_encoders(monkeypatch) -> None:
    """The export as it was: no line spelled by SQLite, every line through the encoder."""
    monkeypatch.setattr(export_module, "memory_record",
                        lambda **fields: records.make_record("memory", **fields))
    monkeypatch.setattr(export_module, "evidence_line", _general_evidence_line)
    monkeypatch.setattr(export_module, "spelled_rows", lambda store, **_: shared_fields_with(
        store, "NULL, m.scanned_with", spelled.HEAD))
    # Files sorted as write_lines sorts them (by each line's own id), not from the pairs.
    monkeypatch.setattr(export_module, "write_ordered", shared_files.write_lines)


def _open(path):
    return open_store(path / ".agentstate", clock=Clock(datetime(2026, 1, 15, tzinfo=UTC)),
                      ids=IdSource(seed=3))


def test_the_export_writes_the_general_encoders_bytes(tmp_path, monkeypatch):
    from agentstate.store.init import create_store

    (tmp_path / "quick").mkdir()
    create_store(target=tmp_path / "quick")
    store = _open(tmp_path / "quick")
    _varied(store)
    store.close()
    shutil.copytree(tmp_path / "quick", tmp_path / "general")
    outputs = []
    for name in ("quick", "general"):
        with monkeypatch.context() as patch:
            if name == "general":
                _general_encoders(patch)
            opened = _open(tmp_path / name)
            held = {"include_candidates": True, "include_quarantined": True}
            first = sync(opened, do_import=False, principal="owner", **held)
            # A first export writes new lines alone, ordered by their ids without the
            # kept lines' sort: its files are compared too, not only the rewritten ones.
            first_files = {p.name: p.read_bytes()
                           for p in sorted(shared_path(opened).glob("*.jsonl"))}
            _grow_chains(opened)
            forget(opened, "mem:gone0001", reason="test", principal="owner")
            forget(opened, "mem:gone0002", reason="test", purge=True, principal="owner")
            then = sync(opened, do_import=False, principal="owner", **held)
            folder = shared_path(opened)
            files = {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl"))}
            mapped = sorted(opened.conn.execute(
                "SELECT record_id, memory, version, origin FROM shared_records"))
            outputs.append((first.exported, first.exported_evidence, then.exported,
                            then.exported_tombstones,
                            then.removed_lines, files, mapped, first_files))
            opened.close()
    quick, general = outputs
    assert quick[0] >= 12 and quick[1] > quick[0] and quick[2] == 2 and quick[3] == 2
    assert quick[4] >= 2
    assert set(quick[5]) == {"memories.jsonl", "evidence.jsonl", "tombstones.jsonl"}
    assert quick == general
    for data in [*quick[5].values(), *quick[7].values()]:  # sorted by id, as parsed
        ids = [json.loads(line)["id"] for line in data.decode().split("\n") if line]
        assert ids == sorted(ids) and len(ids) == len(set(ids))
    lines = quick[5]["memories.jsonl"].decode()
    assert "🚀" in lines and '"held":"candidate"' in lines and '"rel":"contests"' in lines


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_a_text_holding_a_unicode_line_separator_travels(tmp_path, separator):
    """JSON leaves these unescaped inside a string; the folder is split at line ends only
    (it was split at these too, and every later sync failed on the broken line)."""
    from agentstate.store.init import create_store

    stores = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        create_store(target=tmp_path / name)
        stores.append(_open(tmp_path / name))
    a, b = stores
    text = f"the build runs nightly{separator}and weekly"
    with a.transaction():
        insert_version(a, memory_id="sep00001", version=1, kind="fact", key=None,
                       scope="repo", text=text, source="user", status=MemoryStatus.ACTIVE,
                       confidence=0.9, valid_until=None, supersedes=None, principal="owner",
                       reason="test", evidence=[("user", "user")], scanned=True)
    assert sync(a, principal="owner").exported == 1
    assert sync(a, principal="owner").exported == 0  # a's own folder reads back
    shutil.copytree(shared_path(a), shared_path(b))
    assert sync(b, principal="owner").imported == 1
    assert b.conn.execute("SELECT text FROM memories").fetchone()[0] == text
    a.close()
    b.close()


def _general_body(data: dict) -> str:
    return records.canonical({k: v for k, v in data.items() if k != "id"})


@pytest.mark.parametrize("text", AWKWARD)
def test_a_read_lines_body_is_the_encoders(text):
    """read_folder checks each line's id against its body, now spelled out for memory and
    evidence lines: the body must be the encoder's for any valid record."""
    made = [records.make_record("memory", kind="fact", key=text, scope="repo", text=text,
                                source="user", principal="alice", created=text,
                                valid_until=None, parent=None, rel=None, held=None),
            records.make_record("evidence", memory="0" * 32, ref=f"file:x{text}@main"),
            records.make_record("forget", target="1" * 32)]
    for record in made:
        parsed = records.parse_line(record.line, "test")
        assert parsed.body == _general_body(parsed.data) == record.body
        records.check_id(parsed)


@pytest.mark.parametrize("version", [True, 1.0])
def test_a_format_version_equal_to_one_but_not_the_integer_keeps_its_spelling(version):
    """`"v": true` passes the format check (true == 1): its id is the hash of the body the
    encoder spells, `"v":true`, as before the bodies were spelled out."""
    for data in ({"v": version, "type": "evidence", "memory": "0" * 32, "ref": "user"},
                 {"v": version, "type": "memory", "kind": "fact", "key": None, "scope": "repo",
                  "text": "t", "source": "user", "principal": "alice", "created": "c",
                  "valid_until": None, "parent": None, "rel": None, "held": None}):
        data["id"] = records.record_id(data)
        parsed = records.parse_line(records.canonical(data), "test")
        assert parsed.body == _general_body(data)
        records.check_id(parsed)


def _noting_collector(function, seen: list[bool]):
    """`function`, noting in `seen` whether the cyclic collector was on at each call."""
    import gc as collector

    def noted(*args, **options):
        seen.append(collector.isenabled())
        return function(*args, **options)
    return noted


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_while_an_export_plans_and_writes_and_as_it_was_after(
        tmp_path, monkeypatch, enabled):
    """A first export allocates tuples holding no cycle, a few a version: the collector is
    off while it reads and plans them and while it writes them (store/collector.py), and is
    as the caller had it afterwards."""
    import gc as collector

    from agentstate.store.init import create_store

    create_store(target=tmp_path)
    store = _open(tmp_path)
    _varied(store)

    seen: list[bool] = []
    for name in ("spelled_rows", "record_exported"):
        monkeypatch.setattr(export_module, name, _noting_collector(getattr(export_module, name),
                                                                   seen))
    (collector.enable if enabled else collector.disable)()
    try:
        assert sync(store, do_import=False, principal="owner").exported >= 12
        assert collector.isenabled() is enabled
    finally:
        collector.enable()
        store.close()
    assert seen == [False, False]


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_stays_off_between_a_syncs_steps_and_is_as_it_was_after(
        tmp_path, monkeypatch, enabled):
    """A full sync is one job with the collector off, not one region a step: between the
    export's write and the import (the folder as the export left it, the checked files
    kept) it stays off, so no pass walks the export's lines before they are freed."""
    import gc as collector

    from agentstate.store.init import create_store
    from agentstate.sync import shared as shared_module

    create_store(target=tmp_path)
    store = _open(tmp_path)
    _varied(store)

    seen: list[bool] = []
    monkeypatch.setattr(export_module, "updated",
                        _noting_collector(export_module.updated, seen))
    monkeypatch.setattr(shared_module, "keep_checked_files",
                        _noting_collector(shared_module.keep_checked_files, seen))
    (collector.enable if enabled else collector.disable)()
    try:
        assert sync(store, principal="owner").exported >= 12
        assert collector.isenabled() is enabled
    finally:
        collector.enable()
        store.close()
    assert seen == [False, False]


def _export_twice(root) -> list[str]:
    """The sha256 of each shared file after a first export of `_varied` and after a second
    one (chains grown, a fact forgotten, one purged), in file-name order."""
    import hashlib

    from agentstate.store.init import create_store

    create_store(target=root)
    store = _open(root)
    _varied(store)
    held = {"include_candidates": True, "include_quarantined": True}
    digests = []
    for step in range(2):
        if step:
            _grow_chains(store)
            forget(store, "mem:gone0001", reason="test", principal="owner")
            forget(store, "mem:gone0002", reason="test", purge=True, principal="owner")
        sync(store, do_import=False, principal="owner", **held)
        digests += [hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted(shared_path(store).glob("*.jsonl"))]
    store.close()
    return digests


# What `main` at d21eac7 (before the versions were read narrow, 2026-12-03) wrote for the
# store of `_export_twice`: the files of an export must not change with its code, or every
# teammate's folder would hold the same records twice under other ids.
_MAINS_FILES = [
    "8aad2f8a6ae7784106c53e5513272333b0c9ece5247fd944f56622e005163534",  # evidence.jsonl
    "d2acf1c7ee5c01903ef6fa5e5d6ff2931c5627952ad96a50b87a21f1178b6d8e",  # memories.jsonl
    "1544b6be81f8bb171312a12e2ef109378021407ba4f4c6af77ece0568048bf86",  # then evidence
    "f58bf4faf66d83295ce95f8c555ce041a55c4cf0b277ff75e8a67517ba84437e",  # memories
    "3f2eb687e8563007ef0114ba7a5e799cf1c45b81bf58c876389dd3e573dc0a71",  # tombstones
]


def test_the_export_writes_the_bytes_the_earlier_code_wrote(tmp_path):
    assert _export_twice(tmp_path) == _MAINS_FILES


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_while_an_import_reads_and_merges_and_as_it_was_after(
        tmp_path, monkeypatch, enabled):
    """The import's side of the same: the folder's records and the merge's rows hold no
    cycle, so the collector is off while the folder is read and while it is merged, and is
    as the caller had it afterwards — and the import still takes every record."""
    import gc as collector

    from agentstate.store.init import create_store
    from agentstate.sync import merge as merge_module

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    create_store(target=tmp_path / "a")
    create_store(target=tmp_path / "b")
    teammate, here = _open(tmp_path / "a"), _open(tmp_path / "b")
    _varied(teammate)
    exported = sync(teammate, do_import=False, principal="owner").exported
    shutil.copytree(shared_path(teammate), shared_path(here))

    seen: list[bool] = []
    monkeypatch.setattr(shared_files, "read_folder",
                        _noting_collector(shared_files.read_folder, seen))
    monkeypatch.setattr(merge_module, "import_folder",
                        _noting_collector(merge_module.import_folder, seen))
    (collector.enable if enabled else collector.disable)()
    try:
        assert sync(here, do_export=False, principal="owner").imported == exported
        assert collector.isenabled() is enabled
    finally:
        collector.enable()
        teammate.close()
        here.close()
    assert seen == [False, False]
