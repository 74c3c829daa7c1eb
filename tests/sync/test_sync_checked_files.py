"""A shared file whose exact text this store found valid (or wrote) before is parsed
without checking each line again (issue 24: checking every line was half of a sync that
found nothing new); any change to the text, by hand or by a pull, is checked in full."""

from __future__ import annotations

import pytest

from agentstate.errors import InvalidInput
from agentstate.memory.write import remember
from agentstate.sync import records, shared_path, sync
from agentstate.sync.shared import checked_files


@pytest.fixture
def checks(monkeypatch):
    """How many lines went through the full check."""
    count = []
    real = records.parse_line

    def spy(text, where):
        count.append(where)
        return real(text, where)

    monkeypatch.setattr(records, "parse_line", spy)
    return count


def test_a_file_this_store_wrote_is_not_checked_again_until_it_changes(store, checks):
    for n in range(3):
        remember(store, f"service {n} listens on port {8000 + n}", kind="fact",
                 principal="owner")
    assert sync(store, do_import=False, principal="owner").exported == 3
    assert checked_files(store).keys() == {"evidence.jsonl", "memories.jsonl"}
    checks.clear()
    again = sync(store, principal="owner")
    assert again.exported == 0 and again.imported == 0 and checks == []
    # A line edited by hand (its id kept) is caught: the file's text changed.
    memories = shared_path(store) / "memories.jsonl"
    memories.write_text(memories.read_text().replace("port 8001", "port 9001"))
    with pytest.raises(InvalidInput, match="does not match"):
        sync(store, do_export=False, principal="owner")
    assert checks  # checked line by line, up to the edited one


def test_a_teammates_new_lines_are_checked(store, checks):
    remember(store, "the cache lives in redis", kind="fact", principal="owner")
    sync(store, principal="owner")
    memories = shared_path(store) / "memories.jsonl"
    line = records.make_record("memory", kind="fact", key=None, scope="repo",
                               text="the nightly build runs at 02:00", source="user",
                               principal="alice", created="2026-01-01T00:00:00.000000Z",
                               valid_until=None, parent=None, rel=None, held=None).line
    memories.write_text(memories.read_text() + line + "\n")
    checks.clear()
    assert sync(store, principal="owner").imported == 1
    assert len(checks) == 2  # the whole changed file, once


@pytest.mark.parametrize("ref", ["user", "evt:abc123", 'file:a "quoted" path@1a2b',
                                 "file:路径/文件.py@main", "file:tab\there@x"])
def test_the_quick_evidence_record_is_the_canonical_one(ref):
    quick = records.evidence_record("0" * 32, ref)
    data = {"v": records.FORMAT, "type": "evidence", "memory": "0" * 32, "ref": ref}
    body = records.canonical(data)
    data["id"] = records.record_id(data, body)
    assert (quick.line, quick.body, quick.data) == (records.canonical(data), body, data)


@pytest.mark.parametrize("text", ["the cache lives in redis", 'a "quoted" ,"key": value',
                                  "路径 ünïcode\tand a tab", "ends with a brace }"])
@pytest.mark.parametrize("key", [None, "setting-1", "held"])
def test_a_made_record_line_is_the_canonical_one(text, key):
    """make_record splices the id into the body it encoded once: the line must be the one a
    full encoding of the record gives, whatever the text holds."""
    fields = {"kind": "fact", "key": key, "scope": "repo", "text": text, "source": "user",
              "principal": "alice", "created": '2026-01-01T00:00:00.000000Z",id',
              "valid_until": None, "parent": None, "rel": None, "held": None}
    made = records.make_record("memory", **fields)
    assert made.line == records.canonical(made.data)
    assert made.body == records.canonical({k: v for k, v in made.data.items() if k != "id"})
    tomb = records.make_record("forget", target="0" * 32)
    assert tomb.line == records.canonical(tomb.data)
