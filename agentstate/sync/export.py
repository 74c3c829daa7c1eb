"""Export: the shareable part of the store, as new lines in the shared folder.

What is written: memory versions of shareable scopes (repo, branch:, path:) that are
current, contested or superseded (the chains), candidates and quarantined versions only when
asked, their evidence refs, and a tombstone for every shared record whose version is
forgotten (`forget`) or purged (`purge`) here. Never: `user` or `run:` scopes, event bodies,
history, principals' config, or the text of anything forgotten.

Lines already in a file are kept byte for byte; new ones are inserted in id order. The one
exception is a purge: the lines of a purged record (its memory line and its evidence) are
removed, since the point of a purge is that the text leaves the work tree (git history keeps
old commits: the result says so). Every new line passes the secret scanner first; a line
that trips it is not written and is reported.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.lazy_re import LazyPattern
from agentstate.memory.model import SharedFields, all_shared_fields, evidence_refs_by_row
from agentstate.memory.scanned import digester, mark_scanned, scanned_digests
from agentstate.memory.status import MemoryStatus
from agentstate.safety import find_secrets
from agentstate.store.refs import make_ref
from agentstate.sync.records import (
    FILES,
    Folder,
    Record,
    evidence_record,
    file_digest,
    line_id,
    make_record,
    memory_record,
    shareable_scope,
    write_lines,
)
from agentstate.sync.shared import mapped_ids, record_mappings

if TYPE_CHECKING:
    from agentstate.store.db import Store

EXPORTED = (MemoryStatus.ACTIVE, MemoryStatus.CONTESTED, MemoryStatus.SUPERSEDED)


@dataclass
class ExportPlan:
    new: list[Record] = field(default_factory=list)
    mappings: list[tuple[str, str, int]] = field(default_factory=list)  # record, mem, version
    scanned: list[str] = field(default_factory=list)  # digests of versions scanned here
    dropped: set[str] = field(default_factory=set)  # record ids whose lines a purge removes
    skipped: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # new records by type

    def count(self, *types: str) -> int:
        return sum(self.counts[t] for t in types)


def plan_export(store: Store, folder: Folder, *, include_candidates: bool = False,
                include_quarantined: bool = False) -> ExportPlan:
    """What an export would add to (and, for purges, remove from) `folder`."""
    plan = ExportPlan()
    known = mapped_ids(store)  # (memory, version) → record ids
    statuses = set(EXPORTED)
    if include_candidates:
        statuses.add(MemoryStatus.CANDIDATE)
    if include_quarantined:
        statuses.add(MemoryStatus.QUARANTINED)
    present = set(folder.records)
    # (memory record, ref) of the evidence lines there: a known version's evidence is looked
    # up without building its record (ids derive from content, so the pair names the line).
    cited = {(r.data["memory"], r.data["ref"]) for r in folder.records.values()
             if r.data["type"] == "evidence"}
    ids: dict[tuple[str, int], str] = {k: min(v) for k, v in known.items()}
    evidence = evidence_refs_by_row(store)
    # Versions whose fields the scanner already passed (the write gate, an import): their
    # lines hold nothing else a person wrote, so they are not scanned again.
    known_clean, digest = scanned_digests(store), digester(store)
    # Records a teammate forgot or purged: nothing more is written about them, not even an
    # evidence line, before the import (which runs after the export) applies the tombstone.
    dead = folder.targets("forget") | folder.targets("purge")
    for row in all_shared_fields(store):
        key = (row.id, row.version)
        if not shareable_scope(row.scope):
            continue
        if row.purged or row.status == MemoryStatus.FORGOTTEN:
            kind = "purge" if row.purged else "forget"
            for target in sorted(known.get(key, ())):
                _add(plan, make_record(kind, target=target), present)
                if kind == "purge":
                    plan.dropped.add(target)
            continue
        if row.status not in statuses:
            continue
        if key in ids:  # already shared (written here or read from a teammate)
            record_id = ids[key]
            if known.get(key, set()) & dead:
                continue
        else:
            record = _memory_record(row, ids)
            fields = digest(row.text, row.key, row.scope, row.source)
            if fields not in known_clean:
                if not _clean(plan, record, make_ref("mem", row.id, row.version)):
                    continue
                plan.scanned.append(fields)
            record_id = record.id
            ids[key] = record_id
            plan.mappings.append((record_id, row.id, row.version))
            _add(plan, record, present)
        _add_evidence(plan, row, record_id, evidence.get(row.row, ()), cited, present)
    plan.dropped |= folder.targets("purge")
    return plan


def _add_evidence(plan: ExportPlan, row: SharedFields, record_id: str, refs: Iterable[str],
                  cited: set[tuple[str, str]], present: set[str]) -> None:
    """The evidence lines of one shared version that the folder lacks."""
    for ref in refs:
        if (record_id, ref) in cited:
            continue
        item = evidence_record(record_id, ref)
        if item.id not in present and (_generated(ref) or _clean(
                plan, item, f"evidence {ref} of {make_ref('mem', row.id)}")):
            _add(plan, item, present)
            cited.add((record_id, ref))


def _add(plan: ExportPlan, record: Record, present: set[str]) -> None:
    record_id = record.id
    if record_id not in present:
        present.add(record_id)
        plan.new.append(record)
        plan.counts[record.type] += 1


# An evidence ref that is a fixed word or an id agentstate made: its line holds nothing
# else a person wrote (the record ids are hashes), so it has nothing to scan. Half of a
# first export's lines are such evidence; `file:PATH@COMMIT` refs are scanned.
_GENERATED_REF = LazyPattern(r"user|evt:[0-9a-z]{4,32}")


def _generated(ref: str) -> bool:
    # `user`, the commonest ref, without the pattern's call.
    return ref == "user" or _GENERATED_REF.fullmatch(ref) is not None


def _clean(plan: ExportPlan, record: Record, what: str) -> bool:
    """The secret scanner on the exact line to be written; a hit is skipped and reported."""
    found = find_secrets(record.line)
    if found:
        kinds = sorted({f.kind for f in found})
        plan.skipped.append({"what": what, "reason": "looks like it contains a secret ("
                             + ", ".join(kinds) + "); not written to the shared folder"})
        return False
    return True


def _memory_record(row: SharedFields, ids: dict[tuple[str, int], str]) -> Record:
    parent = ids.get((row.id, row.supersedes)) if row.supersedes else None
    rel = None
    if parent is not None:
        rel = "contests" if row.status == MemoryStatus.CONTESTED else "supersedes"
    held = row.status if row.status in (MemoryStatus.CANDIDATE,
                                        MemoryStatus.QUARANTINED) else None
    return memory_record(
        kind=row.kind, key=row.key, scope=row.scope, text=row.text, source=row.source,
        principal=row.principal, created=row.created, valid_until=row.valid_until,
        parent=parent, rel=rel, held=str(held) if held else None,
    )


def write_export(store: Store, folder: Folder, plan: ExportPlan) -> list[str]:
    """Write the planned lines (files changed only when they change); record the new
    mappings. → the file names written."""
    written = []
    gone = set(removed_lines(folder, plan.dropped))
    by_file: dict[str, list[Record]] = {}
    for record in plan.new:
        by_file.setdefault(FILES[record.type], []).append(record)
    for name in sorted(set(FILES.values())):
        old = folder.lines.get(name, [])
        kept = [t for t in old if t not in gone] if gone else old
        added = {r.line: r.id for r in by_file.get(name, [])}
        if not added and len(kept) == len(old):
            continue
        write_lines(Path(folder.path) / name, kept + list(added), added)
        written.append(name)
    with store.transaction():
        record_mappings(store, [(record_id, memory, version, "export", None)
                                for record_id, memory, version in plan.mappings])
        mark_scanned(store, plan.scanned)
    return written


def written_digests(path: Path, names: list[str]) -> dict[str, str]:
    """The digests of the files an export just wrote (read_folder's `checked`)."""
    digests = {name: file_digest(path / name) for name in names}
    return {name: digest for name, digest in digests.items() if digest is not None}


def updated(folder: Folder, plan: ExportPlan) -> Folder:
    """The folder as the export left it, without reading it back."""
    gone = set(removed_lines(folder, plan.dropped))
    fresh = Folder(folder.path)
    fresh.records = {k: r for k, r in folder.records.items() if r.line not in gone
                     } if gone else dict(folder.records)
    fresh.lines = {name: [t for t in lines if t not in gone] if gone else list(lines)
                   for name, lines in folder.lines.items()}
    for record in plan.new:
        fresh.records.setdefault(record.id, record)
        fresh.lines.setdefault(FILES[record.type], []).append(record.line)
    return fresh


def removed_lines(folder: Folder, dropped: set[str]) -> list[str]:
    """The lines a purge takes out: the purged records' own lines and their evidence."""
    if not dropped:
        return []
    return [t for lines in folder.lines.values() for t in lines
            if line_id(t) in dropped or _cites(t, dropped)]


_CITED = re.compile(r'"memory":"([0-9a-f]{32})"')


def _cites(line: str, dropped: set[str]) -> bool:
    """An evidence line of a purged record goes with it."""
    match = _CITED.search(line) if dropped else None
    return bool(match and match.group(1) in dropped)
