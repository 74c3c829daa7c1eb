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
from hashlib import sha256
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.lazy_re import LazyPattern
from agentstate.memory.bulk_reads import SharedFields, all_shared_fields, evidence_refs_by_row
from agentstate.memory.scanned import mark_rows_scanned, scanner_mark
from agentstate.memory.status import MemoryStatus
from agentstate.safety import find_secrets
from agentstate.store.collector import without_collector
from agentstate.store.refs import make_ref
from agentstate.sync.export_first import FirstExport, first_export
from agentstate.sync.records import (
    FILES,
    FORMAT,
    HELD,
    ID_LENGTH,
    Record,
    make_record,
    memory_record,
    shareable_scope,
)
from agentstate.sync.shared import mapped_ids, record_exported
from agentstate.sync.shared_files import Folder, file_digest, line_id, read_folder, write_ordered
from agentstate.sync.spelled import (
    after_memory,
    evidence_line,
    memory_line,
    spelled_rows,
    with_parent,
)

if TYPE_CHECKING:
    from agentstate.store.db import Store

EXPORTED = (MemoryStatus.ACTIVE, MemoryStatus.CONTESTED, MemoryStatus.SUPERSEDED)


# One line to write: (record type, id, line, body: its canonical JSON without the id, what
# its record's data is made from: `_data`). A tuple, not a Record: a first export makes two
# a version (issue 24), and only an import that follows reads them as records.
Line = tuple[str, str, str, str, Any]


@dataclass
class ExportPlan:
    new: list[Line] = field(default_factory=list)
    mappings: list[tuple[str, str, int]] = field(default_factory=list)  # record, mem, version
    # (row, text, key, scope, source) of the versions whose lines were scanned here
    scanned: list[tuple[int, str, str | None, str, str]] = field(default_factory=list)
    dropped: set[str] = field(default_factory=set)  # record ids whose lines a purge removes
    skipped: list[dict[str, Any]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # new records by type
    written: dict[str, str] = field(default_factory=dict)  # file → sha256 of what was written
    # row → the version's fields, for the lines Python spells and the records an import reads
    fields: dict[int, SharedFields] = field(default_factory=dict)
    # A first export that SQLite spelled from the stored line ids (export_first.py): its
    # files and mappings instead of `new` and `mappings`.
    first: FirstExport | None = None

    def count(self, *types: str) -> int:
        return sum(self.counts[t] for t in types)


@dataclass
class _Seen:
    """What the plan consults for each version: the folder's records and evidence, the
    versions' record ids, the mark of a version whose fields this scanner passed."""

    present: set[str]  # record ids in the folder or planned
    cited: set[tuple[str, str]]  # (memory record, ref) of the evidence lines there
    ids: dict[tuple[str, int], str]  # (memory, version) → its record id
    mark: str


def plan_export(store: Store, folder: Folder, *, include_candidates: bool = False,
                include_quarantined: bool = False) -> ExportPlan:
    """What an export would add to (and, for purges, remove from) `folder`."""
    plan = ExportPlan(fields=_Fields(store))
    statuses = set(EXPORTED)
    if include_candidates:
        statuses.add(MemoryStatus.CANDIDATE)
    if include_quarantined:
        statuses.add(MemoryStatus.QUARANTINED)
    if not any(folder.lines.values()):  # nothing there: perhaps a first export SQLite spells
        plan.first = first_export(store, statuses, _clean_evidence)
        if plan.first is not None:
            plan.counts.update(plan.first.counts)
            return plan
    known = mapped_ids(store)  # (memory, version) → record ids
    # A known version's evidence is looked up by (memory record, ref) without building its
    # record (ids derive from content, so the pair names the line). Versions whose fields
    # the scanner already passed (the write gate, an import) carry its mark: their lines
    # hold nothing else a person wrote, so they are not scanned again.
    seen = _Seen(set(folder.records),
                 {(r.data["memory"], r.data["ref"]) for r in folder.records.values()
                  if r.data["type"] == "evidence"},
                 {k: min(v) for k, v in known.items()}, scanner_mark())
    # Records a teammate forgot or purged: nothing more is written about them, not even an
    # evidence line, before the import (which runs after the export) applies the tombstone.
    dead = folder.targets("forget") | folder.targets("purge")
    # A first export reads a row and plans a line or two a version, tuples that hold no
    # cycle: the collector's passes over them freed nothing (store/collector.py).
    without_collector(lambda: _plan_versions(plan, seen, known, statuses, dead,
                                             evidence_refs_by_row(store),
                                             spelled_rows(store, mapped=bool(known))))
    plan.counts.update(map(_KIND_OF, plan.new))
    plan.dropped |= folder.targets("purge")
    return plan


def _plan_versions(plan: ExportPlan, seen: _Seen, known: dict[tuple[str, int], set[str]],
                   statuses: set[MemoryStatus], dead: set[str],
                   evidence: dict[int, list[str]], rows: list[tuple[Any, ...]]) -> None:
    """Plan each version's lines (and tombstones) in the versions' order, a parent before
    its children. rows: spelled.HEAD, the spelled body, the scanner's mark: plain tuples
    unpacked in one loop (a first export does this for every version, issue 24)."""
    ids, present, mark, fields = seen.ids, seen.present, seen.mark, plan.fields
    new, mappings = plan.new, plan.mappings
    forgotten, contested = MemoryStatus.FORGOTTEN, MemoryStatus.CONTESTED
    for row, memory, version, scope, supersedes, status, purged, body, marked in rows:
        if not (scope == "repo" or shareable_scope(scope)):
            continue
        key = (memory, version)
        if purged or status == forgotten:
            _tombstones(plan, known.get(key, ()), bool(purged), present)
            continue
        if status not in statuses:
            continue
        record_id = ids.get(key)
        if record_id is not None:  # shared already (written here or read from a teammate)
            if not known[key] & dead and row in evidence:
                _add_evidence(plan, memory, record_id, evidence[row], seen, seen.cited)
            continue
        if body is not None and marked == mark:
            # SQLite spelled it, the scanner passed it: the line of a version new here, its
            # parent's record id spliced in. Inline, not a call a version: a first export
            # does this for each of its thousands (issue 24).
            parent = rel = None
            if supersedes and (parent := ids.get((memory, supersedes))) is not None:
                rel = "contests" if status == contested else "supersedes"
                body = with_parent(body, parent, rel)
            record_id, line = memory_line(body)
            ids[key] = record_id
            mappings.append((record_id, memory, version))
            if record_id not in present:
                present.add(record_id)
                new.append(("memory", record_id, line, body, (row, parent, rel, status)))
            if row in evidence:
                _new_evidence(plan, memory, record_id, evidence[row], present)
            continue
        record = _general_record(plan, fields[row], ids, scan=marked != mark)
        if record is not None:
            ids[key] = record.id
            mappings.append((record.id, memory, version))
            _add(plan, ("memory", record.id, record.line, record.body, record), present)
            if row in evidence:
                _add_evidence(plan, memory, record.id, evidence[row], seen, None)


def _new_evidence(plan: ExportPlan, memory: str, record_id: str, refs: Iterable[str],
                  present: set[str]) -> None:
    """The evidence lines of a version new here whose body SQLite spelled, spelled as
    `evidence_line` spells them (a record id is hex digits, nothing to quote; tests compare
    the two), each body built once for its hash and its planned line."""
    new = plan.new
    for ref in refs:
        body = f'{{"memory":"{record_id}"{after_memory(ref)}'
        item_id = sha256(body.encode()).hexdigest()[:ID_LENGTH]
        if item_id in present:
            continue
        line = f'{{"id":"{item_id}",{body[1:]}'
        if ref == "user" or _generated(ref) or _clean(
                plan, line, f"evidence {ref} of {make_ref('mem', memory)}"):
            present.add(item_id)
            new.append(("evidence", item_id, line, body, (record_id, ref)))


class _Fields(dict[int, SharedFields]):
    """row → its SharedFields, every version read at the first ask: only a line Python
    spells, a scan, and the records an import reads need them; a first export of lines
    SQLite spelled never asks."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store: Store | None = store

    def __missing__(self, row: int) -> SharedFields:
        if self.store is None:
            raise KeyError(row)
        self.update((f.row, f) for f in all_shared_fields(self.store))
        self.store = None
        return self[row]


def _tombstones(plan: ExportPlan, targets: Iterable[str], purged: bool, present: set[str]
                ) -> None:
    kind = "purge" if purged else "forget"
    for target in sorted(targets):
        record = make_record(kind, target=target)
        _add(plan, (kind, record.id, record.line, record.body, record), present)
        if purged:
            plan.dropped.add(target)


def _general_record(plan: ExportPlan, row: SharedFields, ids: dict[tuple[str, int], str], *,
                    scan: bool) -> Record | None:
    """A version's memory record spelled by Python, scanned first when the scanner has not
    passed its fields (None: a secret)."""
    record = _memory_record(row, ids)
    if scan:
        if not _clean(plan, record.line, make_ref("mem", row.id, row.version)):
            return None
        plan.scanned.append((row.row, row.text, row.key, row.scope, row.source))
    return record


def _add_evidence(plan: ExportPlan, memory: str, record_id: str, refs: Iterable[str],
                  seen: _Seen, cited: set[tuple[str, str]] | None) -> None:
    """The evidence lines of one shared version that the folder lacks. `cited`: the pairs
    whose line is there, to skip hashing a known version's lines; None for a version new
    here, whose lines, if there, are found by their ids in `present` (a first export asks
    once for each of its thousands)."""
    present = seen.present
    for ref in refs:
        if cited is not None and (record_id, ref) in cited:
            continue
        item_id, line, body = evidence_line(record_id, ref)
        if item_id not in present and (_generated(ref) or _clean(
                plan, line, f"evidence {ref} of {make_ref('mem', memory)}")):
            present.add(item_id)
            plan.new.append(("evidence", item_id, line, body, (record_id, ref)))
            if cited is not None:
                cited.add((record_id, ref))


def _add(plan: ExportPlan, line: Line, present: set[str]) -> None:
    record_id = line[1]
    if record_id not in present:
        present.add(record_id)
        plan.new.append(line)


# An evidence ref that is a fixed word or an id agentstate made: its line holds nothing
# else a person wrote (the record ids are hashes), so it has nothing to scan. Half of a
# first export's lines are such evidence; `file:PATH@COMMIT` refs are scanned.
_GENERATED_REF = LazyPattern(r"user|evt:[0-9a-z]{4,32}")


def _generated(ref: str) -> bool:
    # `user`, the commonest ref, without the pattern's call.
    return ref == "user" or _GENERATED_REF.fullmatch(ref) is not None


def _clean_evidence(line: str, ref: str) -> bool:
    """Whether a new version's evidence line may be written, as `_new_evidence` decides."""
    return _generated(ref) or not find_secrets(line)


def _clean(plan: ExportPlan, line: str, what: str) -> bool:
    """The secret scanner on the exact line to be written; a hit is skipped and reported."""
    found = find_secrets(line)
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


_KIND_OF, _ID_OF = itemgetter(0), itemgetter(1)  # a planned line's record type, id


def write_export(store: Store, folder: Folder, plan: ExportPlan) -> list[str]:
    """Write the planned lines (files changed only when they change); record the new
    mappings. → the file names written."""
    # Sorted pairs and joined files of every planned line, no cycle among them (as the plan).
    return without_collector(lambda: _write_export(store, folder, plan))


def _write_export(store: Store, folder: Folder, plan: ExportPlan) -> list[str]:
    if plan.first is not None:
        return _write_first(store, folder, plan, plan.first)
    written = []
    gone = set(removed_lines(folder, plan.dropped))
    by_file: dict[str, list[Line]] = {}
    for line in plan.new:
        by_file.setdefault(FILES[line[0]], []).append(line)
    for name in sorted(set(FILES.values())):
        old = folder.lines.get(name, [])
        kept = [t for t in old if t not in gone] if gone else old
        added = by_file.get(name, [])
        if not added and len(kept) == len(old):
            continue
        # Sorted by id then text, as write_lines sorts: the new lines' ids are known, only
        # the kept ones are searched for theirs. Duplicates, as there: a kept line twice (a
        # merge's) is one; a new line has an id no other line has (`present`).
        if kept:
            pairs = [(line_id(t), t) for t in dict.fromkeys(kept)]
            pairs += [(record_id, text) for _, record_id, text, _, _ in added]
            ordered = [text for _, text in sorted(pairs)]
        else:  # new lines alone (a first export): their ids differ, so the id orders them
            ordered = [line[2] for line in sorted(added, key=_ID_OF)]
        digest = write_ordered(Path(folder.path) / name, ordered)
        if digest is not None:
            plan.written[name] = digest
        written.append(name)
    with store.transaction():
        record_exported(store, plan.mappings)
        mark_rows_scanned(store, plan.scanned)
    return written


def _write_first(store: Store, folder: Folder, plan: ExportPlan, first: FirstExport
                 ) -> list[str]:
    """A first export SQLite spelled: its files as they are, every version mapped by one
    statement."""
    for name, lines in sorted(first.ordered.items()):
        digest = write_ordered(Path(folder.path) / name, lines)
        if digest is not None:
            plan.written[name] = digest
    with store.transaction():
        first.record(store)
    return sorted(first.ordered)


def written_digests(path: Path, names: list[str], known: dict[str, str] | None = None
                    ) -> dict[str, str]:
    """The digests of the files an export just wrote (read_folder's `checked`); `known`:
    those taken as they were written (`ExportPlan.written`), the others read back."""
    known = known or {}
    digests = {name: known.get(name) or file_digest(path / name) for name in names}
    return {name: digest for name, digest in digests.items() if digest is not None}


def updated(folder: Folder, plan: ExportPlan) -> Folder:
    """The folder as the export left it, without reading it back (but for a first export
    SQLite spelled: its records are made only by reading what it wrote)."""
    if plan.first is not None:
        return read_folder(Path(folder.path), checked=plan.written)
    gone = set(removed_lines(folder, plan.dropped))
    fresh = Folder(folder.path)
    fresh.records = {k: r for k, r in folder.records.items() if r.line not in gone
                     } if gone else dict(folder.records)
    fresh.lines = {name: [t for t in lines if t not in gone] if gone else list(lines)
                   for name, lines in folder.lines.items()}
    for kind, record_id, line, body, made in plan.new:
        if record_id not in fresh.records:  # the import reads a record: made only for it
            fresh.records[record_id] = Record(_data(kind, record_id, made, plan.fields),
                                              line, "", body)
        fresh.lines.setdefault(FILES[kind], []).append(line)
    return fresh


def _data(kind: str, record_id: str, made: Any, fields: dict[int, SharedFields]
          ) -> dict[str, Any]:
    """A planned line's record data, as parsing the line would give it: from its Record, its
    evidence pair, or its version's row (`fields`) with the parent and rel."""
    if isinstance(made, Record):
        return made.data
    if kind == "evidence":
        return {"v": FORMAT, "type": "evidence", "memory": made[0], "ref": made[1],
                "id": record_id}
    # The status the line was spelled from (`held`), not the row's now; the other fields of
    # a version do not change.
    row, parent, rel, status = made
    f = fields[row]
    return {"v": FORMAT, "type": "memory", "kind": f.kind, "key": f.key, "scope": f.scope,
            "text": f.text, "source": f.source, "principal": f.principal,
            "created": f.created, "valid_until": f.valid_until, "parent": parent, "rel": rel,
            "held": status if status in HELD else None, "id": record_id}


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
