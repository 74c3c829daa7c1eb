"""Markdown rendering of a pack. The text is a pure function of the placed fragments, so the
same inputs give the same bytes (and the same hash)."""

from __future__ import annotations

from agentstate.context.candidates import Candidate, section_title
from agentstate.context.essentials import join_sections
from agentstate.context.placement import placed


def _section_lines(items: list[Candidate]) -> list[str]:
    """A section's lines: evidence items of one run and source under one group line, with a
    label part that repeats the item above (same kind and date) printed once."""
    lines: list[str] = []
    group, tail = "", ""
    for cand in items:
        form = cand.form or ""
        mine = cand.group if cand.placed_section == cand.section else ""
        if mine != group:
            group, tail = mine, ""
            if mine:
                lines.append(mine)
        if mine and cand.tail:
            if cand.tail == tail:
                form = form.replace(f"{cand.label_ref}{cand.tail}]", f"{cand.label_ref}]", 1)
            tail = cand.tail
        lines.append(form)
    return lines


def render(candidates: list[Candidate], headers: dict[str, str] | None = None) -> str:
    """The pack text: sections in layout order, fragments in their section order, joined
    by the same rule as the essentials (context/essentials.py) so both read the same."""
    headers = headers or {}
    return join_sections(
        (section_title(name, any(c.shown for c in items), headers), _section_lines(items))
        for name, items in placed(candidates)
    )
