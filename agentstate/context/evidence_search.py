"""A pack's evidence: memories through the read gate, then past events — how deep the event
search goes for the room evidence has, how much the dense ranking weighs there, the hits'
neighbours, and the candidates event_items.py makes of them.

assemble.py calls `gather_evidence` once per pack with a query; the constants here size
the search by room (docs/evaluation.md, issue 23's rounds, gives the measurement behind
each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentstate.config import ContextSettings
from agentstate.context import event_items
from agentstate.context.budgeter import CountMany, room_below
from agentstate.context.candidates import Candidate
from agentstate.context.compression import question_kind
from agentstate.context.sources import memory_evidence
from agentstate.errors import InvalidInput
from agentstate.store.db import Store


@dataclass(frozen=True)
class EvidenceSwitches:
    """The event search's parts an ablation may turn off (see build_context)."""

    dense: bool = True
    speakers: bool = True
    answer_lines: bool = True


def gather_evidence(store: Store, query: str, principal: str, scope: dict[str, Any] | None,
              skip: set[str], candidates: list[Candidate],
              sizing: tuple[int, tuple[str, ...], CountMany], *, gate: bool,
              switches: EvidenceSwitches
              ) -> tuple[list[Candidate], dict[str, int]]:
    """Add the evidence candidates (memories through the read gate, then past events) to
    `candidates`; return the memory hits and what the read gate withheld. `sizing` is what
    sizes the event search: (budget, class order, the counter)."""
    budget, order, count_many = sizing
    settings = store.settings.context
    mem_cands, withheld = _memory_evidence(store, query, principal, scope, settings, skip,
                                           gate=gate, dense=switches.dense)
    candidates += mem_cands
    # A hit that is also one of the run's own fragments (trajectory, task state) gives
    # way to it; any other repeat is dropped only when its copy is in the text
    # (`_link_duplicates`, decided in allocation). The search is sized by the room the
    # classes allocated before evidence leave.
    room = room_below("evidence", candidates, budget, order, count_many)
    candidates += _event_evidence(store, query, settings, room, gate=gate,
                                  dense=switches.dense, speakers=switches.speakers,
                                  answer_lines=switches.answer_lines)
    return [c for c in mem_cands if c.ref.startswith("mem:")], withheld


# The event search's pool grows with the room evidence has (the budget less the classes
# allocated before it): about one hit per this many tokens (the shortest one-line form of an
# event), so a large budget is never starved by a fixed top-K, and a budget the task state
# fills does not gather hundreds of hits it cannot show; the `[context] evidence_events`
# setting is the floor and EVENT_POOL_MAX the ceiling.
TOKENS_PER_HIT = 25
EVENT_POOL_MAX = 2_000


def event_pool(budget: int, floor: int) -> int:
    """How many event hits to ask the search for at this budget (0: event evidence off)."""
    if not floor:
        return 0
    return min(EVENT_POOL_MAX, max(floor, budget // TOKENS_PER_HIT))


# The dense signal's weight in the fusion grows with the room evidence has. A small room
# holds the top ~30-70 items, and there the lexical hits (which share the question's words)
# and their neighbours are the better bet: dense hits crowd them out (held-out data: 0.764
# -> 0.751 at 1,000 tokens with plain RRF; on 150 dev questions a small weight cost 0.013
# at 1,000 and 0.017 at 2,000 tokens), so below DENSE_FROM_ROOM the search stays lexical
# (unless the lexical hits hold little of the question: memory/search.py, WEAK_LEXICAL).
# From there the weight rises linearly to DENSE_MAX_WEIGHT at DENSE_FULL_ROOM, where a pack
# goes far down both rankings and finds the paraphrases BM25 misses (0.891 -> 0.946 at
# 8,000 on the same questions; 0.921 -> 0.968 on the second corpus).
DENSE_FROM_ROOM = 3_000
DENSE_FULL_ROOM = 8_000
DENSE_MAX_WEIGHT = 0.5


# From WIDE_FROM_ROOM tokens of room the event search asks for WIDE_POOL times the pool, so
# the dense ranking's deeper hits reach the budgeter: the evidence `full` missed on the
# second corpus stood 80th-350th in the dense ranking, beyond the pool of one hit per 25
# tokens. At 8,000 tokens it helps both corpora (all 760 dev questions 0.924 -> 0.958, the
# second corpus 0.990 -> 1.000); at 4,000 it helped the second corpus (0.868 -> 0.974) and
# cost the dev split (0.867 -> 0.852, and still 0.852 with the pool widened by only 12%
# there), so smaller rooms keep the pool as it was (docs/evaluation.md, fourth round).
WIDE_FROM_ROOM = 6_000
WIDE_POOL = 2
# Where the question's content words are in none of the best lexical hits (only a name is:
# memory/search.py, EMPTY_LEXICAL), the pool is this many times the room's, at any room:
# the lexical hits are then a flat band of name matches, and the dense ranking, which
# finds the evidence, needs to go deep (docs/evaluation.md, fifth and sixth rounds).
EMPTY_LEXICAL_POOL = 3


def dense_weight(room: int) -> float:
    """The dense ranking's weight in the fusion for evidence with `room` tokens."""
    share = (room - DENSE_FROM_ROOM) / (DENSE_FULL_ROOM - DENSE_FROM_ROOM)
    return DENSE_MAX_WEIGHT * min(1.0, max(0.0, share))


def _event_evidence(store: Store, query: str, settings: ContextSettings, room: int,
                    *, gate: bool = True, dense: bool = True, speakers: bool = True,
                    answer_lines: bool = True) -> list[Candidate]:
    from agentstate.memory.recall import lapsed_sources
    from agentstate.memory.search import ranked_events
    from agentstate.runs.lookups import event_positions, resolved_among, superseded_among

    base = pool = event_pool(room, settings.evidence_events)
    if not pool:
        return []
    widened = dense and room >= WIDE_FROM_ROOM
    if widened:
        pool = min(EVENT_POOL_MAX, pool * WIDE_POOL)
    # Nothing searchable in the query (only punctuation) and no dense signal: no hits.
    hits = ranked_events(store, query, limit=pool, max_terms=settings.evidence_terms,
                         dense_weight=dense_weight(room) if dense else None,
                         speakers=speakers,
                         empty_limit=min(EVENT_POOL_MAX, base * EMPTY_LEXICAL_POOL))
    if not hits:
        return []
    neighbours = _neighbours(store, hits)
    ids = [h.ref.removeprefix("evt:") for h in hits + neighbours]
    superseded = {f"evt:{i}" for i in superseded_among(store, ids)}
    resolved = {f"evt:{i}" for i in resolved_among(store, ids)}
    lapsed = lapsed_sources(store, [f"evt:{i}" for i in ids])
    # Each event's place in its run: its label is `#N` under the run's group header.
    seqs = {f"evt:{i}": seq for i, (_, seq) in event_positions(store, ids).items()}
    return event_items.event_evidence(hits, neighbours, superseded=superseded,
                                      resolved=resolved, lapsed=lapsed, gate=gate, seqs=seqs,
                                      stems=_query_stems(query), room=room,
                                      answer_lines=answer_lines, asks=question_kind(query),
                                      widened=widened)


def _neighbours(store: Store, hits: list[Any]) -> list[Any]:
    """The hits' neighbours (`event_items.neighbour_hits`), kept per process under the
    event log's state (memory/indexes.py, `event_index_state`: they are the events around
    each hit in its run, read from the log alone) and the hits themselves, refs and scores: a
    long-lived process (the MCP server) ranks the same hits on every call of a run until
    the agent logs something. Callers must not change the kept hits."""
    from agentstate.memory.indexes import event_index_state
    from agentstate.store.kept import kept

    return kept(store.conn, "event neighbours", event_index_state,
                tuple((h.ref, h.score) for h in hits),
                lambda: event_items.neighbour_hits(store, hits))


def _query_stems(query: str) -> tuple[str, ...]:
    """The query's content words as index terms (for picking a hit's matching sentence)."""
    from agentstate.memory.terms import STOP_WORDS, split_query, stem

    words = [w for w in split_query(query)[0] if w not in STOP_WORDS]
    return tuple(dict.fromkeys(stem(w) for w in words[:64]))


def _memory_evidence(store: Store, query: str, principal: str, scope_context: dict[str, Any] | None,
                     settings: ContextSettings, skip: set[str], *, gate: bool = True,
                     dense: bool = True) -> tuple[list[Candidate], dict[str, int]]:
    """Memories through the read gate (`recall`), as evidence candidates.

    The gate decides permission, scope, status, time and relevance; what it withholds comes
    back only as counts by reason (never text or refs), kept in the pack's `withheld`.
    """
    from agentstate.memory.recall import recall

    if not settings.evidence_memories:
        return [], {}
    try:
        result = recall(store, query, limit=settings.evidence_memories, principal=principal,
                        context=scope_context, gate=gate, dense=dense)
    except InvalidInput:
        # Only a query with nothing searchable lands here (the principal was checked
        # already): no memory evidence rather than a failed pack.
        return [], {}
    return memory_evidence(result.hits, skip=skip), dict(result.withheld)
