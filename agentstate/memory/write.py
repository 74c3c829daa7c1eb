"""The write gate: `remember`.

Order of checks (each documented in docs/memory.md):
1. validation — text (non-empty, within `[memory] max_chars`), kind, key, scope, source,
   ttl/until, evidence refs that exist → InvalidInput (exit 1), nothing stored;
2. secrets — in the text, key, scope, source or evidence → Refused (exit 3) before anything
   is written anywhere (no memory, no history row, no run-log event);
3. permission — the principal must be allowed to write the scope → Refused (exit 3);
4. injection — text that reads as instructions to the agent → `quarantined`, whatever its
   source (a command run under the user's authority may still carry text an agent pasted);
5. evidence — a fact or procedure with no evidence (event, file at a commit, or the user as
   source), or whose only evidence is guesses (`hypothesis` events) or open questions
   (`question` events), or a preference not stated by the user → `candidate`;
6. dedupe — the same content in the same scope (or the same key and value) → the existing
   version gains the evidence and a refreshed time, and the answer says so;
7. conflict — the same key and scope with a different value → a new version in the chain,
   current or contested by the authority rule (`agentstate.memory.versions`);
   without a key, a close match found by search is reported as a possible duplicate or
   conflict (with its ref), and the new memory is stored on its own.
Every decision that stores something writes a history row with its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput, Refused, a_or_an
from agentstate.memory.evidence import require_about, self_authored
from agentstate.memory.fields import (
    check_file_at_commit,
    parse_validity,
    validate_evidence,
    validate_key,
    validate_kind,
    validate_scope,
)
from agentstate.memory.history import record_history
from agentstate.memory.model import (
    MemoryVersion,
    chain_rows,
    confidence_for,
    current_memory_version,
    get_memory,
    norm_hash,
    select_versions,
)
from agentstate.memory.status import CURRENT_STATUSES, MemoryStatus, status_in
from agentstate.memory.versions import (
    WriteResult,
    initial_confidence,
    insert_version,
    refresh_duplicate,
    resolve_conflict,
    vref,
)
from agentstate.safety import find_injection, refuse_secrets
from agentstate.store.limits import MAX_NAME_CHARS, check_length
from agentstate.store.principals import acting, default_source
from agentstate.store.sources import validate_source

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal

CANDIDATE_CONFIDENCE = 0.4
# The gate's verdicts other than active, short for the reasons spelled out beside them.
CANDIDATE, QUARANTINED = MemoryStatus.CANDIDATE, MemoryStatus.QUARANTINED
QUARANTINE_CONFIDENCE = 0.1
SIMILAR = 0.5  # token overlap (Jaccard) at which a keyless match is reported
# Event kinds that record what is not known: a guess or an open question is never evidence
# of what it asks about, whoever logged it. A memory citing only these is a claim, not
# knowledge.
UNCONFIRMED_EVENT_KINDS = ("hypothesis", "question")


def check_text(store: Store, text: str) -> str:
    """Validation and the secret scan for memory text (shared by remember and correct)."""
    value = (text or "").strip()
    if not value:
        raise InvalidInput("the memory text is empty")
    limit = store.settings.memory.max_chars
    if len(value) > limit:
        raise InvalidInput(f"the memory text is {len(value)} characters; the limit is {limit} "
                           "([memory] max_chars)")
    refuse_secrets(value, "the memory text")
    return value


def remember(
    store: Store,
    text: str,
    *,
    kind: str,
    key: str | None = None,
    scope: str | None = None,
    source: str | None = None,
    evidence: list[str] | tuple[str, ...] = (),
    ttl: str | None = None,
    until: str | None = None,
    principal: Principal | str,
) -> WriteResult:
    """Pass `text` through the write gate; return what was decided and why. Without a
    `source`, the principal's own (`user`, or `model` for one that may not claim it)."""
    # Secrets first over every field: a refused write must leave no trace, and an error
    # message about a malformed field must not be the way a secret gets echoed.
    for what, value in (("the memory text", text), ("the key", key or ""),
                        ("the scope", scope or ""), ("the source", source or ""),
                        ("the evidence", " ".join(evidence))):
        refuse_secrets(value, what)
    for what, name in (("the key", key), ("the scope", scope), ("the source", source)):
        check_length(name, MAX_NAME_CHARS, what)
    text = check_text(store, text)
    kind = validate_kind(kind)
    key = validate_key(key)
    scope = validate_scope(store, scope)
    who = acting(store, principal)
    # No source named: the principal's own word (user, or model for the agent).
    source = validate_source(source or default_source(who), allow_event=True)
    valid_until = parse_validity(store, ttl, until)
    source, refs = _with_source_evidence(
        store, source, [validate_evidence(store, e) for e in dict.fromkeys(evidence)])
    if not who.can_write(scope):
        raise Refused(f"principal {who.name!r} may not write scope {scope!r} "
                      f"(write: {', '.join(who.write) or 'nothing'})")
    who.check_claim(source)
    if any(kind == "user" for _, kind in refs):
        who.check_claim("user", "evidence")
    # Evidence must be about the fact (its key words or value), whoever cites it.
    require_about(store, text, refs, "the memory text")
    status, reason = _gate_status(store, text, kind, source, refs)

    with store.transaction():
        duplicate = _find_duplicate(store, text, kind, key, scope, status)
        if duplicate is not None:
            return refresh_duplicate(store, duplicate, refs, valid_until, who.name, status)
        if status == "quarantined":
            return _new_chain(store, text, kind, key, scope, source, status, reason,
                              QUARANTINE_CONFIDENCE, valid_until, who.name, refs)
        if key is not None:
            chain = _key_chain(store, key, scope)
            if chain:
                return _new_version(store, chain, text, kind, key, scope, source, status, reason,
                                    valid_until, who.name, refs)
        similar = [] if key is not None else _similar(store, text, kind, scope)
        confidence = (CANDIDATE_CONFIDENCE if status == "candidate"
                      else initial_confidence(source, len(refs)))
        if similar:
            reason += "; possible duplicate or conflict of " + ", ".join(
                s["ref"] for s in similar) + " (not merged)"
        result = _new_chain(store, text, kind, key, scope, source, status, reason, confidence,
                            valid_until, who.name, refs)
        result.possible_duplicates = similar
        return result


def _with_source_evidence(store: Store, source: str, refs: list[tuple[str, str]]
                          ) -> tuple[str, list[tuple[str, str]]]:
    """The source itself is evidence when it is the user, an event or a file at a commit
    (put first; a file source is checked and normalised). Returns (source, refs), deduped."""
    if source == "user":
        refs.insert(0, ("user", "user"))
    elif source.startswith("evt:"):
        refs.insert(0, validate_evidence(store, source))
    elif source.startswith("file:"):
        source = check_file_at_commit(store, source)
        refs.insert(0, (source, "file"))
    return source, list(dict.fromkeys(refs))


def _gate_status(store: Store, text: str, kind: str, source: str,
                 refs: list[tuple[str, str]]) -> tuple[MemoryStatus, str]:
    """(status, reason) the write gate gives a memory: active, quarantined (reads as
    instructions) or candidate (a fact or procedure without outside evidence, a preference
    not from the user)."""
    # Rules for the agent ("always skip the tests") are the user's to set: from any other
    # source they count as instructions too.
    phrases = find_injection(text, from_user=source == "user")
    if phrases:
        return QUARANTINED, (f"text from {source} reads as instructions to the agent "
                             f"({len(phrases)} instruction-like phrase(s)); kept out of "
                             "reads, never served as trusted")
    if kind in ("fact", "procedure") and not refs:
        return CANDIDATE, (f"{a_or_an(kind)} without evidence (an event, a file at a "
                           "commit, or the user as source) is a candidate until `memory "
                           "confirm` adds evidence")
    if kind in ("fact", "procedure") and len(guessed := guesses(store, refs)) == len(refs):
        return CANDIDATE, (f"{a_or_an(kind)} whose only evidence is a guess or an open "
                           f"question ({', '.join(guessed)}) is a candidate until `memory "
                           "confirm` adds evidence from a tool, a file at a commit or the "
                           "user")
    if kind in ("fact", "procedure") and not outside_evidence(store, refs):
        return CANDIDATE, (f"{a_or_an(kind)} whose evidence the writer could have produced "
                           "itself (the model's own events, or a user prompt relayed by an "
                           "agent client, unverified) is a candidate until `memory confirm` "
                           "adds evidence from a tool, a file at a commit or the user")
    if kind == "preference" and not any(k == "user" for _, k in refs):
        return CANDIDATE, ("only the user states preferences; a candidate until the user "
                           "confirms it")
    return MemoryStatus.ACTIVE, "passed the write gate"


def guesses(store: Store, refs: list[tuple[str, str]]) -> list[str]:
    """The event refs among `refs` (as validate_evidence returns them) that are guesses or
    open questions, not evidence."""
    from agentstate.runs.log import get_event

    return [ref for ref, kind in refs
            if kind == "evt" and get_event(store, ref).kind in UNCONFIRMED_EVENT_KINDS]


def outside_evidence(store: Store, refs: list[tuple[str, str]]) -> list[str]:
    """The refs among `refs` from a channel the model does not control: the user, a file at a
    commit, or an event that is neither a guess nor the model's own word nor a relayed prompt
    (memory/evidence.py)."""
    from agentstate.runs.log import get_event

    guessed = set(guesses(store, refs))
    return [ref for ref, kind in refs
            if kind in ("user", "file") or (kind == "evt" and ref not in guessed
                                             and not self_authored(get_event(store, ref).source))]


def _find_duplicate(store: Store, text: str, kind: str, key: str | None, scope: str,
                    status: MemoryStatus) -> MemoryVersion | None:
    """The same normalised content in the same scope (and kind, and key when both have one).
    Quarantined text only dedupes with quarantined text, so it can never refresh a fact."""
    wanted = ((MemoryStatus.QUARANTINED,) if status == MemoryStatus.QUARANTINED
              else (*CURRENT_STATUSES, MemoryStatus.CANDIDATE))
    for row in select_versions(
        store, f"WHERE norm_hash = ? AND scope = ? AND kind = ? "
        f"AND {status_in(wanted)} ORDER BY version DESC",
        (norm_hash(text), scope, kind),
    ):
        if key is None or row.key in (None, key):
            return row
    return None


def _key_chain(store: Store, key: str, scope: str) -> list[MemoryVersion]:
    row = store.conn.execute(
        "SELECT id FROM memories WHERE key = ? AND scope = ? AND status != 'quarantined' "
        "ORDER BY row DESC LIMIT 1",
        (key, scope),
    ).fetchone()
    return chain_rows(store, row[0]) if row else []


def _new_chain(store: Store, text: str, kind: str, key: str | None, scope: str, source: str,
               status: MemoryStatus, reason: str, confidence: float, valid_until: str | None,
               actor: str, refs: list[tuple[str, str]]) -> WriteResult:
    memory_id = store.new_id()
    insert_version(store, memory_id=memory_id, version=1, kind=kind, key=key, scope=scope,
                   text=text, source=source, status=status, confidence=confidence,
                   valid_until=valid_until, supersedes=None, principal=actor, reason=reason,
                   evidence=refs, scanned=True)  # remember scanned every field first
    op = {"active": "remember", "candidate": "candidate", "quarantined": "quarantine"}[status]
    record_history(store, memory_id, 1, op, actor, reason, text, source=source, scope=scope,
                   kind=kind, evidence=[r for r, _ in refs])
    memory = get_memory(store, f"mem:{memory_id}@v1")
    action = {"active": "stored", "candidate": "candidate", "quarantined": "quarantined"}[status]
    return WriteResult(action, memory.ref, memory.status, reason, memory,
                       evidence_added=[r for r, _ in refs])


def _new_version(store: Store, chain: list[MemoryVersion], text: str, kind: str, key: str,
                 scope: str, source: str, status: MemoryStatus, reason: str,
                 valid_until: str | None,
                 actor: str, refs: list[tuple[str, str]]) -> WriteResult:
    now = store.now()
    cur = current_memory_version(chain, now)
    # The current version when it is one a new value competes with, else None.
    live = cur if cur is not None and cur.status in CURRENT_STATUSES else None
    version = chain[-1].version + 1
    memory_id = chain[0].id
    confidence = (CANDIDATE_CONFIDENCE if status == "candidate"
                  else initial_confidence(source, len(refs)))
    if status == "candidate" and live is not None:
        reason += f"; a new value for key {key!r}, {vref(live)} stays current"
    row = insert_version(
        store, memory_id=memory_id, version=version, kind=kind, key=key, scope=scope,
        text=text, source=source,
        status=MemoryStatus.CANDIDATE if status == MemoryStatus.CANDIDATE else MemoryStatus.ACTIVE,
        confidence=confidence, valid_until=valid_until,
        supersedes=cur.version if cur else None, principal=actor, reason=reason,
        evidence=refs, scanned=True,  # remember scanned every field first
    )
    action, replaced, contests = ("candidate" if status == "candidate" else "stored"), None, None
    if status == "active" and live is not None:
        new_row = next(r for r in chain_rows(store, memory_id) if r.row == row)
        action, reason, replaced, contests = resolve_conflict(store, new_row, live, actor)
    op = {"candidate": "candidate", "stored": "remember", "superseded": "supersede",
          "contested": "contest"}[action]
    record_history(store, memory_id, version, op, actor, reason, text, source=source,
                   scope=scope, key=key, replaced=replaced, contests=contests,
                   evidence=[r for r, _ in refs])
    memory = get_memory(store, f"mem:{memory_id}@v{version}")
    return WriteResult(action, memory.ref, memory.status, reason, memory, replaced=replaced,
                       contests=contests, evidence_added=[r for r, _ in refs])


def _similar(store: Store, text: str, kind: str, scope: str) -> list[dict[str, Any]]:
    """Keyless close matches in the same scope and kind: reported, never merged."""
    from agentstate.memory.search import search_memory_rows
    from agentstate.memory.terms import tokens

    try:
        hits = search_memory_rows(store, text, cap=20)
    except InvalidInput:
        return []
    if not hits:
        return []
    mine = tokens(text)
    marks = ",".join("?" * len(hits))
    found = []
    for row_id, mem_id, version, text_other in store.conn.execute(
        f"SELECT row, id, version, text FROM memories WHERE row IN ({marks}) AND scope = ? "
        f"AND kind = ? AND {status_in(CURRENT_STATUSES)}",
        [h for h, _ in hits] + [scope, kind],
    ):
        theirs = tokens(text_other)
        union = mine | theirs
        similarity = len(mine & theirs) / len(union) if union else 0.0
        if similarity >= SIMILAR:
            found.append({"ref": f"mem:{mem_id}@v{version}", "similarity": round(similarity, 2),
                          "row": row_id})
    found.sort(key=lambda item: -item["similarity"])
    for item in found:
        item.pop("row")
    return found[:5]


__all__ = ["remember", "check_text", "confidence_for", "guesses", "outside_evidence"]
