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
        if any(c.group for c in items):
            items = _grouped(items)
        if items:
            result.append((name, items))
    return result


def _grouped(items: list[Candidate]) -> list[Candidate]:
    """Items sharing a group header (evidence of one run and source) together, the group
    where its strongest item would be, and in time order inside it (a conversation reads
    forward, and a hit sits next to the turns around it)."""
    rank: dict[str, int] = {}
    members: dict[str, list[Candidate]] = {}
    for n, cand in enumerate(items):  # strongest first
        key = cand.group or f"\0{n}"
        rank.setdefault(key, n)
        members.setdefault(key, []).append(cand)
    out: list[Candidate] = []
    for key in sorted(rank, key=rank.__getitem__):
        out += sorted(members[key], key=lambda c: (c.chrono, c.ref)) if key[0] != "\0" \
            else members[key]
    return out


def assign_positions(candidates: list[Candidate]) -> None:
    """Number placed fragments 1..n in text order; dropped ones get no position."""
    for cand in candidates:
        cand.position = None
    position = 0
    for _section, items in placed(candidates):
        for cand in items:
            position += 1
            cand.position = position
