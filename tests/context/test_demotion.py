"""Step 3 of allocation, demotion: however far the rendered text is over what allocation
costed, the loop ends, within the budget, in a bounded number of steps."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from agentstate.config import TokenSettings
from agentstate.context import rendering
from agentstate.context.budgeter import allocate
from agentstate.context.candidates import Candidate
from agentstate.tokens import counter_for

COUNTER = counter_for(TokenSettings())
GROUP = "### run:m9s346q3d2 · user (trusted)"
TAIL = " · 2026-01-15"


def _items(n: int) -> list[Candidate]:
    """Evidence lines of one group and day; every other one's answer line is its shorter
    line (a short turn shown whole either way)."""
    out = []
    for i in range(n):
        label = f"#{i + 1}{TAIL}"
        short = f"- [{label}] turn {i}: the garden had tomatoes number {i} …"
        answer = short if i % 2 else f"{short[:-2]} and some other words about it"
        out.append(Candidate(
            ref=f"evt:{i:06d}", cls="evidence", section="evidence", score=1 - i / n,
            full=None, compressed=answer, short=short, group=GROUP, tail=TAIL,
            shown=f"#{i + 1}", chrono=("2026-01-15", i), order=(i / n, f"evt:{i:06d}")))
    return out


@pytest.fixture
def deadline() -> Iterator[None]:
    """A loop that never ends fails here, in seconds, not at the suite's timeout."""
    def expired(*_: object) -> None:
        raise TimeoutError("demotion did not end within 20 s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _every_tail_printed(items: list[Candidate]) -> list[str]:
    """Rendering that prints the day on every line: more than allocation costs each one."""
    lines, group = [], ""
    for cand in items:
        if cand.group and cand.group != group:
            group = cand.group
            lines.append(group)
        lines.append(cand.form or "")
    return lines


def test_demotion_ends_within_the_budget_when_the_text_is_far_over_its_cost(
        monkeypatch, deadline):
    items = _items(200)
    monkeypatch.setattr(rendering, "_section_lines", _every_tail_printed)
    allocation = allocate(items, 1_000, COUNTER.count)
    assert allocation.tokens <= 1_000
    assert COUNTER.count(allocation.text) == allocation.tokens
    shown = [c for c in items if c.decision in ("included", "compressed")]
    assert 20 < len(shown) < 200  # demoted from the costed ~60 lines, not emptied


def test_a_group_prints_its_day_once_as_allocation_costs_it(deadline):
    """The day is printed once per group and day (rendering) and costed once (allocation),
    so the lines allocation placed are the lines shown: a pack near its budget, every
    item placed in its text, none demoted out after measuring."""
    items = _items(200)
    allocation = allocate(items, 1_000, COUNTER.count)
    assert 900 < allocation.tokens <= 1_000
    assert allocation.text.count(TAIL) == 1
    placed = [c for c in items if c.decision in ("included", "compressed")]
    assert all(c.form and (c.form in allocation.text or c.form.replace(TAIL, "") in allocation.text)
               for c in placed)
    assert len(placed) > 30
