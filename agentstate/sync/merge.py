"""Import: what teammates committed to the shared folder, merged into this store.

The whole folder is read and validated before anything is written; then one transaction
applies it (a purge's VACUUM follows the commit). Rules, each a function of the set of
records, so the order of lines, of files and of pulls does not matter and a second import
changes nothing:

1. Tombstones win. A record that a `forget` or `purge` tombstone names is never inserted; a
   version here that it maps to (inserted from it, or matched with it by content) is
   forgotten or purged. A tombstone whose record is unknown here stays in the folder and
   wins whenever that record shows up. Forgotten versions are never exported again.
2. A record already mapped to a version here is skipped. A record with the same content
   (normalised text, scope, kind, and the same key) as a version here is matched with it —
   the version gains the record's evidence refs, nothing is inserted.
3. Otherwise it becomes a new version, chain by chain, parents first (siblings in id order).
   A record that replaced its parent (`rel: supersedes`) supersedes that parent here, be
   the record inserted, matched or tombstoned: a teammate's newer value of a fact this
   store shares with them. Beside any other current value the new version is `contested`
   (memory.versions.contest): shown flagged, never an overwrite.
4. Then each chain the import changed is settled: a current value written here stays
   current; otherwise, among imported values, the one with the smallest record id (one
   that replaced or started before one that contests) is current, the others contested —
   so every store holding the same records agrees, whichever arrived first.
Text that reads as instructions to the agent is quarantined (as the write gate does); a
held record (`held`) keeps its status; records with secrets, scopes the principal may not
write or sources it may not claim are skipped and reported.

Authority (docs/security.md, "Principals and authority"): a record's `source` and
`principal` are claims a teammate (or anyone who can edit the folder) wrote, so an import
never raises them:
- a record replaces its parent only when the importing principal may claim the record's
  source and that source ranks at least as high as the parent's (a `model` record does not
  supersede what the user stated or vouched for) — inserted, matched or tombstoned alike;
- a version the user stated or vouched for *in this store* (not itself imported) is never
  superseded or forgotten by an import: a teammate's newer value arrives contested, a
  teammate's tombstone for it is reported and left for the local user;
- an imported preference arrives as a `candidate`: only the local user's `memory confirm
  --evidence user` pins it;
- applying tombstones (forget, purge) is an owner action: a principal that may not write
  every scope is refused (exit 3) before anything changes.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from agentstate.memory.bulk_reads import chains_with_rivals
from agentstate.memory.history import record_history
from agentstate.memory.model import (
    MemoryVersion,
    chain_rows,
    confidence_for,
    current_memory_version,
    key_chain_id,
    rows_with_content,
)
from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import (
    CONTESTED_FACTOR,
    add_evidence,
    add_evidence_rows,
    contest,
    initial_confidence,
    insert_version,
    set_status,
    vref,
)
from agentstate.store.principals import Principal, acting, check_whole_store
from agentstate.store.refs import make_ref
from agentstate.store.sources import authority
from agentstate.sync.arrival import (
    ACTOR,
    ImportResult,
    RecordGate,
    arrival,
    arrival_confidence,
    attachable,
    skip_record,
)
from agentstate.sync.merge_batch import NewChains
from agentstate.sync.records import Record, evidence_kind, record_over_limits
from agentstate.sync.shared import (
    mapped_record_ids,
    mapping,
    mappings_of,
    record_mapping,
)
from agentstate.sync.shared_files import Folder

if TYPE_CHECKING:
    from agentstate.store.db import Store


class _Rollback(Exception):
    """Raised at the end of a dry run so the transaction applies nothing."""


def import_folder(store: Store, folder: Folder, *, principal: Principal | str,
                  dry_run: bool = False, batch_new: bool = True) -> ImportResult:
    """`batch_new=False` takes every record through the per-record path (the reference the
    batched one is tested against: tests/sync/test_sync_batched_import.py)."""
    who = acting(store, principal)
    result = ImportResult()
    forgets, purges = folder.targets("forget"), folder.targets("purge")
    dead = forgets | purges
    if not dry_run and _applies_tombstones(store, forgets, purges):
        check_whole_store(who, "apply teammates' forget/purge tombstones (sync import)",
                          write=True)
    try:
        with store.transaction():
            # A record already mapped here costs a set look-up, no statement.
            known = mapped_record_ids(store)
            memories = [r for r in _parents_first(folder.of_type("memory"))
                        if r.id not in known]
            gate = RecordGate(who)
            evidence = folder.of_type("evidence")
            batch = NewChains(store, who, gate, evidence) if batch_new else None
            for record in memories:
                if batch is not None and record.id not in dead and batch.take(record, result):
                    continue
                if batch is not None:
                    batch.flush()  # what the per-record path reads is then all written
                if record.id not in dead:
                    _memory(store, record, who, result, gate)
                else:
                    _replaced_by_dead(store, record, who, result, gate)
                if batch is not None:
                    batch.saw(record)
            if batch is not None:
                batch.flush(last=True)
            # After every insert, so what a tombstoned record matches does not depend on
            # the order the records came in.
            for record in memories:
                if record.id in dead:
                    _dead(store, record)
            if batch is not None:  # the batch's versions were inserted with theirs
                evidence = [r for r in evidence if r.data["memory"] not in batch.inserted]
            _evidence(store, evidence, who, batch_new)
            _tombstones(store, forgets, purges, who, result, dry_run)
            # A chain with at most one current version, none contested, has nothing to
            # settle (most chains of a first import: one new value each).
            for chain in sorted(chains_with_rivals(store, result.touched)):
                _settle(store, chain, result)
            if dry_run:
                raise _Rollback
    except _Rollback:
        pass
    if result.purged and not dry_run:
        from agentstate.memory.forget import compact_after_purge

        compact_after_purge(store)
    return result


def _parents_first(records: list[Record]) -> list[Record]:
    """Records in an order that depends only on the set: a parent before its children,
    otherwise by id."""
    by_id = {r.id: r for r in records}
    children: dict[str, list[str]] = {}
    ready: list[str] = []
    for record in records:
        parent = record.data["parent"]
        if parent in by_id and parent != record.id:
            children.setdefault(parent, []).append(record.id)
        else:
            ready.append(record.id)
    heapq.heapify(ready)
    ordered: list[Record] = []
    while ready:
        current = heapq.heappop(ready)
        ordered.append(by_id[current])
        for child in children.pop(current, []):
            heapq.heappush(ready, child)
    # Ids derive from content, so a cycle of parents cannot be written by agentstate; one
    # made by hand is imported as chain starts rather than dropped silently.
    ordered += [by_id[i] for ids in children.values() for i in sorted(ids)]
    return ordered


def _match(store: Store, data: dict[str, Any]) -> MemoryVersion | None:
    """A version here with the record's content and the same key (a purged one has no
    content left). The key must be equal, not merely compatible: a keyless record matching
    a keyed version (or the reverse) would make the result depend on which came first."""
    for row in rows_with_content(store, data["text"], data["scope"], data["kind"]):
        if not row.purged and row.key == data["key"]:
            return row
    return None


def _version_row(store: Store, found: Any) -> MemoryVersion | None:
    """The version a mapping names (None if it is gone)."""
    return next((r for r in chain_rows(store, found.memory) if r.version == found.version),
                None)


def _replaced_by_dead(store: Store, record: Record, who: Principal,
                      result: ImportResult, gate: RecordGate) -> None:
    """A tombstoned record still replaced its parent: where the teammate wrote it, the
    parent was superseded before the new value was forgotten. Without this the parent
    would be current or not depending on whether the tombstone came in the same pull.
    It is checked as an inserted record would be (secrets, scope, source): a record that
    is never inserted must not get to replace anything unchecked."""
    if gate.refusal(record) is None:
        _replace_parent(store, record, who, result, "since forgotten")


def user_stated_here(store: Store, row: MemoryVersion) -> bool:
    """Stated or vouched for by the user in this store (not a version an import wrote)."""
    if row.principal.startswith(f"{ACTOR}:"):
        return False
    return row.source == "user" or _vouched(store, row)


def _vouched(store: Store, row: MemoryVersion) -> bool:
    from agentstate.memory.model import vouched_by_user

    return vouched_by_user(store, row.row)


def _rank(store: Store, row: MemoryVersion) -> int:
    """A version's authority: its source's, or the user's when the user vouched for it."""
    return authority("user") if _vouched(store, row) else authority(row.source)


def _replace_parent(store: Store, record: Record, who: Principal, result: ImportResult,
                    note: str = "") -> None:
    """A record that says it replaced its parent supersedes the parent here (current or
    contested), however it arrived: inserted, matched with a version here, or tombstoned."""
    data = record.data
    parent = mapping(store, data["parent"]) if data["rel"] == "supersedes" else None
    row = _version_row(store, parent) if parent is not None else None
    if row is None or row.status not in (MemoryStatus.ACTIVE, MemoryStatus.CONTESTED):
        return
    # Never above the record's own authority, never over the local user's word.
    if authority(data["source"]) < _rank(store, row) or user_stated_here(store, row):
        return
    why = (f"superseded by a teammate's newer value (record {record.id[:12]}"
           + (f", {note})" if note else ")"))
    set_status(store, row, MemoryStatus.SUPERSEDED, why)
    result.touched.add(row.id)
    record_history(store, row.id, row.version, "superseded", ACTOR, why, None,
                   record=record.id)


def _dead(store: Store, record: Record) -> None:
    """A tombstoned record is never inserted; a version here with the same content is
    matched with it, so the tombstone reaches it too (a fact forgotten by anyone stays
    gone here)."""
    if mapping(store, record.id) is not None:
        return
    same = _match(store, record.data)
    if same is not None:
        record_mapping(store, record.id, same.id, same.version, "match",
                       record.data["rel"])


def _memory(store: Store, record: Record, who: Principal, result: ImportResult,
            gate: RecordGate) -> None:
    data = record.data
    if mapping(store, record.id) is not None:
        return
    refused = record_over_limits(data, store.settings.memory.max_chars) \
        or gate.refusal(record)
    if refused:
        skip_record(result, record, refused)
        return
    same = _match(store, data)
    parent = mapping(store, data["parent"]) if data["parent"] else None
    if same is not None:
        record_mapping(store, record.id, same.id, same.version, "match", data["rel"])
        result.imported.append(vref(same))
        result.touched.add(same.id)
        _replace_parent(store, record, who, result)
        return
    chain_id = parent.memory if parent else (
        key_chain_id(store, data["key"], data["scope"]) if data["key"] else None)
    rows = chain_rows(store, chain_id) if chain_id else []
    status, reason = arrival(record)
    cur = current_memory_version(rows, store.now()) if rows else None
    live = cur if cur is not None and cur.status == MemoryStatus.ACTIVE else None
    memory_id = chain_id or store.new_id()
    version = rows[-1].version + 1 if rows else 1
    supersedes = parent.version if parent else (live.version if live else None)
    row_id = insert_version(
        store, memory_id=memory_id, version=version, kind=data["kind"], key=data["key"],
        scope=data["scope"], text=data["text"], source=data["source"],
        status=status,
        confidence=arrival_confidence(data["source"], status),
        valid_until=data["valid_until"], supersedes=supersedes,
        principal=f"{ACTOR}:{data['principal']}", reason=reason, evidence=[],
        scanned=True, line_ids=False)  # the gate scanned the record's fields before this
    record_mapping(store, record.id, memory_id, version, "import", data["rel"])
    new_ref = make_ref("mem", memory_id, version)
    result.touched.add(memory_id)
    result.imported.append(new_ref)
    op = "import"
    if status == "active":
        # A newer value of a version here replaces it; beside any other current value it
        # is contested, never an overwrite (_settle then ranks rival imports).
        _replace_parent(store, record, who, result)
        rows = chain_rows(store, memory_id)
        new_row = next(r for r in rows if r.row == row_id)
        live = next((r for r in reversed(rows)
                     if r.status == MemoryStatus.ACTIVE and r.row != row_id), None)
        if live is not None:
            contest(store, new_row, live, ACTOR,
                    f"contests {vref(live)}: a teammate's value for the same fact, by sync; "
                    "the current value stays (confirm this one or forget it to settle)")
            result.contested.append(new_ref)
            op = "contest"
    record_history(store, memory_id, version, op, who.name, reason, data["text"],
                   record=record.id, scope=data["scope"], source=data["source"])


def _evidence(store: Store, records: list[Record], who: Principal, batch: bool) -> None:
    """Evidence refs of records mapped here, added where they are missing (read in bulk:
    every pull reads them all; written in two statements with `batch`)."""
    from agentstate.memory.bulk_reads import evidence_refs_by_row, version_rows
    from agentstate.sync.shared import mapped_versions

    if not records:
        return
    maps = mapped_versions(store)
    rows = version_rows(store)  # (memory, version) → (row, purged)
    have = {(row, ref) for row, refs in evidence_refs_by_row(store).items() for ref in refs}
    claims_user = who.can_claim("user")
    items: list[tuple[int, str, str]] = []
    for record in records:
        data = record.data
        row, purged = rows.get(maps.get(data["memory"], _UNMAPPED), _GONE)
        if purged or (row, data["ref"]) in have:
            continue
        kind = evidence_kind(data["ref"])
        if not attachable(kind, claims_user):
            continue
        items.append((row, data["ref"], kind))
        have.add((row, data["ref"]))
    if batch:
        add_evidence_rows(store, items, ACTOR)
    else:  # the per-record reference (tests/sync/test_sync_batched_import.py)
        for row_id, ref, kind in items:
            add_evidence(store, row_id, [(ref, kind)], ACTOR, line_ids=False)


_GONE = (0, True)  # a record not mapped here, or mapped to a version since deleted
_UNMAPPED = ("", 0)  # no version's (memory, version)


def _tombstones(store: Store, forgets: set[str], purges: set[str], who: Principal,
                result: ImportResult, dry_run: bool) -> None:
    from agentstate.memory.forget import forget

    for target in sorted(forgets | purges):
        found = mapping(store, target)
        if found is None:
            result.pending_tombstones += 1
            continue
        row = _version_row(store, found)
        purge = target in purges
        if row is None or row.purged or (not purge and row.status == MemoryStatus.FORGOTTEN):
            continue
        ref = make_ref("mem", found.memory, found.version)
        if user_stated_here(store, row):
            result.skipped.append({"record": target, "where": "tombstones.jsonl",
                                   "reason": f"{ref} was stated by the user here: a "
                                   "teammate's tombstone does not forget it (run `agentstate "
                                   "forget` yourself)"})
            continue
        why = f"{'purged' if purge else 'forgotten'} by a teammate (shared tombstone " \
              f"{target[:12]})"
        if dry_run:
            result.tombstoned.append(ref)
            if purge:
                result.purged.append(ref)
            continue
        forget(store, ref, reason=why, purge=purge, principal=who.name, compact=False)
        result.tombstoned.append(ref)
        if purge:
            result.purged.append(ref)
        result.touched.add(found.memory)


def _applies_tombstones(store: Store, forgets: set[str], purges: set[str]) -> bool:
    """Would this import forget or purge anything here? (a tombstone naming a record mapped
    to a version that is not already gone)"""
    for target in forgets | purges:
        found = mapping(store, target)
        row = _version_row(store, found) if found is not None else None
        if row is None or row.purged:
            continue
        if target in purges or row.status != MemoryStatus.FORGOTTEN:
            return True
    return False


def _settle(store: Store, memory_id: str, result: ImportResult) -> None:
    """Which imported value of a chain this import changed is current, as a function of the
    chain alone (so not of the order records arrived in): a current value written here
    stays current, imported rivals beside it contested; otherwise the imported value with
    the smallest record id (one that replaced or started, before one that contests) is
    current and the other imported ones are contested."""
    rows = [r for r in chain_rows(store, memory_id)
            if r.status in (MemoryStatus.ACTIVE, MemoryStatus.CONTESTED)]
    imported = {}
    for row in rows:
        maps = mappings_of(store, row.id, row.version)
        if any(m.origin == "import" for m in maps):
            # Ranked by the best of the records that name it: which of several records
            # with the same content arrived first must not matter.
            imported[row.row] = min((m.rel == "contests", m.record_id) for m in maps)
    if not imported:
        return
    local_live = any(r.status == MemoryStatus.ACTIVE and r.row not in imported
                     for r in rows)
    winner = None if local_live else min(imported, key=lambda key: imported[key])
    for row in rows:
        if row.row not in imported:
            continue
        if row.row == winner and row.status != MemoryStatus.ACTIVE:
            set_status(store, row, MemoryStatus.ACTIVE, "current: the first of rival values from "
                       "teammates by record id", initial_confidence(row.source, 1))
            record_history(store, row.id, row.version, "promote", ACTOR,
                           "current among rival values from teammates", None)
        elif row.row != winner and row.status == MemoryStatus.ACTIVE:
            set_status(store, row, MemoryStatus.CONTESTED,
                       "contested: a rival value from a teammate",
                       confidence_for(row.source) * CONTESTED_FACTOR)
            record_history(store, row.id, row.version, "contested", ACTOR,
                           "a rival value from a teammate is current", None)
            result.contested.append(vref(row))
