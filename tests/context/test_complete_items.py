"""Complete items at the top of the evidence: the strongest hits, one per COMPLETE_PER
tokens of room, are placed as their answer line (the matched sentence and what completes
it) before any item below them; the shorter line only where the answer line does not fit.
Below them, items are placed as their shorter lines and lengthened only in room left over
(test_answer_line_room.py)."""

from __future__ import annotations

import pytest

from agentstate.config import TokenSettings
from agentstate.context.budgeter import allocate
from agentstate.context.candidates import Candidate
from agentstate.context.event_items import (
    COMPLETE_PER,
    CONFIDENT_CAP_PER,
    CONFIDENT_SHARE,
    DEFAULT_CHARS,
    SHORT_LINE_CHARS,
    WHOLE_HITS,
    WHOLE_PER,
    event_evidence,
    one_line_forms,
)
from agentstate.memory.search import EventHit
from agentstate.tokens import counter_for

COUNTER = counter_for(TokenSettings())
WORDS = "kiln pottery bakery morning evening Monday lovely warm grey street garden".split()


def _items(scores: list[float], *, first: set[int], extra: int = 12) -> list[Candidate]:
    """Evidence items of six words each, whose answer line adds `extra` words; those in
    `first` are complete items (answer line first)."""
    out = []
    for n, score in enumerate(scores):
        ref = f"evt:{n:06d}"
        head = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(6))
        tail = " ".join(["croissants muffins tarts"] * (extra // 3))
        short = f"- [{ref}] {head} …"
        out.append(Candidate(
            ref=ref, cls="evidence", section="evidence", score=score, full=None,
            compressed=f"- [{ref}] {head} {tail}", short=short, answer_first=n in first,
            pointer=f"- {ref}: `agentstate trace {ref}`", order=(-score, ref)))
    return out


def _in_text(cands: list[Candidate]) -> dict[str, Candidate]:
    return {c.ref: c for c in cands if c.decision in ("included", "compressed")}


SCORES = [1.0, 0.9, 0.8, 0.7, 0.6, 0.55, 0.5]


def _room_for_short_lines() -> int:
    """A budget with room for exactly the seven shorter lines."""
    return allocate([_strip(c) for c in _items(SCORES, first=set())], 2_000,
                    COUNTER.count).tokens


def _strip(cand: Candidate) -> Candidate:
    cand.compressed, cand.short = cand.short, None
    return cand


def test_a_complete_item_takes_its_answer_line_before_the_items_below_it():
    budget = _room_for_short_lines()
    # Not complete: every item fits as its shorter line, and no answer line comes before
    # an item scoring above 0.4 of it, so none is given.
    plain = _items(SCORES, first=set())
    allocate(plain, budget, COUNTER.count)
    assert len(_in_text(plain)) == 7
    assert all(c.form == c.short for c in plain)
    # Complete: the strongest item shows its answer, the weakest gives way.
    cands = _items(SCORES, first={0})
    allocate(cands, budget, COUNTER.count)
    placed = _in_text(cands)
    assert placed["evt:000000"].form == placed["evt:000000"].compressed
    assert "croissants" in (placed["evt:000000"].form or "")
    assert "evt:000006" not in placed
    assert all(c.form == c.short for ref, c in placed.items() if ref != "evt:000000")


def test_a_complete_item_whose_answer_line_cannot_fit_keeps_its_shorter_line():
    # Room for the seven shorter lines; item 0's answer line is longer than the room.
    budget = _room_for_short_lines()
    cands = _items(SCORES, first={0}, extra=3 * budget)
    allocate(cands, budget, COUNTER.count)
    placed = _in_text(cands)
    assert len(placed) == 7
    assert placed["evt:000000"].form == placed["evt:000000"].short


def _hits(n: int, fall: float = 0.4) -> list[EventHit]:
    """`n` hits, each scoring `fall` times the one above it."""
    return [EventHit(ref=f"evt:h{i:04d}", run="run:r", kind="note",
                     text=f"Sven: The bakery on street {i} was lovely this morning. We had "
                          "croissants, muffins, and tarts with a friend who came by later.",
                     source="user", ts="2024-01-02T10:00:00Z", score=fall ** i)
            for i in range(n)]


def _neighbours(n: int) -> list[EventHit]:
    out = []
    for i in range(n):
        hit = EventHit(ref=f"evt:n{i:04d}", run="run:r", kind="note",
                       text=f"Dana: Sounds lovely, what did you have there on day {i}? "
                            "Tell me everything about it, I want to know.",
                       source="user", ts="2024-01-02T10:00:00Z", score=0.5)
        hit.near = "evt:h0000"  # type: ignore[attr-defined]
        hit.weight = 0.5  # type: ignore[attr-defined]
        out.append(hit)
    return out


@pytest.mark.parametrize("room, complete", [
    (None, 0), (0, 0), (CONFIDENT_CAP_PER - 1, 0),
    (CONFIDENT_CAP_PER, 1),  # the best hit is as strong as itself: confident
    (COMPLETE_PER - 1, 1), (COMPLETE_PER, 1), (2 * COMPLETE_PER, 2),
    (1_000, 1_000 // COMPLETE_PER),
    (2_000, min(30, 2_000 // COMPLETE_PER)), (8_000, 30),  # never more than the hits there are
])
def test_the_strongest_hits_one_per_complete_per_tokens_are_complete(room, complete):
    # Each hit scores 0.4 of the one above: only the best is confident.
    cands = event_evidence(_hits(30), _neighbours(5), superseded=set(),
                           stems=("bakeri",), room=room)
    first = [c.ref for c in cands if c.answer_first]
    assert first == [f"evt:h{i:04d}" for i in range(complete)]  # the strongest, in rank order
    assert not any(c.answer_first for c in cands if c.ref.startswith("evt:n"))
    for cand in cands:
        # A complete item has a longer line to show first, and a shorter one to fall back to.
        assert not cand.answer_first or (cand.short and cand.compressed != cand.short)


@pytest.mark.parametrize("fall, room, complete", [
    # Scores falling slowly: every hit at CONFIDENT_SHARE of the best or more is complete,
    # beyond the count per room (20 at 1,000 tokens) ...
    (0.98, 1_000, 35),   # 0.98 ** 34 = 0.503, 0.98 ** 35 = 0.493
    (0.97, 1_000, 23),   # 0.97 ** 22 = 0.512, 0.97 ** 23 = 0.496
    # ... at most one per CONFIDENT_CAP_PER tokens of room ...
    (0.99, 1_000, 1_000 // CONFIDENT_CAP_PER),
    # ... and never fewer than the count.
    (0.9, 1_000, 1_000 // COMPLETE_PER),
])
def test_where_the_ranking_is_confident_more_hits_are_complete(fall, room, complete):
    assert CONFIDENT_SHARE == 0.5  # the table's figures are reckoned for it
    cands = event_evidence(_hits(60, fall), _neighbours(5), superseded=set(),
                           stems=("bakeri",), room=room)
    first = [c.ref for c in cands if c.answer_first]
    assert first == [f"evt:h{i:04d}" for i in range(complete)]


def test_without_answer_lines_no_item_is_complete():
    cands = event_evidence(_hits(10), superseded=set(), stems=("bakeri",), room=8_000,
                           answer_lines=False)
    assert not any(c.answer_first for c in cands)


@pytest.mark.parametrize("room, whole, chars", [
    (None, WHOLE_HITS, DEFAULT_CHARS),        # room not known: the defaults
    (0, 0, SHORT_LINE_CHARS), (999, 0, SHORT_LINE_CHARS),  # a small room: lines only
    (1_000, 1_000 // WHOLE_PER, DEFAULT_CHARS),
    (1_800, 1_800 // WHOLE_PER, DEFAULT_CHARS),
    (3_800, 3_800 // WHOLE_PER, DEFAULT_CHARS),
    (7_800, 7_800 // WHOLE_PER, DEFAULT_CHARS),  # more than three where the room is large
])
def test_whole_hits_grow_with_the_room_from_a_thousand_tokens(room, whole, chars):
    assert one_line_forms(room) == (whole, chars)


@pytest.mark.parametrize("hits", [30, 3])
def test_the_whole_hits_are_the_strongest_and_never_a_neighbour(hits):
    # 30 hits: more than the room's whole ones; 3: fewer, the neighbours in the room left.
    cands = event_evidence(_hits(hits), _neighbours(5), superseded=set(),
                           stems=("bakeri",), room=4_000)
    with_full = [c.ref for c in cands if c.full is not None]
    assert with_full == [f"evt:h{i:04d}" for i in range(min(hits, 4_000 // WHOLE_PER))]
