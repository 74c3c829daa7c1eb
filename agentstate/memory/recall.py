"""The read gate: `recall`.

A search hit is not automatically an answer. For each memory version the full-text search
finds (BM25 over the word and trigram indexes, `agentstate.memory.search`), the gate checks,
in this order:
1. permission — the principal may read the scope (else withheld: `permission`);
2. scope — with a `context` (run, branch, paths) a run/branch/path scope must apply
   (else withheld: `out_of_scope`);
3. status and time — forgotten, superseded, candidate, quarantined and expired versions are
   withheld (counted by reason) unless named in `include`;
4. relevance — hits whose relevance is below `[memory] min_relevance` of the best visible
   hit are cut (`low_relevance`).
What remains is ranked by relevance × (recency, confidence, scope specificity). Contested
versions are shown flagged, next to the current version they contest. The result says
explicitly when nothing matched, and counts what was withheld by reason — never its text.

The same rule reaches the events a memory was written from (`lapsed_sources`): an event that
is evidence only of versions withheld for what they say (expired, superseded, forgotten) is
not current evidence either — the context engine leaves it out, as it does a superseded
event.

Counts come from the top `CANDIDATES` search matches (so a query stays fast on a large
store); on very large stores they are a lower bound.
"""

from __future__ import annotations

import fnmatch
import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput
from agentstate.memory.fields import KINDS
from agentstate.memory.model import (
    INCLUDABLE,
    Evidence,
    MemoryVersion,
    acting,
    chain_rows,
    current_memory_version,
    effective_status,
    get_memory,
    list_user_preferences,
    load_evidence,
    memory_evidence,
    row_to_memory,
    select_versions,
)
from agentstate.memory.scopes import scope_applies
from agentstate.memory.status import CURRENT_STATUSES, MemoryStatus, ShownStatus
from agentstate.safety import redact_secrets
from agentstate.store.clock import parse_ts
from agentstate.store.refs import make_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal

# Re-exported: the context engine imports these from here.
__all__ = ["MemoryHit", "RecallResult", "get_memory", "lapsed_sources", "list_user_preferences",
           "memory_evidence", "recall"]

CANDIDATES = 200
RECENCY_HALF_LIFE_DAYS = 60.0


@dataclass
class MemoryHit:
    """One memory version returned by the read gate: a `Memory` (made by `row_to_memory`)
    plus how it ranked (score, relevance, age) and where it stands among rivals (flags,
    contests, contested_by), with evidence as plain refs. Its own record, not a `Memory`
    with extra fields, because its fields are the flat object `recall --json` and the MCP
    `recall` tool have always returned, and a hit never carries the stored-only fields
    (stored status, principal, status reason) a reader of the gate's answer is not shown."""

    ref: str  # mem:ID@vN
    id: str
    version: int
    kind: str
    key: str | None
    scope: str
    text: str
    source: str
    evidence: list[str]
    confidence: float
    status: ShownStatus
    created: str
    last_confirmed: str
    age_days: float
    valid_until: str | None
    score: float
    relevance: float
    flags: list[str] = field(default_factory=list)  # contested, has_contest, included:STATUS
    contests: str | None = None  # for a contested hit: the current version's ref
    contested_by: list[str] = field(default_factory=list)  # for a current one: its rivals

    @property
    def chain_ref(self) -> str:
        return make_ref("mem", self.id)


@dataclass
class RecallResult:
    query: str
    principal: str
    hits: list[MemoryHit]
    withheld: dict[str, int]
    matched_nothing: bool
    pruned_terms: list[str] = field(default_factory=list)


def _age_days(now: str, then: str) -> float:
    return max(0.0, (parse_ts(now) - parse_ts(then)).total_seconds() / 86400)


def recall(
    store: Store,
    query: str,
    *,
    limit: int = 10,
    kinds: list[str] | tuple[str, ...] | None = None,
    scopes: list[str] | tuple[str, ...] | None = None,
    principal: Principal | str,
    include: list[str] | tuple[str, ...] = (),
    context: dict[str, Any] | None = None,
    gate: bool = True,
    dense: bool = True,
) -> RecallResult:
    """Memories relevant to `query` that the principal may read, through the read gate.

    `kinds`/`scopes` filter (scopes may be patterns such as `branch:*`; filtered items are
    not counted as withheld); `include` lets named withheld statuses
    through (flagged `included:STATUS`); `context` = {"run", "branch", "paths"} for scope
    applicability and specificity. `gate=False` switches the read gate off (for ablations in
    `agentstate eval` only, never reachable from the command line): every search match that
    is not purged comes back, whatever its permission, scope, status or relevance.
    `dense` (the default): where the `dense` extra is installed, the lexical match is fused
    with the memory versions nearest in meaning (`search.fused_memory_rows`), as the event
    search is; off, the match stays lexical (forgetting by query does not act on meaning).
    Raises InvalidInput for an empty or punctuation-only
    query, an unknown kind or include value; an undeclared principal is InvalidInput too.
    """
    scopes = _checked_filters(store, limit, kinds, include, scopes, context)
    who = acting(store, principal)
    found = searched(store, query, dense=dense)
    plan, matches, rows = found.plan, found.matches, found.rows
    relevance = dict(matches)
    now = store.now()
    min_relevance = store.settings.memory.min_relevance

    withheld: dict[str, int] = {}
    visible: list[tuple[MemoryVersion, float, float]] = []  # row, relevance, specificity
    for row_id, _ in matches:
        row = rows.get(row_id)
        if row is None or row.purged:
            continue
        if kinds and row.kind not in kinds:
            continue
        if scopes and not any(fnmatch.fnmatchcase(row.scope, p) for p in scopes):
            continue
        if not gate:
            visible.append((row, relevance[row_id], scope_applies(row.scope, context) or 0.0))
            continue
        reason, specificity = _gate_decision(row, who, context, include, now)
        if reason is None:
            visible.append((row, relevance[row_id], specificity))
        elif relevance[row_id] >= min_relevance:
            withheld[reason] = withheld.get(reason, 0) + 1

    kept = _relevant(visible, min_relevance if gate else None, withheld)
    evidence = found.evidence_of(store, [row.row for row, _, _ in kept])
    hits = [_hit(row, rel, spec, now, evidence[row.row]) for row, rel, spec in kept]
    _flag_contests(found.chain_of(store), hits, now)
    hits.sort(key=lambda h: (-h.score, h.ref))
    hits = _place_contested(hits)[:limit]
    return RecallResult(
        # The answer never echoes a secret back.
        query=redact_secrets(plan.query), principal=who.name, hits=hits,
        withheld={k: withheld[k] for k in sorted(withheld)}, matched_nothing=not hits,
        pruned_terms=plan.stop_words + plan.common,
    )


@dataclass
class Searched:
    """What a memory search read for one query: its plan, the matching rows (lexical, fused
    with the dense ones where asked) with their relevance, the records of those rows, and —
    filled as the gate shows them — their evidence and their chains' versions. None of it
    depends on the time, the principal or the scope: the gate decides on those afresh."""

    plan: Any
    matches: list[tuple[int, float]]
    rows: dict[int, MemoryVersion]
    evidence: dict[int, list[Evidence]] = field(default_factory=dict)
    chains: dict[str, list[MemoryVersion]] = field(default_factory=dict)

    def evidence_of(self, store: Store, rows: list[int]) -> dict[int, list[Evidence]]:
        missing = [r for r in rows if r not in self.evidence]
        if missing:
            self.evidence.update(load_evidence(store, missing))
        return {r: self.evidence[r] for r in rows}

    def chain_of(self, store: Store) -> Callable[[str], list[MemoryVersion]]:
        def chain(memory_id: str) -> list[MemoryVersion]:
            if memory_id not in self.chains:
                self.chains[memory_id] = chain_rows(store, memory_id)
            return self.chains[memory_id]
        return chain


def searched(store: Store, query: str, *, dense: bool) -> Searched:
    """The memory search for `query`, kept per process while no memory version, evidence
    or vector has changed since (`memory_changes`, m043, and the database file's identity:
    store/kept.py): a long-lived process (the MCP server) asks the same task query on every
    `context` call. Raises InvalidInput for a query with nothing to search for."""
    from agentstate.store.kept import kept

    return kept(store.conn, "memory search", memory_changes, (query, dense),
                lambda: _search(store, query, dense))


def memory_changes(conn: Any) -> int | None:
    """The count m043's triggers keep of every change to a memory version, its evidence or
    its vector: what a process keeps of the memories is valid while it has not moved
    (store/kept.py). None on a store opened without migrating to it."""
    try:
        row = conn.execute("SELECT changes FROM memory_changes WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])


def _search(store: Store, query: str, dense: bool) -> Searched:
    from agentstate.memory.query_plan import MEMORIES, plan_query
    from agentstate.memory.search import fused_memory_rows, search_memory_rows

    plan = plan_query(store, query, MEMORIES)
    matches = search_memory_rows(store, query, cap=CANDIDATES, plan=plan)
    if dense:
        matches = fused_memory_rows(store, query, matches, cap=CANDIDATES)
    return Searched(plan, matches, _load_rows(store, [row for row, _ in matches]))


def _checked_filters(store: Store, limit: int, kinds: list[str] | tuple[str, ...] | None,
                     include: list[str] | tuple[str, ...],
                     scopes: list[str] | tuple[str, ...] | None,
                     context: dict[str, Any] | None) -> list[str]:
    """Refuse a bad limit, kind, include value, scope filter or context run; the scope
    filters as checked."""
    from agentstate.memory.fields import validate_scope_filter

    if limit < 1:
        raise InvalidInput("--limit must be at least 1")
    for kind in kinds or ():
        if kind not in KINDS:
            raise InvalidInput(f"unknown memory kind {kind!r}: expected {', '.join(KINDS)}")
    for status in include:
        if status not in INCLUDABLE:
            raise InvalidInput(
                f"cannot --include {status!r}: expected some of {', '.join(INCLUDABLE)}"
            )
    checked = [validate_scope_filter(store, p) for p in scopes or ()]
    if context and context.get("run"):
        from agentstate.runs.log import get_run

        get_run(store, context["run"])  # an unknown run is an error, not "nothing applies"
    return checked


def _gate_decision(row: MemoryVersion, who: Principal, context: dict[str, Any] | None,
                   include: list[str] | tuple[str, ...], now: str) -> tuple[str | None, float]:
    """The read gate on one row: (None, its scope's specificity) when it may be shown, else
    (the reason it is withheld, 0)."""
    if not who.can_read(row.scope):
        return "permission", 0.0
    specificity = scope_applies(row.scope, context)
    memory_status = effective_status(row.status, row.valid_until, now)
    if specificity is None:
        return "out_of_scope", 0.0
    if memory_status in CURRENT_STATUSES or memory_status in include:
        return None, specificity
    return memory_status, 0.0


def _relevant(visible: list[tuple[MemoryVersion, float, float]], min_relevance: float | None,
              withheld: dict[str, int]) -> list[tuple[MemoryVersion, float, float]]:
    """Relevance scaled to the best hit; below `min_relevance` (None: no floor) a hit is
    withheld as low_relevance."""
    best = max((rel for _, rel, _ in visible), default=0.0)
    kept = []
    for row, rel, specificity in visible:
        scaled = rel / best if best else 0.0
        if min_relevance is not None and scaled < min_relevance:
            withheld["low_relevance"] = withheld.get("low_relevance", 0) + 1
            continue
        kept.append((row, scaled, specificity))
    return kept


# Statuses (effective, at read time) of a version that no longer holds: what it says is not
# current, and neither is the event it was written from.
LAPSED = {"expired": "expired", MemoryStatus.SUPERSEDED: "was superseded",
          MemoryStatus.FORGOTTEN: "was forgotten"}


def lapsed_sources(store: Store, event_refs: list[str]) -> dict[str, str]:
    """The events among `event_refs` that are evidence only of memory versions that no longer
    hold (expired, superseded or forgotten), each with why (`evidence of mem:…@vN, which
    expired 2026-03-02`). An event also cited by a version that still holds — or waits for
    confirmation, or was quarantined (its own flags say so) — is not lapsed."""
    if not event_refs:
        return {}
    now = store.now()
    lapsed: dict[str, str] = {}
    holding: set[str] = set()
    marks = ",".join("?" * len(event_refs))
    for ref, memory_id, version, status, until in store.conn.execute(
        "SELECT e.ref, m.id, m.version, m.status, m.valid_until FROM memory_evidence e "
        f"JOIN memories m ON m.row = e.memory_row WHERE e.ref IN ({marks}) ORDER BY m.row",
        list(event_refs),
    ):
        state = effective_status(status, until, now)
        if state not in LAPSED:
            holding.add(ref)
            continue
        why = LAPSED[state] + (f" {until[:10]}" if state == "expired" else "")
        lapsed.setdefault(ref, f"evidence of {make_ref('mem', memory_id, version)}, which {why}")
    return {ref: why for ref, why in lapsed.items() if ref not in holding}


def _load_rows(store: Store, row_ids: list[int]) -> dict[int, MemoryVersion]:
    if not row_ids:
        return {}
    marks = ",".join("?" * len(row_ids))
    return {r.row: r for r in select_versions(store, f"WHERE row IN ({marks})", row_ids)}


def _hit(row: MemoryVersion, relevance: float, specificity: float, now: str,
         evidence: list[Evidence]) -> MemoryHit:
    memory = row_to_memory(row, now, evidence)
    age = _age_days(now, memory.last_confirmed)
    recency = math.pow(0.5, age / RECENCY_HALF_LIFE_DAYS)
    score = relevance * (0.55 + 0.15 * recency + 0.15 * memory.confidence + 0.15 * specificity)
    flags = [] if memory.status in CURRENT_STATUSES else [f"included:{memory.status}"]
    if memory.status == MemoryStatus.CONTESTED:
        flags.append("contested")
    return MemoryHit(
        ref=memory.ref, id=memory.id, version=memory.version, kind=memory.kind, key=memory.key,
        scope=memory.scope, text=memory.text, source=memory.source,
        evidence=[e.ref for e in evidence], confidence=memory.confidence, status=memory.status,
        created=memory.created, last_confirmed=memory.last_confirmed, age_days=round(age, 2),
        valid_until=memory.valid_until, score=round(score, 4), relevance=round(relevance, 4),
        flags=flags,
    )


def _flag_contests(chain: Callable[[str], list[MemoryVersion]], hits: list[MemoryHit],
                   now: str) -> None:
    """Link contested versions and the current version of the same chain, both ways
    (`chain`: a chain's versions, oldest first)."""
    chains = {h.id for h in hits if h.status == MemoryStatus.CONTESTED}
    for memory_id in chains:
        rows = chain(memory_id)
        current = current_memory_version([r for r in rows if r.status == MemoryStatus.ACTIVE], now)
        if current is None:
            continue
        current_ref = make_ref("mem", current.id, current.version)
        for hit in hits:
            if hit.id != memory_id:
                continue
            if hit.status == MemoryStatus.CONTESTED:
                hit.contests = current_ref
            elif hit.ref == current_ref:
                hit.contested_by = [make_ref("mem", r.id, r.version) for r in rows
                                    if r.status == MemoryStatus.CONTESTED]
                hit.flags.append("has_contest")


def _place_contested(hits: list[MemoryHit]) -> list[MemoryHit]:
    """Put each contested version right after the current version it contests."""
    by_ref = {h.ref: h for h in hits}
    placed: list[MemoryHit] = []
    # Each current version's contesters in rank order, found in one pass (a pass per hit
    # was quadratic in the ~200 candidates).
    contesters: dict[str, list[MemoryHit]] = {}
    for hit in hits:
        if hit.contests and hit.contests in by_ref:
            contesters.setdefault(hit.contests, []).append(hit)
    moved = {h.ref for group in contesters.values() for h in group}
    for hit in hits:
        if hit.ref in moved:
            continue
        placed.append(hit)
        placed.extend(contesters.get(hit.ref, ()))
    return placed
