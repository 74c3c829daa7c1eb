"""Markdown rendering of a pack. The text is a pure function of the placed fragments, so the
same inputs give the same bytes (and the same hash)."""

from __future__ import annotations

from agentstate.context.candidates import SECTION_TITLES, Candidate
from agentstate.context.placement import placed
from agentstate.runs.essentials import join_sections


def render(candidates: list[Candidate], headers: dict[str, str] | None = None) -> str:
    """The pack text: sections in layout order, fragments in their section order, joined
    by the same rule as the essentials (runs/essentials.py) so both read the same."""
    headers = headers or {}
    return join_sections(
        (headers.get(name, SECTION_TITLES[name]), [c.form or "" for c in items])
        for name, items in placed(candidates)
    )
