"""Allocation costs an evidence line as the text prints it, so a pack is filled to its
budget: no item is left out for want of room the text still has (issue 23, eleventh
round — a token of margin on every line whose day the group prints once left ~3.6% of
an 8,000-token pack empty)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.config import TokenSettings
from agentstate.context.budgeter import allocate
from agentstate.context.candidates import Candidate
from agentstate.tokens import counter_for

COUNTER = counter_for(TokenSettings())
GROUP = "### run:m9s346q3d2 · user (trusted)"
TAIL = " · 2026-01-15"
WORDS = ("garden", "tomato", "bread", "lisbon", "trip", "dog", "walked", "blue", "we",
         "the", "made", "a", "cake", "for", "her", "birthday", "yesterday", "and")


def _items(texts: list[str]) -> list[Candidate]:
    """One evidence line per text, all of one group and day (the day printed once)."""
    out = []
    for i, text in enumerate(texts):
        line = f"- [#{i + 1}{TAIL}] {text}"
        out.append(Candidate(
            ref=f"evt:{i:06d}", cls="evidence", section="evidence",
            score=round(1 - i / (len(texts) + 1), 6), full=None, compressed=line,
            group=GROUP, tail=TAIL, shown=f"#{i + 1}", chrono=("2026-01-15", i),
            order=(i, f"evt:{i:06d}")))
    return out


def _line_cost(cand: Candidate) -> int:
    """What the line adds to the text once its group and day are printed."""
    assert cand.compressed is not None
    return COUNTER.count(cand.compressed.replace(TAIL, "") + "\n")


def _left_out_with_room(items: list[Candidate], tokens: int, budget: int) -> list[str]:
    return [c.ref for c in items if c.decision == "dropped" and c.reason == "budget"
            and _line_cost(c) + 1 < budget - tokens]


def test_a_pack_of_many_lines_is_filled_to_its_budget():
    texts = [f"turn {i}: the garden had tomatoes number {i} and a blue door" for i in range(400)]
    items = _items(texts)
    allocation = allocate(items, 2_000, COUNTER.count)
    assert allocation.tokens <= 2_000
    placed = [c for c in items if c.decision == "compressed"]
    assert len(placed) > 80
    assert any(c.decision == "dropped" for c in items)
    # Every line costs ~18 tokens: a pack left with more room than one line could have
    # held the next one.
    assert 2_000 - allocation.tokens <= max(_line_cost(c) for c in items), allocation.tokens
    assert not _left_out_with_room(items, allocation.tokens, 2_000)


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join),
                      min_size=60, max_size=160),
       budget=st.integers(min_value=300, max_value=1_500))
def test_no_line_is_left_out_for_room_the_text_still_has(texts, budget):
    items = _items(texts)
    allocation = allocate(items, budget, COUNTER.count)
    assert allocation.tokens <= budget
    assert COUNTER.count(allocation.text) == allocation.tokens
    assert not _left_out_with_room(items, allocation.tokens, budget)
