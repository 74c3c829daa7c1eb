"""The evidence section's title says what `#N` is only where a line of the section is
labelled so (issue 23, tenth round): a pack of memories alone does not pay for it, and
allocation costs the note where the first `#N` line is placed."""

from __future__ import annotations

from agentstate.config import TokenSettings
from agentstate.context import budgeter
from agentstate.context.assemble import build_context
from agentstate.context.budgeter import allocate
from agentstate.context.candidates import (
    NUMBERED_EVIDENCE_TITLE,
    SECTION_TITLES,
    Candidate,
)
from agentstate.memory.write import remember
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for

COUNTER = counter_for(TokenSettings())
NOTE = "#N is event"


def _pack(store, query: str):
    return build_context(store, query=query, budget=2_000, save=False,
                         principal=resolve_principal(store))


def test_a_pack_of_memories_alone_has_no_note_on_numbered_lines(store):
    remember(store, "the billing export runs nightly at two", kind="fact", source="user",
             principal=resolve_principal(store))
    pack = _pack(store, "billing export")
    assert SECTION_TITLES["evidence"] in pack.text.splitlines()
    assert NOTE not in pack.text
    assert "#N" not in SECTION_TITLES["evidence"]


def test_a_pack_with_numbered_lines_says_what_they_are(store):
    old, _ = start_run(store, "old work")
    append_event(store, old.ref, "note", "the billing export failed on the fifth")
    remember(store, "the billing export runs nightly at two", kind="fact", source="user",
             principal=resolve_principal(store))
    start_run(store, "now")
    pack = _pack(store, "billing export")
    assert NUMBERED_EVIDENCE_TITLE in pack.text.splitlines()
    assert any(line.startswith("- [#1") for line in pack.text.splitlines())


def _item(n: int, *, numbered: bool) -> Candidate:
    ref = f"evt:{n:06d}" if numbered else f"mem:{n:06d}"
    label = f"#{n}" if numbered else ref
    return Candidate(ref=ref, cls="evidence", section="evidence", score=1 - n / 100,
                     full=f"- [{label}] the billing export note number {n} of the day",
                     group="### run:aaaa · user (trusted)" if numbered else "",
                     shown=f"#{n}" if numbered else "", order=(n, ref))


def test_allocation_costs_the_note_where_the_first_numbered_line_comes(monkeypatch):
    """A memory opens the section, `#N` lines follow, and the budget is a token short of
    them all: allocation, costing the note with the first `#N` line, leaves the last one
    out itself — the text it measures is within the budget at once, nothing demoted."""
    renders = []

    def counted(*args, **kwargs):
        renders.append(1)
        return render(*args, **kwargs)

    render = budgeter.render
    items = [_item(0, numbered=False)] + [_item(n, numbered=True) for n in range(1, 6)]
    full = COUNTER.count(allocate(items, 4_000, COUNTER.count).text)
    monkeypatch.setattr(budgeter, "render", counted)
    items = [_item(0, numbered=False)] + [_item(n, numbered=True) for n in range(1, 6)]
    allocation = allocate(items, full - 1, COUNTER.count)  # one line less than all
    assert NUMBERED_EVIDENCE_TITLE in allocation.text
    assert [c.decision for c in items] == ["included"] * 5 + ["dropped"]
    assert len(renders) == 2  # the pinned part, then the pack once: no demotion
