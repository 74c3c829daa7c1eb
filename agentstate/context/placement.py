"""Placement: where each fragment goes in the text, and its position number.

Layout, top to bottom (see SECTIONS):

1. pinned — system instructions, the run's constraints, the user's preferences;
2. the goal, in one short section;
3. evidence, strongest first, so the weakest items sink toward the middle;
4. the skill and tool catalog, then the index of what did not fit;
5. the run's trajectory, oldest first, so the newest events sit near the end;
6. the task state restated — goal, diagnoses, open questions, pending verifications, work
   tree — as the last thing the model reads.

Models use the beginning and the end of a long context best and the middle worst ("lost in
the middle"), so what must not be missed is at the edges and what can be fetched again is in
the middle.
"""

from __future__ import annotations

from agentstate.context.candidates import SECTIONS, Candidate


def placed(candidates: list[Candidate]) -> list[tuple[str, list[Candidate]]]:
    """Placed candidates grouped by section, in text order (empty sections left out)."""
    groups: dict[str, list[Candidate]] = {name: [] for name in SECTIONS}
    for cand in candidates:
        if cand.form is not None and cand.decision != "dropped":
            groups[cand.placed_section].append(cand)
    result = []
    for name in SECTIONS:
        items = sorted(groups[name], key=lambda c: (c.order, c.ref))
        if items:
            result.append((name, items))
    return result


def assign_positions(candidates: list[Candidate]) -> None:
    """Number placed fragments 1..n in text order; dropped ones get no position."""
    for cand in candidates:
        cand.position = None
    position = 0
    for _section, items in placed(candidates):
        for cand in items:
            position += 1
            cand.position = position
