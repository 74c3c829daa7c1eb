"""Markdown rendering of a pack. The text is a pure function of the placed fragments, so the
same inputs give the same bytes (and the same hash)."""

from __future__ import annotations

from agentstate.context.candidates import SECTION_TITLES, Candidate
from agentstate.context.placement import placed


def render_section(name: str, items: list[Candidate], header: str | None = None) -> str:
    title = header if header is not None else SECTION_TITLES[name]
    lines = [title]
    group, tail = "", ""
    for cand in items:
        form = cand.form or ""
        mine = cand.group if cand.placed_section == cand.section else ""
        if mine != group:
            group, tail = mine, ""
            if mine:
                lines.append(mine)
        if mine and cand.tail:
            # A label part that repeats the item above (same kind and date) is printed once.
            if cand.tail == tail:
                form = form.replace(f"{cand.ref}{cand.tail}]", f"{cand.ref}]", 1)
            tail = cand.tail
        lines.append(form)
    return "\n".join(lines)


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
