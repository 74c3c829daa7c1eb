"""sync merge (agentstate.sync.merge) in process, on one store: a teammate's newer value, a
rival value, a record matching a fact written here, evidence and tombstones by mapping.

Quick, so `make mutation` can run it per mutant; the whole-command and git-backed checks
live in the other files of this folder."""

from __future__ import annotations

import json

import pytest

from agentstate.errors import Refused
from agentstate.memory.bulk_reads import evidence_refs_by_row
from agentstate.memory.model import chain_rows
from agentstate.memory.write import remember
from agentstate.sync import shared_path, sync
from agentstate.sync.merge import import_folder
from agentstate.sync.records import make_record
from agentstate.sync.shared_files import read_folder


def _record(text, **over):
    fields = dict(kind="fact", key=None, scope="repo", text=text, source="tool:ci",
                  principal="owner", created="2026-01-10T00:00:00.000000Z", valid_until=None,
                  parent=None, rel=None, held=None)
    fields.update(over)
    return make_record("memory", **fields)


def _append(store, name, *records):
    folder = shared_path(store)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / name).open("a", encoding="utf-8") as out:
        out.writelines(r.line + "\n" for r in records)


def _import(store, principal="owner"):
    return import_folder(store, read_folder(shared_path(store)), principal=principal)


def _exported_id(store, text):
    sync(store, do_import=False, principal="owner")
    lines = (shared_path(store) / "memories.jsonl").read_text(encoding="utf-8").splitlines()
    return next(json.loads(line)["id"] for line in lines if json.loads(line)["text"] == text)


def _statuses(store, memory_id):
    return [(r.version, r.text, r.status) for r in chain_rows(store, memory_id)]


def _history(store, memory_id):
    return store.conn.execute("SELECT version, op, reason FROM memory_history WHERE memory = ? "
                              "ORDER BY hid", (memory_id,)).fetchall()


def _tool_fact(store, text, key=None):
    """A fact written here with a tool's event as evidence (the authority of `tool:ci`)."""
    from agentstate.runs.log import append_event, start_run

    run, _ = start_run(store, "sync merge")
    event = append_event(store, run.ref, "observation", text, source="tool:ci")
    return remember(store, text, kind="fact", key=key, source="tool:ci",
                    evidence=[event.ref], principal="owner")


def test_a_teammates_newer_value_supersedes_the_parent_here(store):
    mine = _tool_fact(store, "the api listens on port 8080", key="api-port")
    parent = _exported_id(store, "the api listens on port 8080")
    newer = _record("the api listens on port 9090", key="api-port", parent=parent,
                    rel="supersedes")
    _append(store, "memories.jsonl", newer)
    result = _import(store)
    memory_id = mine.memory.id
    assert result.imported == [f"mem:{memory_id}@v2"] and result.contested == []
    assert _statuses(store, memory_id) == [(1, "the api listens on port 8080", "superseded"),
                                           (2, "the api listens on port 9090", "active")]
    new = chain_rows(store, memory_id)[1]
    assert (new.key, new.supersedes, new.scope) == ("api-port", 1, "repo")
    assert new.principal == "sync:owner" or new.principal.endswith(":owner")
    assert new.status_reason.startswith("imported from the shared folder (record ")
    ops = [(v, op) for v, op, _ in _history(store, memory_id)]
    assert (1, "superseded") in ops and (2, "import") in ops
    why = next(r for v, op, r in _history(store, memory_id) if op == "superseded")
    assert f"record {newer.id[:12]})" in why


def test_a_lower_authority_record_never_supersedes_a_tool_backed_value(store):
    mine = _tool_fact(store, "the api listens on port 8080", key="api-port")
    parent = _exported_id(store, "the api listens on port 8080")
    _append(store, "memories.jsonl", _record("the api listens on port 7070", key="api-port",
                                             parent=parent, rel="supersedes", source="model"))
    result = _import(store)
    assert _statuses(store, mine.memory.id) == [
        (1, "the api listens on port 8080", "active"),
        (2, "the api listens on port 7070", "contested")]
    assert result.contested == [f"mem:{mine.memory.id}@v2"]


def test_a_record_for_a_key_here_joins_that_chain_as_a_contested_rival(store):
    mine = _tool_fact(store, "the queue is rabbitmq", key="queue")
    result = _import_after(store, _record("the queue is kafka", key="queue"))
    assert _statuses(store, mine.memory.id) == [(1, "the queue is rabbitmq", "active"),
                                                (2, "the queue is kafka", "contested")]
    assert result.contested == result.imported == [f"mem:{mine.memory.id}@v2"]
    assert "contest" in [op for _, op, _ in _history(store, mine.memory.id)]


def _import_after(store, *records, principal="owner"):
    _append(store, "memories.jsonl", *records)
    return _import(store, principal)


def test_rival_records_settle_on_the_smallest_record_id_whatever_the_order(store):
    one, two = _record("the cache is redis", key="cache"), _record("the cache is memcached",
                                                                   key="cache")
    first, second = sorted([one, two], key=lambda r: r.id)
    # One pull reads records in id order; here the later id arrives in an earlier pull, so
    # only the settling step can make the smaller id current.
    [ref] = _import_after(store, second).imported
    memory_id = ref.split(":")[1].split("@")[0]
    result = _import_after(store, first)
    current = [text for _, text, status in _statuses(store, memory_id) if status == "active"]
    rivals = [text for _, text, status in _statuses(store, memory_id) if status == "contested"]
    assert current == [first.data["text"]] and rivals == [second.data["text"]]
    assert result.contested[-1] == ref  # the earlier value, contested once settled
    ops = [(version, op) for version, op, _ in _history(store, memory_id)]
    assert (2, "promote") in ops and (1, "contested") in ops


def test_a_teammates_preference_says_why_it_waits(store):
    [ref] = _import_after(store, _record("I prefer tabs", kind="preference")).imported
    [row] = chain_rows(store, ref.split(":")[1].split("@")[0])
    assert row.status == "candidate"
    assert row.status_reason.startswith("imported from the shared folder (record ")
    assert row.status_reason.endswith("(memory confirm REF --evidence user)")


def test_a_record_matching_a_fact_here_maps_to_it_and_its_evidence_follows(store):
    mine = _tool_fact(store, "the docs build with mkdocs")
    record = _record("the docs build with mkdocs")
    vouch = make_record("evidence", memory=record.id, ref="file:README.md@abc1234")
    _append(store, "evidence.jsonl", vouch)
    result = _import_after(store, record)
    assert result.imported == [mine.ref]
    assert [r.version for r in chain_rows(store, mine.memory.id)] == [1]  # no second row
    refs = evidence_refs_by_row(store)[mine.memory.row]
    assert "file:README.md@abc1234" in refs


def test_every_evidence_line_of_a_mapped_record_is_read_past_the_ones_skipped(store):
    record = _record("the linter is ruff")
    unknown = [make_record("evidence", memory=_record(f"never here {i}").id,
                           ref=f"file:docs/n{i}.md@abc1234") for i in range(4)]
    known = [make_record("evidence", memory=record.id, ref=f"file:docs/k{i}.md@abc1234")
             for i in range(4)]
    ordered = sorted(unknown + known, key=lambda r: r.id)
    # The check below means something only if a skipped line comes before a kept one.
    assert min(ordered.index(r) for r in unknown) < max(ordered.index(r) for r in known)
    _append(store, "evidence.jsonl", *ordered)
    [ref] = _import_after(store, record).imported
    row = next(r for r in chain_rows(store, ref.split(":")[1].split("@")[0]))
    assert set(evidence_refs_by_row(store)[row.row]) == {r.data["ref"] for r in known}


def test_a_record_in_a_scope_the_importer_may_not_write_is_skipped_saying_why(store):
    result = _import_after(store, _record("the release branch is frozen", scope="branch:rel"),
                           principal="agent")
    assert result.imported == []
    [skipped] = result.skipped
    assert skipped["reason"] == "principal 'agent' may not write scope 'branch:rel'"


def test_a_teammates_tombstone_is_an_owner_action_and_forgets_the_mapped_version(store):
    record = _record("the staging host is stg-2")
    [ref] = _import_after(store, record).imported
    _append(store, "tombstones.jsonl", make_record("forget", target=record.id))
    with pytest.raises(Refused, match="tombstones"):
        _import(store, principal="agent")
    assert chain_rows(store, ref.split(":")[1].split("@")[0])[0].status == "active"
    result = _import(store)
    assert result.tombstoned == [ref]
    assert chain_rows(store, ref.split(":")[1].split("@")[0])[0].status == "forgotten"


def test_a_tombstone_reaches_only_the_version_its_record_names(store):
    old = _record("the deploy window is tuesday", key="deploy-window")
    _import_after(store, old)
    newer = _record("the deploy window is thursday", key="deploy-window", parent=old.id,
                    rel="supersedes")
    [ref] = _import_after(store, newer).imported
    memory_id = ref.split(":")[1].split("@")[0]
    _append(store, "tombstones.jsonl", make_record("forget", target=old.id))
    result = _import(store)
    assert result.tombstoned == [f"mem:{memory_id}@v1"] and result.purged == []
    assert [s for _, _, s in _statuses(store, memory_id)] == ["forgotten", "active"]
    why = [r for v, op, r in _history(store, memory_id) if op == "forget"]
    assert why and why[0].startswith("forgotten by a teammate (shared tombstone ")


def test_a_purge_tombstone_erases_the_text_and_says_so(store):
    record = _record("the vpn gateway is gw-7.internal")
    [ref] = _import_after(store, record).imported
    _append(store, "tombstones.jsonl", make_record("purge", target=record.id))
    result = _import(store)
    assert result.tombstoned == [ref] and result.purged == [ref]
    [row] = chain_rows(store, ref.split(":")[1].split("@")[0])
    assert row.purged and row.text == ""


def test_a_tombstone_for_the_users_word_is_skipped_and_the_others_still_apply(store):
    remember(store, "we never deploy on fridays", kind="fact", source="user", principal="owner")
    mine = _exported_id(store, "we never deploy on fridays")
    # Tombstones are read in target order: teammates' records on both sides of the user's.
    pool = [_record(f"teammate fact number {i}") for i in range(200)]
    others = [r for r in pool if r.id < mine][:2] + [r for r in pool if r.id > mine][:2]
    assert len(others) == 4
    refs = _import_after(store, *others).imported
    tombstones = [make_record("forget", target=r) for r in [mine] + [o.id for o in others]]
    _append(store, "tombstones.jsonl", *tombstones)
    result = _import(store)
    assert sorted(result.tombstoned) == sorted(refs)
    [skipped] = result.skipped
    assert skipped["record"] == mine and skipped["where"] == "tombstones.jsonl"
    assert "stated by the user here" in skipped["reason"]
