"""Version chains: inserting versions, evidence, the authority rule, and the dedupe refresh.

User corrections and confirmation build on these in `agentstate.memory.corrections`.

The authority rule (documented in docs/memory.md), applied when a value for a
key+scope differs from the current one:
- a user correction (source `user`) always becomes current; the old version is superseded;
- otherwise, if the new source has at least the old one's authority (user > file/tool/event
  evidence > model) AND the old version has no more independent evidence than the new one,
  the new version becomes current and the old one is superseded;
- otherwise the new version is `contested` with lowered confidence, the old one stays
  current (its confidence lowered a little too), and recall shows the contested one flagged
  beside it until `memory confirm` (it wins) or `forget` (it is rejected).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.memory.history import record_history
from agentstate.memory.model import (
    Memory,
    MemoryVersion,
    chain_rows,
    confidence_for,
    current_memory_version,
    get_memory,
    norm_hash,
)
from agentstate.memory.shared_line import evidence_line_id, parent_line_id, plain_line_id
from agentstate.memory.status import CURRENT_STATUSES, MemoryStatus, ShownStatus
from agentstate.store.refs import make_ref
from agentstate.store.sources import authority

if TYPE_CHECKING:
    from agentstate.store.db import Store

CONTESTED_FACTOR = 0.5  # a contested version's confidence
CURRENT_CONTEST_FACTOR = 0.85  # the current version loses a little when contradicted
EVIDENCE_BONUS = 0.05
MAX_CONFIDENCE = 0.99


@dataclass
class WriteResult:
    """What a write-gate decision did. `action` is one of: stored, candidate, quarantined,
    deduplicated, superseded (new version current, old superseded), contested, corrected,
    confirmed."""

    action: str
    ref: str
    status: ShownStatus
    reason: str
    memory: Memory | None = None
    replaced: str | None = None  # the version this one superseded
    contests: str | None = None  # the current version this one contests
    evidence_added: list[str] = field(default_factory=list)
    possible_duplicates: list[dict[str, Any]] = field(default_factory=list)


def bounded(value: float) -> float:
    return round(max(0.01, min(MAX_CONFIDENCE, value)), 6)  # shown rounded to 3


def initial_confidence(source: str, evidence_count: int) -> float:
    return bounded(confidence_for(source) + EVIDENCE_BONUS * max(0, evidence_count - 1))


def insert_version(store: Store, *, memory_id: str, version: int, kind: str, key: str | None,
                   scope: str, text: str, source: str, status: MemoryStatus, confidence: float,
                   valid_until: str | None, supersedes: int | None, principal: str,
                   reason: str, evidence: list[tuple[str, str]], scanned: bool = False,
                   line_ids: bool = True) -> int:
    """Store one version. `scanned`: the secret scanner passed its text, key, scope and
    source (the write gate, an import): the row carries the scanner's mark, so an export
    need not scan them again (memory/scanned.py). `line_ids`: keep its shared-line id and
    its evidence rows' (memory/shared_line.py); an import does not, as its batches do not
    (its versions are mapped to their records, and only a first export reads the ids)."""
    from agentstate.memory.scanned import scanner_mark

    now = store.now()
    line_id = _line_id(store, memory_id, version, supersedes, kind=kind, key=key,
                       scope=scope, text=text, source=source, principal=principal,
                       created=now, valid_until=valid_until) if line_ids else None
    cursor = store.conn.execute(
        "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, status,"
        " confidence, valid_until, created, last_confirmed, evidence_count, supersedes,"
        " principal, status_reason, scanned_with, line_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, version, kind, key, scope, text, norm_hash(text), source, status,
         bounded(confidence), valid_until, now, now, 0, supersedes, principal, reason,
         scanner_mark() if scanned else None, line_id),
    )
    row = cursor.lastrowid
    assert row is not None  # an INSERT into a rowid table always sets it
    add_evidence(store, row, evidence, principal, line_id=line_id, line_ids=line_ids)
    return row


def _line_id(store: Store, memory_id: str, version: int, supersedes: int | None,
             **fields: Any) -> str | None:
    """The version's shared-line id, kept with it so that a first export need not hash it
    (memory/shared_line.py; issue 24): ~3 µs, and a look-up of the parent's id when it has
    one."""
    stored = None
    if supersedes:
        found = store.conn.execute("SELECT line_id FROM memories WHERE id = ? AND version = ?",
                                   (memory_id, supersedes)).fetchone()
        stored = found[0] if found else None
    hashable, parent = parent_line_id(stored, supersedes, version)
    return plain_line_id(parent=parent, **fields) if hashable else None


@dataclass(slots=True)
class NewVersion:
    """One version for insert_scanned_versions (the fields insert_version takes). Not
    frozen: a frozen dataclass sets each field through object.__setattr__, ~3x the time of
    making one, and a sync import makes one a version (issue 24)."""

    memory_id: str
    version: int
    kind: str
    key: str | None
    scope: str
    text: str
    source: str
    status: MemoryStatus
    confidence: float
    valid_until: str | None
    supersedes: int | None
    principal: str
    reason: str
    norm: str = ""  # norm_hash(text) when the caller has it already, else computed here
    evidence: tuple[tuple[str, str], ...] = ()  # (ref, kind) each


def insert_scanned_versions(store: Store, versions: list[NewVersion], actor: str) -> None:
    """Many versions whose fields the secret scanner passed: the same rows as
    insert_version(..., scanned=True) for each, the evidence added by `actor`, each count
    known as the version is inserted (so none is refreshed after).

    Written through a temporary table and one INSERT ... SELECT per table, not a statement
    a row: SQLite opens a statement savepoint for each execution of an INSERT, and FTS5
    writes its pending terms out as a new segment at each one, so the memories' two
    full-text indexes (their insert trigger) made a segment a row and merged them after
    (issue 24, a sync import's batch of new chains: 14,667 versions with their triggers
    0.87 s of CPU inserted a statement each, 0.16 s staged and inserted in one; the
    indexes' contents are the same, their segments fewer)."""
    from agentstate.memory.scanned import scanner_mark

    if not versions:
        return
    conn, now, mark = store.conn, store.now(), scanner_mark()
    conn.execute(f"CREATE TEMP TABLE new_versions ({_VERSION_COLUMNS})")
    conn.execute("CREATE TEMP TABLE new_evidence (id, version, ref, kind)")
    try:
        conn.executemany(
            f"INSERT INTO temp.new_versions VALUES ({', '.join('?' * 18)})",
            [(v.memory_id, v.version, v.kind, v.key, v.scope, v.text,
              v.norm or norm_hash(v.text), v.source, v.status, bounded(v.confidence),
              v.valid_until, now, now, _distinct(v.evidence), v.supersedes, v.principal,
              v.reason, mark)
             for v in versions])
        conn.execute(f"INSERT INTO memories ({_VERSION_COLUMNS}) SELECT {_VERSION_COLUMNS} "
                     "FROM temp.new_versions ORDER BY rowid")
        conn.executemany("INSERT INTO temp.new_evidence VALUES (?, ?, ?, ?)",
                         [(v.memory_id, v.version, ref, kind)
                          for v in versions for ref, kind in v.evidence])
        # A ref given twice is one row (the first kind), as add_evidence leaves it.
        conn.execute(
            "INSERT OR IGNORE INTO memory_evidence (memory_row, ref, kind, added, actor) "
            "SELECT m.row, e.ref, e.kind, ?, ? FROM temp.new_evidence e "
            "JOIN memories m ON m.id = e.id AND m.version = e.version ORDER BY e.rowid",
            (now, actor))
    finally:
        conn.execute("DROP TABLE temp.new_versions")
        conn.execute("DROP TABLE temp.new_evidence")


_VERSION_COLUMNS = ("id, version, kind, key, scope, text, norm_hash, source, status, "
                    "confidence, valid_until, created, last_confirmed, evidence_count, "
                    "supersedes, principal, status_reason, scanned_with")


def _distinct(evidence: tuple[tuple[str, str], ...]) -> int:
    return len(evidence) if len(evidence) < 2 else len({ref for ref, _ in evidence})


def add_evidence(store: Store, row: int, evidence: list[tuple[str, str]], actor: str, *,
                 line_id: str | None = None, line_ids: bool = True) -> list[str]:
    """Attach evidence refs (ignoring ones already there); return the refs newly added.
    `line_id`: the version's shared-line id when the caller has it (None: read here), each
    row's own line id derived from it (memory/shared_line.py); none kept without
    `line_ids` (an import's, as insert_version's)."""
    added = []
    now = store.now()
    if line_id is None and evidence and line_ids:
        line_id = store.conn.execute("SELECT line_id FROM memories WHERE row = ?",
                                     (row,)).fetchone()[0]
    for ref, kind in evidence:
        cursor = store.conn.execute(
            "INSERT OR IGNORE INTO memory_evidence (memory_row, ref, kind, added, actor, "
            "line_id) VALUES (?, ?, ?, ?, ?, ?)",
            (row, ref, kind, now, actor, evidence_line_id(line_id, ref)),
        )
        if cursor.rowcount:
            added.append(ref)
    store.conn.execute(
        "UPDATE memories SET evidence_count = "
        "(SELECT count(*) FROM memory_evidence WHERE memory_row = ?) WHERE row = ?",
        (row, row),
    )
    return added


def add_evidence_rows(store: Store, items: list[tuple[int, str, str]], actor: str) -> None:
    """(version row, ref, kind) each, as add_evidence for one ref at a time would add them
    (the same rows and counts, each count refreshed after its insert), in two statements."""
    if not items:
        return
    now = store.now()
    store.conn.executemany(
        "INSERT OR IGNORE INTO memory_evidence (memory_row, ref, kind, added, actor) "
        "VALUES (?, ?, ?, ?, ?)", [(row, ref, kind, now, actor) for row, ref, kind in items])
    # One statement over the rows as a JSON array: a statement a row was twice the time of
    # this refresh on a first import (issue 24).
    store.conn.execute(
        "UPDATE memories SET evidence_count = "
        "(SELECT count(*) FROM memory_evidence WHERE memory_row = memories.row) "
        "WHERE row IN (SELECT value FROM json_each(?))",
        (json.dumps(list(dict.fromkeys(row for row, _, _ in items))),))


def set_status(store: Store, row: MemoryVersion, status: MemoryStatus, reason: str,
               confidence: float | None = None) -> None:
    store.conn.execute(
        "UPDATE memories SET status = ?, status_reason = ?, confidence = ? WHERE row = ?",
        (status, reason, bounded(confidence if confidence is not None else row.confidence),
         row.row),
    )


def vref(row: MemoryVersion) -> str:
    return make_ref("mem", row.id, row.version)


def wins_over(new_source: str, new_evidence: int, current: MemoryVersion) -> bool:
    """The authority rule for a differing value (a user source is handled by the caller)."""
    return (authority(new_source) >= authority(current.source)
            and current.evidence_count <= new_evidence)


def make_current(store: Store, new_row: MemoryVersion, rows: list[MemoryVersion], actor: str,
                 op: str, reason: str) -> list[str]:
    """`new_row` becomes the current version: every other active/contested one is superseded."""
    replaced = []
    for other in rows:
        if other.row == new_row.row or other.status not in CURRENT_STATUSES:
            continue
        set_status(store, other, MemoryStatus.SUPERSEDED, f"superseded by {vref(new_row)}")
        record_history(store, other.id, other.version, "superseded", actor,
                       f"superseded by {vref(new_row)} ({op})", None, by=vref(new_row))
        replaced.append(vref(other))
    set_status(store, new_row, MemoryStatus.ACTIVE, reason,
               max(new_row.confidence, confidence_for(new_row.source)))
    return replaced


def resolve_conflict(store: Store, new_row: MemoryVersion, current: MemoryVersion, actor: str
                     ) -> tuple[str, str, str | None, str | None]:
    """Apply the authority rule between a new (or newly evidenced) version and the current
    one. Returns (action, reason, replaced ref, contested ref)."""
    rows = chain_rows(store, new_row.id)
    new_row = next(r for r in rows if r.row == new_row.row)
    if current.valid_until and current.valid_until <= store.now():
        reason = f"replaces {vref(current)}, which expired at {current.valid_until}"
        replaced = make_current(store, new_row, rows, actor, "expired value", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    if new_row.source == "user":
        reason = f"user correction of {vref(current)}: the user's value is current"
        replaced = make_current(store, new_row, rows, actor, "user correction", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    if wins_over(new_row.source, new_row.evidence_count, current):
        reason = (f"replaces {vref(current)}: source {new_row.source} has at least the "
                  f"authority of {current.source} and the old value has no more evidence "
                  f"({current.evidence_count} ≤ {new_row.evidence_count})")
        replaced = make_current(store, new_row, rows, actor, "authority rule", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    reason = (f"contests {vref(current)}: source {new_row.source} (evidence "
              f"{new_row.evidence_count}) does not outrank {current.source} (evidence "
              f"{current.evidence_count}); the current value stays, confidence lowered")
    contest(store, new_row, current, actor, reason)
    return "contested", reason, None, vref(current)


def contest(store: Store, new_row: MemoryVersion, current: MemoryVersion, actor: str,
            reason: str) -> None:
    """`new_row` becomes a contested rival of `current`, which stays current with its
    confidence lowered a little (also used when a teammate's value arrives by sync)."""
    set_status(store, new_row, MemoryStatus.CONTESTED, reason,
               confidence_for(new_row.source) * CONTESTED_FACTOR)
    set_status(store, current, current.status, current.status_reason,
               current.confidence * CURRENT_CONTEST_FACTOR)
    record_history(store, current.id, current.version, "contested", actor,
                   f"contradicted by {vref(new_row)}; confidence lowered", None,
                   by=vref(new_row))


def refresh_duplicate(store: Store, row: MemoryVersion, refs: list[tuple[str, str]],
                      valid_until: str | None, actor: str, gate_status: str) -> WriteResult:
    """Dedupe: the same content arrived again. Add its evidence, refresh the time (and
    validity), never a second row; a candidate given evidence is promoted, and a contested
    version with more agreeing evidence goes through the authority rule again."""
    added = add_evidence(store, row.row, refs, actor)
    now = store.now()
    until = row.valid_until
    if valid_until is not None and (until is None or valid_until > until):
        until = valid_until
    elif valid_until is None and until is not None and until <= now:
        until = None  # re-stated without a ttl: the fact holds again
    store.conn.execute(
        "UPDATE memories SET last_confirmed = ?, valid_until = ?, confidence = ? WHERE row = ?",
        (now, until, bounded(row.confidence + EVIDENCE_BONUS * len(added)), row.row),
    )
    reason = (f"same content as {vref(row)} in scope {row.scope}: "
              f"{len(added)} evidence ref(s) added, time refreshed")
    action = "deduplicated"
    promoted = row.status == MemoryStatus.CANDIDATE and gate_status == "active"
    record_history(store, row.id, row.version, "dedupe", actor, reason, row.text,
                   evidence=added)
    if promoted:
        rows = chain_rows(store, row.id)
        fresh = next(r for r in rows if r.row == row.row)
        others = [r for r in rows if r.row != row.row]
        cur = current_memory_version(others, now) if others else None
        if cur is not None and cur.status in CURRENT_STATUSES:
            action, why, _, _ = resolve_conflict(store, fresh, cur, actor)
        else:
            why = "candidate promoted: the same content arrived with evidence"
            set_status(store, fresh, MemoryStatus.ACTIVE, why,
                       initial_confidence(fresh.source, fresh.evidence_count))
        record_history(store, row.id, row.version, "promote", actor, why, None)
        reason += "; " + why
    elif row.status == MemoryStatus.CONTESTED and added:
        # More agreeing evidence for a contested value: re-apply the authority rule.
        rows = chain_rows(store, row.id)
        fresh = next(r for r in rows if r.row == row.row)
        cur = next((r for r in reversed(rows) if r.status == MemoryStatus.ACTIVE), None)
        if cur is not None and wins_over(fresh.source, fresh.evidence_count, cur):
            why = (f"now has at least the evidence of {vref(cur)} "
                   f"({cur.evidence_count} ≤ {fresh.evidence_count}): it becomes current")
            make_current(store, fresh, rows, actor, "more evidence", why)
            record_history(store, row.id, row.version, "promote", actor, why, None)
            reason += "; " + why
            action = "superseded"
    memory = get_memory(store, vref(row))
    contests = None
    # Say which version it stands beside, as a new write does.
    if memory.status == MemoryStatus.CONTESTED:
        current = next((r for r in reversed(chain_rows(store, row.id))
                        if r.status == MemoryStatus.ACTIVE), None)
        contests = vref(current) if current else None
    return WriteResult(action, memory.ref, memory.status, reason, memory, evidence_added=added,
                       contests=contests)
