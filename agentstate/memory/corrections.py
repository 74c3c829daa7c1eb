"""User corrections and confirmation: the two ways a person settles a memory's value.

`correct` writes the user's value as a new version that becomes current (the old ones are
superseded); `confirm` adds evidence to a version, promoting a candidate (then the authority
rule of `agentstate.memory.versions` runs against the current version) or making a contested
version current.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput, Refused
from agentstate.memory.evidence import require_about
from agentstate.memory.fields import (
    validate_evidence,
)
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
from agentstate.memory.status import CURRENT_STATUSES, MemoryStatus
from agentstate.memory.versions import (
    EVIDENCE_BONUS,
    WriteResult,
    add_evidence,
    bounded,
    initial_confidence,
    insert_version,
    make_current,
    refresh_duplicate,
    resolve_conflict,
    set_status,
)
from agentstate.memory.write import check_text, guesses, outside_evidence
from agentstate.safety import refuse_secrets
from agentstate.store.limits import MAX_REASON_CHARS, check_length
from agentstate.store.principals import acting
from agentstate.store.refs import make_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal


def _row(store: Store, memory: Memory) -> MemoryVersion:
    return next(r for r in chain_rows(store, memory.id) if r.row == memory.row)


def correct(store: Store, ref: str, text: str, *, principal: Principal | str,
            reason: str | None = None) -> WriteResult:
    """A user correction: a new version from the user becomes current; others superseded."""
    text = check_text(store, text)
    if reason:
        refuse_secrets(reason, "the reason")
        check_length(reason, MAX_REASON_CHARS, "the reason")
    who = acting(store, principal)
    target = get_memory(store, ref)
    if target.status == MemoryStatus.FORGOTTEN:
        raise InvalidInput(f"{target.ref} is forgotten; remember the new value instead")
    if not who.can_write(target.scope):
        raise Refused(f"principal {who.name!r} may not write scope {target.scope!r}")
    who.check_claim("user", "a user correction as")
    from agentstate.safety import find_injection

    if find_injection(text):
        # A correction becomes current at once, with the user's authority: text that reads
        # as instructions to the agent is refused rather than stored flagged.
        raise Refused(f"the correction of {target.ref} reads as instructions to the agent; "
                      "state the value as a plain statement")
    with store.transaction():
        rows = chain_rows(store, target.id)
        cur = current_memory_version(rows, store.now())
        if cur is not None and cur.norm_hash == norm_hash(text):
            # The "correction" restates the current value: the dedupe rule applies (the user
            # becomes evidence for it), not a new version that supersedes an identical one.
            return refresh_duplicate(store, cur, [("user", "user")], None, who.name, "active")
        version = rows[-1].version + 1
        why = reason or f"user correction of {target.ref}"
        row = insert_version(
            store, memory_id=target.id, version=version, kind=target.kind, key=target.key,
            scope=target.scope, text=text, source="user", status=MemoryStatus.ACTIVE,
            confidence=confidence_for("user"), valid_until=None,
            supersedes=(cur or rows[-1]).version, principal=who.name, reason=why,
            evidence=[("user", "user")], scanned=True,  # check_text scanned the new text;
        )                                            # the rest is the scanned version's
        new_rows = chain_rows(store, target.id)
        new_row = next(r for r in new_rows if r.row == row)
        replaced = make_current(store, new_row, new_rows, who.name, "user correction", why)
        record_history(store, target.id, version, "correct", who.name, why, text,
                       replaced=replaced)
    memory = get_memory(store, make_ref("mem", target.id, version))
    return WriteResult("corrected", memory.ref, memory.status, why, memory,
                       replaced=", ".join(replaced) or None, evidence_added=["user"])


def confirm(store: Store, ref: str, evidence: list[str], *, principal: Principal | str
            ) -> WriteResult:
    """Add evidence to a version. A candidate is promoted (then the authority rule runs
    against the current version); a contested version confirmed this way becomes current."""
    if not evidence:
        raise InvalidInput("confirm needs at least one --evidence REF")
    refuse_secrets(" ".join(evidence), "the evidence")
    who = acting(store, principal)
    target = get_memory(store, ref)
    if target.status == MemoryStatus.QUARANTINED:
        raise Refused(f"{target.ref} is quarantined (it read as instructions to the agent); "
                      "if it is genuine, restate it as a plain statement with "
                      "`agentstate remember`")
    if target.status in (MemoryStatus.SUPERSEDED, MemoryStatus.FORGOTTEN):
        raise InvalidInput(f"{target.ref} is {target.status}; only current, contested or "
                           "candidate versions can be confirmed")
    if not who.can_write(target.scope):
        raise Refused(f"principal {who.name!r} may not write scope {target.scope!r}")
    checked = [validate_evidence(store, e) for e in dict.fromkeys(evidence)]
    if any(kind == "user" for _, kind in checked):
        who.check_claim("user", "evidence")
    _require_outside_evidence(store, target, checked)
    with store.transaction():
        row = _row(store, target)
        added = add_evidence(store, row.row, checked, who.name)
        row = _row(store, target)
        now = store.now()
        store.conn.execute(
            "UPDATE memories SET last_confirmed = ?, confidence = ? WHERE row = ?",
            (now, bounded(row.confidence + EVIDENCE_BONUS * len(added)), row.row),
        )
        row = _row(store, target)
        action, replaced = "confirmed", None
        reason = f"confirmed with evidence {', '.join(added) or '(already attached)'}"
        if target.status == MemoryStatus.CANDIDATE and not _still_candidate(row, checked):
            rows = chain_rows(store, target.id)
            others = [r for r in rows if r.row != row.row]
            cur = current_memory_version(others, now) if others else None
            if cur is not None and cur.status in CURRENT_STATUSES:
                action, reason, replaced, _ = resolve_conflict(store, row, cur, who.name)
                action = "confirmed" if action == "superseded" else action
            else:
                set_status(store, row, MemoryStatus.ACTIVE, "confirmed with evidence",
                           initial_confidence(row.source, row.evidence_count))
                reason = "candidate promoted: evidence " + ", ".join(added or ["(existing)"])
        elif target.status == MemoryStatus.CONTESTED:
            rows = chain_rows(store, target.id)
            reason = f"contested version confirmed by {who.name}; it becomes current"
            replaced = ", ".join(make_current(store, row, rows, who.name, "confirm", reason))
        record_history(store, target.id, target.version, "confirm", who.name, reason, None,
                       evidence=added)
    memory = get_memory(store, target.ref)
    return WriteResult(action, memory.ref, memory.status, reason, memory, replaced=replaced,
                       evidence_added=added)


def _require_outside_evidence(store: Store, target: Memory,
                              checked: list[tuple[str, str]]) -> None:
    """A confirmation needs one piece of evidence the model did not write itself: the user,
    a file at a commit, or an event whose source is not `model`. Otherwise an agent could
    turn its own guess into a fact by citing its own note. A guess or an open question
    (write.guesses) confirms nothing, whoever logged it."""
    require_about(store, target.text, checked, target.ref)
    if outside_evidence(store, checked):
        return
    guessed = set(guesses(store, checked))
    what = ("is only a guess or an open question" if guessed else
            "was written by the model itself or relayed as an unverified user prompt")
    raise Refused(f"{target.ref}: evidence {', '.join(r for r, _ in checked)} {what}; confirm "
                  "with evidence from outside it (user, a file:PATH@COMMIT, or an event from a "
                  "tool or the user that is not a hypothesis or question)")


def _still_candidate(row: MemoryVersion, evidence: list[tuple[str, str]]) -> bool:
    """A preference becomes active only when the user stated or vouched for it."""
    if row.kind == "preference" and row.source != "user":
        return not any(kind == "user" for _, kind in evidence)
    return False
