"""Version chains: inserting versions, the authority rule, user corrections, confirmation.

The authority rule (documented in the README, memory section), applied when a value for a
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

from dataclasses import dataclass, field
from typing import Any

from agentstate.errors import InvalidInput, Refused
from agentstate.memory.model import (
    Memory,
    chain_rows,
    confidence_for,
    current_version,
    get_memory,
    norm_hash,
    record_history,
    resolve_principal,
    validate_evidence,
)
from agentstate.safety import refuse_secrets
from agentstate.store.refs import make_ref
from agentstate.store.sources import authority

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
    status: str
    reason: str
    memory: Memory | None = None
    replaced: str | None = None  # the version this one superseded
    contests: str | None = None  # the current version this one contests
    evidence_added: list[str] = field(default_factory=list)
    possible_duplicates: list[dict] = field(default_factory=list)


def bounded(value: float) -> float:
    return round(max(0.01, min(MAX_CONFIDENCE, value)), 6)  # shown rounded to 3


def initial_confidence(source: str, evidence_count: int) -> float:
    return bounded(confidence_for(source) + EVIDENCE_BONUS * max(0, evidence_count - 1))


def insert_version(store: Any, *, memory_id: str, version: int, kind: str, key: str | None,
                   scope: str, text: str, source: str, status: str, confidence: float,
                   valid_until: str | None, supersedes: int | None, principal: str,
                   reason: str, evidence: list[tuple[str, str]]) -> int:
    now = store.now()
    cursor = store.conn.execute(
        "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, status,"
        " confidence, valid_until, created, last_confirmed, evidence_count, supersedes,"
        " principal, status_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, version, kind, key, scope, text, norm_hash(text), source, status,
         bounded(confidence), valid_until, now, now, 0, supersedes, principal, reason),
    )
    row = cursor.lastrowid
    add_evidence(store, row, evidence, principal)
    return row


def add_evidence(store: Any, row: int, evidence: list[tuple[str, str]], actor: str) -> list[str]:
    """Attach evidence refs (ignoring ones already there); return the refs newly added."""
    added = []
    now = store.now()
    for ref, kind in evidence:
        cursor = store.conn.execute(
            "INSERT OR IGNORE INTO memory_evidence (memory_row, ref, kind, added, actor) "
            "VALUES (?, ?, ?, ?, ?)",
            (row, ref, kind, now, actor),
        )
        if cursor.rowcount:
            added.append(ref)
    store.conn.execute(
        "UPDATE memories SET evidence_count = "
        "(SELECT count(*) FROM memory_evidence WHERE memory_row = ?) WHERE row = ?",
        (row, row),
    )
    return added


def set_status(store: Any, row: dict, status: str, reason: str,
               confidence: float | None = None) -> None:
    store.conn.execute(
        "UPDATE memories SET status = ?, status_reason = ?, confidence = ? WHERE row = ?",
        (status, reason, bounded(confidence if confidence is not None else row["confidence"]),
         row["row"]),
    )


def vref(row: dict) -> str:
    return make_ref("mem", row["id"], row["version"])


def wins_over(new_source: str, new_evidence: int, current: dict) -> bool:
    """The authority rule for a differing value (a user source is handled by the caller)."""
    return (authority(new_source) >= authority(current["source"])
            and current["evidence_count"] <= new_evidence)


def make_current(store: Any, new_row: dict, rows: list[dict], actor: str, op: str,
                 reason: str) -> list[str]:
    """`new_row` becomes the current version: every other active/contested one is superseded."""
    replaced = []
    for other in rows:
        if other["row"] == new_row["row"] or other["status"] not in ("active", "contested"):
            continue
        set_status(store, other, "superseded", f"superseded by {vref(new_row)}")
        record_history(store, other["id"], other["version"], "superseded", actor,
                       f"superseded by {vref(new_row)} ({op})", None, by=vref(new_row))
        replaced.append(vref(other))
    set_status(store, new_row, "active", reason,
               max(new_row["confidence"], confidence_for(new_row["source"])))
    return replaced


def resolve_conflict(store: Any, new_row: dict, current: dict, actor: str
                     ) -> tuple[str, str, str | None, str | None]:
    """Apply the authority rule between a new (or newly evidenced) version and the current
    one. Returns (action, reason, replaced ref, contested ref)."""
    rows = chain_rows(store, new_row["id"])
    new_row = next(r for r in rows if r["row"] == new_row["row"])
    if current["valid_until"] and current["valid_until"] <= store.now():
        reason = f"replaces {vref(current)}, which expired at {current['valid_until']}"
        replaced = make_current(store, new_row, rows, actor, "expired value", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    if new_row["source"] == "user":
        reason = f"user correction of {vref(current)}: the user's value is current"
        replaced = make_current(store, new_row, rows, actor, "user correction", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    if wins_over(new_row["source"], new_row["evidence_count"], current):
        reason = (f"replaces {vref(current)}: source {new_row['source']} has at least the "
                  f"authority of {current['source']} and the old value has no more evidence "
                  f"({current['evidence_count']} ≤ {new_row['evidence_count']})")
        replaced = make_current(store, new_row, rows, actor, "authority rule", reason)
        return "superseded", reason, ", ".join(replaced) or None, None
    reason = (f"contests {vref(current)}: source {new_row['source']} (evidence "
              f"{new_row['evidence_count']}) does not outrank {current['source']} (evidence "
              f"{current['evidence_count']}); the current value stays, confidence lowered")
    set_status(store, new_row, "contested", reason,
               confidence_for(new_row["source"]) * CONTESTED_FACTOR)
    set_status(store, current, current["status"], current["status_reason"],
               current["confidence"] * CURRENT_CONTEST_FACTOR)
    record_history(store, current["id"], current["version"], "contested", actor,
                   f"contradicted by {vref(new_row)}; confidence lowered", None,
                   by=vref(new_row))
    return "contested", reason, None, vref(current)


def _row(store: Any, memory: Memory) -> dict:
    return next(r for r in chain_rows(store, memory.id) if r["row"] == memory.row)


def correct(store: Any, ref: str, text: str, *, principal: str | None = None,
            reason: str | None = None) -> WriteResult:
    """A user correction: a new version from the user becomes current; others superseded."""
    from agentstate.memory.write import check_text

    text = check_text(store, text)
    if reason:
        refuse_secrets(reason, "the reason")
    who = resolve_principal(store, principal)
    target = get_memory(store, ref)
    if target.status == "forgotten":
        raise InvalidInput(f"{target.ref} is forgotten; remember the new value instead")
    if not who.can_write(target.scope):
        raise Refused(f"principal {who.name!r} may not write scope {target.scope!r}")
    who.check_claim("user", "a user correction as")
    with store.transaction():
        rows = chain_rows(store, target.id)
        cur = current_version(rows, store.now())
        if cur is not None and cur["norm_hash"] == norm_hash(text):
            # The "correction" restates the current value: the dedupe rule applies (the user
            # becomes evidence for it), not a new version that supersedes an identical one.
            from agentstate.memory.write import _refresh

            return _refresh(store, cur, [("user", "user")], None, who.name, "active")
        version = rows[-1]["version"] + 1
        why = reason or f"user correction of {target.ref}"
        row = insert_version(
            store, memory_id=target.id, version=version, kind=target.kind, key=target.key,
            scope=target.scope, text=text, source="user", status="active",
            confidence=confidence_for("user"), valid_until=None,
            supersedes=(cur or rows[-1])["version"], principal=who.name, reason=why,
            evidence=[("user", "user")],
        )
        new_rows = chain_rows(store, target.id)
        new_row = next(r for r in new_rows if r["row"] == row)
        replaced = make_current(store, new_row, new_rows, who.name, "user correction", why)
        record_history(store, target.id, version, "correct", who.name, why, text,
                       replaced=replaced)
    memory = get_memory(store, make_ref("mem", target.id, version))
    return WriteResult("corrected", memory.ref, memory.status, why, memory,
                       replaced=", ".join(replaced) or None, evidence_added=["user"])


def confirm(store: Any, ref: str, evidence: list[str], *, principal: str | None = None
            ) -> WriteResult:
    """Add evidence to a version. A candidate is promoted (then the authority rule runs
    against the current version); a contested version confirmed this way becomes current."""
    if not evidence:
        raise InvalidInput("confirm needs at least one --evidence REF")
    refuse_secrets(" ".join(evidence), "the evidence")
    who = resolve_principal(store, principal)
    target = get_memory(store, ref)
    if target.status == "quarantined":
        raise Refused(f"{target.ref} is quarantined (it read as instructions to the agent); "
                      "if it is genuine, state it yourself with `agentstate remember` "
                      "--source user")
    if target.status in ("superseded", "forgotten"):
        raise InvalidInput(f"{target.ref} is {target.status}; only current, contested or "
                           "candidate versions can be confirmed")
    if not who.can_write(target.scope):
        raise Refused(f"principal {who.name!r} may not write scope {target.scope!r}")
    checked = [validate_evidence(store, e) for e in dict.fromkeys(evidence)]
    if any(kind == "user" for _, kind in checked):
        who.check_claim("user", "evidence")
    with store.transaction():
        row = _row(store, target)
        added = add_evidence(store, row["row"], checked, who.name)
        row = _row(store, target)
        now = store.now()
        store.conn.execute(
            "UPDATE memories SET last_confirmed = ?, confidence = ? WHERE row = ?",
            (now, bounded(row["confidence"] + EVIDENCE_BONUS * len(added)), row["row"]),
        )
        row = _row(store, target)
        action, replaced = "confirmed", None
        reason = f"confirmed with evidence {', '.join(added) or '(already attached)'}"
        if target.status == "candidate" and not _still_candidate(row, checked):
            rows = chain_rows(store, target.id)
            others = [r for r in rows if r["row"] != row["row"]]
            cur = current_version(others, now) if others else None
            if cur is not None and cur["status"] in ("active", "contested"):
                action, reason, replaced, _ = resolve_conflict(store, row, cur, who.name)
                action = "confirmed" if action == "superseded" else action
            else:
                set_status(store, row, "active", "confirmed with evidence",
                           initial_confidence(row["source"], row["evidence_count"]))
                reason = "candidate promoted: evidence " + ", ".join(added or ["(existing)"])
        elif target.status == "contested":
            rows = chain_rows(store, target.id)
            reason = f"contested version confirmed by {who.name}; it becomes current"
            replaced = ", ".join(make_current(store, row, rows, who.name, "confirm", reason))
        record_history(store, target.id, target.version, "confirm", who.name, reason, None,
                       evidence=added)
    memory = get_memory(store, target.ref)
    return WriteResult(action, memory.ref, memory.status, reason, memory, replaced=replaced,
                       evidence_added=added)


def _still_candidate(row: dict, evidence: list[tuple[str, str]]) -> bool:
    """A preference becomes active only when the user stated or vouched for it."""
    if row["kind"] == "preference" and row["source"] != "user":
        return not any(kind == "user" for _, kind in evidence)
    return False
