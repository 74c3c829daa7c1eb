"""Memory records and reading them back: one version, a chain, a page of the newest.

A memory is a chain of versions sharing one id: `mem:ID` names the chain (its current
version), `mem:ID@vN` one version. Statuses:
  active       current and in the default read set
  contested    a rival value that did not win the authority rule; shown flagged
  candidate    lacks evidence (or a preference not stated by the user); outside reads
  quarantined  non-user text that reads as instructions to the agent; outside reads
  superseded   replaced by a newer version
  forgotten    tombstoned (or purged) by `forget`
`expired` is derived at read time: an active/contested version whose `valid_until` has passed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput, NotFound
from agentstate.lazy_re import LazyPattern
from agentstate.memory.fields import validate_kind, validate_scope
from agentstate.memory.status import (
    CURRENT_STATUSES,
    EXPIRED,
    STATUSES,
    MemoryStatus,
    ShownStatus,
    status_in,
)
from agentstate.memory.stored import (  # noqa: F401 (re-exported for memory's modules and sync)
    MemoryVersion,
    select_versions,
    version_from_row,
    with_evidence_refs,
)
from agentstate.store.principals import Principal, acting
from agentstate.store.refs import make_ref, parse_ref

if TYPE_CHECKING:

    from agentstate.store.db import Store

# What `recall --include` may add back (expired is derived, not stored).
INCLUDABLE = ("superseded", "expired", "forgotten", "candidate", "quarantined")
WITHHELD_REASONS = ("permission", "out_of_scope", "expired", "superseded", "candidate",
                    "quarantined", "forgotten", "low_relevance")

BASE_CONFIDENCE = {"user": 0.95, "file": 0.8, "tool": 0.8, "evt": 0.8, "model": 0.5}


@dataclass
class Evidence:
    ref: str
    kind: str
    added: str
    actor: str


@dataclass
class Memory:
    """One version of a memory as it is shown: `memory show`/`list`, trace, the pinned
    preferences of a pack, a write's result. Made from a stored `MemoryVersion`
    (memory/stored.py, what code that decides or changes a version reads) by
    `row_to_memory`: the status as readers see it (`expired` derived), confidence rounded,
    `supersedes` as a ref, the evidence loaded. A read-gate answer is a `MemoryHit`
    (memory/recall.py), which adds how the hit ranked."""

    ref: str  # mem:ID@vN
    id: str
    version: int
    kind: str
    key: str | None
    scope: str
    text: str
    source: str
    status: ShownStatus  # the stored status, or `expired` (derived from valid_until)
    stored_status: MemoryStatus
    confidence: float
    valid_until: str | None
    created: str
    last_confirmed: str
    evidence_count: int
    supersedes: str | None  # mem:ID@vN this version replaced or contests
    principal: str
    status_reason: str
    purged: bool
    evidence: list[Evidence] = field(default_factory=list)
    row: int = 0

    @property
    def chain_ref(self) -> str:
        return make_ref("mem", self.id)


# ---------------------------------------------------------------- what dedupe compares


def normalise(text: str) -> str:
    """What dedupe compares: case-folded, whitespace collapsed, trailing punctuation off.
    A text with no run to collapse skips the substitution: every whitespace character but
    the space is unprintable (as safety.py's injection check relies on, tested there over
    every code point), so a printable text without two spaces in a row has none (issue 24:
    an import normalises every record it stores)."""
    folded = text.casefold()
    if "  " in folded or not folded.isprintable():
        folded = _SPACES.sub(" ", folded)
    return folded.strip().rstrip(".!。！;；")


_SPACES = LazyPattern(r"\s+")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def norm_hash(text: str) -> str:
    return text_hash(normalise(text))


# ---------------------------------------------------------------- reading back


def confidence_for(source: str) -> float:
    return BASE_CONFIDENCE.get(source.split(":", 1)[0], 0.5)


def effective_status(stored: MemoryStatus, valid_until: str | None, now: str) -> ShownStatus:
    if stored in CURRENT_STATUSES and valid_until and valid_until <= now:
        return EXPIRED
    return stored


def row_to_memory(row: MemoryVersion, now: str, evidence: list[Evidence] | None = None
                  ) -> Memory:
    return Memory(
        ref=row.ref,
        id=row.id,
        version=row.version,
        kind=row.kind,
        key=row.key,
        scope=row.scope,
        text=row.text,
        source=row.source,
        status=effective_status(row.status, row.valid_until, now),
        stored_status=row.status,
        confidence=round(row.confidence, 3),
        valid_until=row.valid_until,
        created=row.created,
        last_confirmed=row.last_confirmed,
        evidence_count=row.evidence_count,
        supersedes=make_ref("mem", row.id, row.supersedes) if row.supersedes else None,
        principal=row.principal,
        status_reason=row.status_reason,
        purged=row.purged,
        evidence=evidence or [],
        row=row.row,
    )


def load_evidence(store: Store, rows: list[int]) -> dict[int, list[Evidence]]:
    found: dict[int, list[Evidence]] = {r: [] for r in rows}
    if not rows:
        return found
    marks = ",".join("?" * len(rows))
    for item in store.rows(
        f"SELECT * FROM memory_evidence WHERE memory_row IN ({marks}) ORDER BY added, ref", rows
    ):
        found[item["memory_row"]].append(
            Evidence(item["ref"], item["kind"], item["added"], item["actor"])
        )
    return found


def memories_from_rows(store: Store, rows: list[MemoryVersion]) -> list[Memory]:
    evidence = load_evidence(store, [r.row for r in rows])
    now = store.now()
    return [row_to_memory(r, now, evidence[r.row]) for r in rows]


def chain_rows(store: Store, memory_id: str) -> list[MemoryVersion]:
    """Every version of the chain `memory_id`, oldest first."""
    return select_versions(store, "WHERE id = ? ORDER BY version", (memory_id,))


def current_memory_version(rows: list[MemoryVersion], now: str) -> MemoryVersion | None:
    """The version a bare `mem:ID` means: the newest active (not expired), else the newest
    active/contested, else the newest version of the chain."""
    for wanted in ((MemoryStatus.ACTIVE,), CURRENT_STATUSES):
        live = [r for r in rows if r.status in wanted]
        if live:
            fresh = [r for r in live if effective_status(r.status, r.valid_until, now)
                     != "expired"]
            return (fresh or live)[-1]
    return rows[-1] if rows else None


def get_memory(store: Store, ref: str) -> Memory:
    """One memory version: `mem:ID@vN`, or the chain's current version for `mem:ID`."""
    parsed = parse_ref(ref, expect="mem")
    rows = chain_rows(store, parsed.id)
    if not rows:
        raise NotFound(f"no memory {make_ref('mem', parsed.id)}")
    if parsed.version is None:
        row = current_memory_version(rows, store.now())
    else:
        row = next((r for r in rows if r.version == parsed.version), None)
    if row is None:
        raise NotFound(f"no memory {ref} (the chain has v1..v{rows[-1].version})")
    return memories_from_rows(store, [row])[0]


def get_chain(store: Store, ref: str) -> list[Memory]:
    """Every version of the memory `ref` names, oldest first, with evidence."""
    parsed = parse_ref(ref, expect="mem")
    rows = chain_rows(store, parsed.id)
    if not rows:
        raise NotFound(f"no memory {make_ref('mem', parsed.id)}")
    return memories_from_rows(store, rows)


def check_readable(store: Store, memory: Memory, principal: Principal | str) -> None:
    """For inspection commands: the principal must be allowed to read the memory's scope."""
    from agentstate.errors import Refused

    who = acting(store, principal)
    if not who.can_read(memory.scope):
        raise Refused(f"principal {who.name!r} may not read scope {memory.scope!r}")


def memory_evidence(store: Store, ref: str) -> dict[str, list[Evidence]]:
    """For `trace`: every version ref of the chain → its evidence refs."""
    return {m.ref: m.evidence for m in get_chain(store, ref)}


def versions_drawn_from(store: Store, event_ref: str, *, limit: int) -> list[str]:
    """For `trace`: refs of the memory versions that cite `event_ref` as evidence or name it
    as their source, by id and version, at most `limit`."""
    return [make_ref("mem", r[0], r[1]) for r in store.conn.execute(
        "SELECT DISTINCT m.id, m.version FROM memories m WHERE m.row IN "
        "(SELECT memory_row FROM memory_evidence WHERE ref = ?) OR m.source = ? "
        "ORDER BY m.id, m.version LIMIT ?", (event_ref, event_ref, limit))]


def versions_citing(store: Store, evidence_refs: list[str], *, limit: int) -> list[str]:
    """For `trace`: refs of the memory versions that cite any of `evidence_refs` as evidence,
    by id and version, at most `limit`. The refs go in as one JSON array (a run may have
    thousands of events: one query, no limit on bound variables)."""
    if not evidence_refs:
        return []
    return [make_ref("mem", r[0], r[1]) for r in store.conn.execute(
        "SELECT DISTINCT m.id, m.version FROM memory_evidence me "
        "JOIN memories m ON m.row = me.memory_row "
        "WHERE me.ref IN (SELECT value FROM json_each(?)) "
        "ORDER BY m.id, m.version LIMIT ?", (json.dumps(evidence_refs), limit))]


def list_memories(store: Store, *, status: str | None = None, kind: str | None = None,
                  scope: str | None = None, limit: int | None = None, offset: int = 0,
                  principal: Principal | str) -> list[Memory]:
    """Memory versions, newest first. Default: current (active and contested, not expired);
    `status` may be any stored status, `expired`, or `all`. Only scopes the principal may
    read are listed. `offset` skips that many of the newest (the ui's pages)."""
    who = acting(store, principal)
    where: list[str] = []
    params: list[str | int] = []
    statuses: tuple[str, ...] = ()
    if status in (None, "current", "expired"):
        statuses = tuple(s.value for s in CURRENT_STATUSES)
        if status == "expired":
            where.append("valid_until IS NOT NULL AND valid_until <= ?")
        else:  # left out here, not after the limit: a page is never short of current ones
            where.append("(valid_until IS NULL OR valid_until > ?)")
        params.append(store.now())
    elif status != "all":
        if status not in STATUSES:
            raise InvalidInput(
                f"unknown status {status!r}: expected {', '.join(STATUSES)}, expired or all"
            )
        statuses = (status,)
    if kind:
        validate_kind(kind)
        where.append("kind = ?")
        params.append(kind)
    if scope:
        where.append("scope = ?")
        params.append(validate_scope(store, scope))
    if limit is not None and limit < 1:
        raise InvalidInput("--limit must be at least 1")
    if offset < 0:
        raise InvalidInput("the offset must be 0 or more")
    rows = _newest_versions(store, statuses, where, params, limit, offset,
                            by_expiry=status == "expired")
    found = [m for m in memories_from_rows(store, rows) if who.can_read(m.scope)]
    if status in (None, "current"):
        found = [m for m in found if m.status != "expired"]
    return found


def _newest_versions(store: Store, statuses: tuple[str, ...], where: list[str],
                     params: list[str | int], limit: int | None, offset: int, *,
                     by_expiry: bool = False) -> list[MemoryVersion]:
    """Newest first, `offset` skipped, at most `limit`. With a limit, the page is found
    on the index alone (memories_status_created holds status, created and row: one walk
    per status, stopped at offset + limit, merged here; SQLite would sort the whole of
    `status IN (…)` first), then only its rows are read. `by_expiry` walks the expiring
    index instead (`+status` keeps the planner off the status one): few versions have an
    expiry, while a status has thousands."""
    order = " ORDER BY created DESC, row DESC"
    if limit is None:  # every row is read anyway: one query, sorted by SQLite
        conditions = [*([status_in(statuses)] if statuses else []), *where]
        return select_versions(store, ("WHERE " + " AND ".join(conditions) if conditions
                                       else "") + order, params)
    wanted = min(limit + offset, 2**62)  # SQLite integers are 64-bit
    column = "+status" if by_expiry else "status"
    keys: list[dict[str, Any]] = []
    for one in statuses or (None,):
        conditions = [*([f"{column} = ?"] if one else []), *where]
        keys += store.rows("SELECT row, created FROM memories"
                           + (" WHERE " + " AND ".join(conditions) if conditions else "")
                           + order + " LIMIT ?", [*([one] if one else []), *params, wanted])
    keys.sort(key=lambda k: (k["created"], k["row"]), reverse=True)
    page = [k["row"] for k in keys[offset:offset + limit]]
    if not page:
        return []
    found = {v.row: v for v in select_versions(
        store, f"WHERE row IN ({', '.join('?' * len(page))})", page)}
    return [found[row] for row in page]


def list_user_preferences(store: Store, principal: Principal | str,
                          context: dict[str, Any] | None = None) -> list[Memory]:
    """Active `preference` memories stated by the user, readable by the principal and in
    scope for `context` (run/branch/paths): what the context engine pins."""
    from agentstate.memory.scopes import scope_applies

    who = acting(store, principal)
    rows = select_versions(store, "WHERE kind = 'preference' AND source = 'user' "
                           "AND status = 'active' ORDER BY created, row")
    found = []
    for memory in memories_from_rows(store, rows):
        if memory.status != MemoryStatus.ACTIVE or not who.can_read(memory.scope):
            continue
        if context is not None and scope_applies(memory.scope, context) is None:
            continue
        found.append(memory)
    return found


def event_refs_cited(store: Store) -> set[str]:
    """Every `evt:…` ref a memory version cites, as evidence or as its source (retention
    keeps those events)."""
    conn = store.conn
    cited = {r[0] for r in conn.execute(
        "SELECT DISTINCT ref FROM memory_evidence WHERE ref LIKE 'evt:%'")}
    cited |= {r[0] for r in conn.execute(
        "SELECT DISTINCT source FROM memories WHERE source LIKE 'evt:%'")}
    return cited


# ---------------------------------------------------------------- one chain by content or key


def rows_with_content(store: Store, text: str, scope: str, kind: str
                      ) -> list[MemoryVersion]:
    """Versions (of any status but purged) with the same normalised text, scope and kind."""
    return select_versions(store, "WHERE norm_hash = ? AND scope = ? AND kind = ? ORDER BY row",
                           (norm_hash(text), scope, kind))


def key_chain_id(store: Store, key: str, scope: str) -> str | None:
    """The chain holding `key` in `scope` (the newest one when several do)."""
    row = store.conn.execute(
        "SELECT id FROM memories WHERE key = ? AND scope = ? AND status != 'quarantined' "
        "ORDER BY row DESC LIMIT 1", (key, scope)).fetchone()
    return row[0] if row else None


def vouched_by_user(store: Store, row: int) -> bool:
    """Whether the user is among the evidence of memory version `row` (`--evidence user`)."""
    return store.conn.execute(
        "SELECT 1 FROM memory_evidence WHERE memory_row = ? AND kind = 'user'",
        (row,)).fetchone() is not None
