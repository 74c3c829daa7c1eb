"""Markdown rendering of a pack. The text is a pure function of the placed fragments, so the
same inputs give the same bytes (and the same hash)."""

from __future__ import annotations

from agentstate.context.candidates import SECTION_TITLES, Candidate
from agentstate.context.placement import placed


def render_section(name: str, items: list[Candidate], header: str | None = None) -> str:
    title = header if header is not None else SECTION_TITLES[name]
    return title + "\n" + "\n".join(c.form or "" for c in items)


def render(candidates: list[Candidate], headers: dict[str, str] | None = None) -> str:
    """The pack text: sections in layout order, fragments in their section order."""
    headers = headers or {}
    out = ""
    for name, items in placed(candidates):
        block = render_section(name, items, headers.get(name))
        if out:
            # A pinned fragment keeps its own trailing newline (byte-identical); then only
            # one more newline is needed to leave a blank line between sections.
            out += "\n" if out.endswith("\n") else "\n\n"
        out += block
    if out and not out.endswith("\n"):
        out += "\n"
    return out
