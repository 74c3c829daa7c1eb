"""`agentstate resume`: what a new session needs to pick up an interrupted run.

The pack is built from the derived working state (see checkpoint.py), the work-tree drift
since the run's last recorded version, a handful of relevant recent event refs (not the
transcript) and the published skills that match the goal (metadata only).

Layout of the markdown (essentials first, then the rest in priority order, because
material at the start of a context is used best):

    # Resume run:… (status)                 optional, first to go in
    ## Goal                                  ┐ the task's essentials (context/essentials.py),
    ## Constraints                           │ the same text `context` keeps: never dropped;
    ## User preferences                      │ constraints and preferences byte-identical;
    ## Open questions                        │ the failing result's output excerpt and the
    ## Pending verifications                 │ drift's commit and file lists only when
    ## Failing tool results (+ excerpt)      │ they fit (their one-line forms always)
    ## Work-tree drift                       ┘
    ## Confirmed diagnoses                   ┐
    ## Failed verifications                  │ optional, in this priority order; under
    ## Last checkpoint                       │ --budget N whole items are dropped from
    ## Unconfirmed hypotheses (not facts)    │ the lowest priority up and listed by ref
    ## Matching skills                       │ under "Omitted for budget"
    ## Relevant recent events                │
    ## Not listed                            ┘ older task state past the per-group bound
    ## Omitted for budget

Hypotheses are only ever rendered under their own UNCONFIRMED heading.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentstate.context.essentials import TITLES as ESSENTIAL_TITLES
from agentstate.context.essentials import WHAT, Essentials, gather, join_sections, preference_ref
from agentstate.errors import BudgetTooSmall, InvalidInput, NotFound
from agentstate.output import visible
from agentstate.runs.checkpoint import StateItem, events_since, last_checkpoint, more_label
from agentstate.runs.log import Run, current_run, get_run
from agentstate.runs.lookups import active_run_ids, newest_live_events
from agentstate.runs.tool_results import open_failures, tool_failed
from agentstate.skills.catalog import match_skills
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref

# How much a kind matters when picking "relevant recent events" (recency breaks ties).
KIND_WEIGHT = {
    "decision": 3.0, "failed": 3.0, "verified": 2.0, "answer": 2.0, "observation": 2.0,
    "tool": 1.5, "note": 1.0, "skill_load": 1.0,
}
# Kinds already shown in their own sections (or as the checkpoint) are not repeated.
_SHOWN_ELSEWHERE = ("constraint", "diagnosis", "hypothesis", "question", "verify", "checkpoint")
GIST_CHARS = 100


@dataclass
class RecentEvent:
    ref: str
    kind: str
    ts: str
    gist: str  # first line, shortened: a pointer with a hint, not the transcript
    score: float


@dataclass
class SkillHit:
    name: str
    version: Any
    description: str
    ref: str
    score: float


@dataclass
class ResumePack:
    run: dict[str, Any]
    goal: str
    constraints: list[StateItem]
    pending_verifications: list[StateItem]
    open_questions: list[StateItem]
    diagnoses: list[StateItem]
    failed_verifications: list[StateItem]
    hypotheses: list[StateItem]
    drift: dict[str, Any]
    checkpoint: dict[str, Any] | None
    recent_events: list[RecentEvent]
    skills: list[SkillHit]
    skills_note: str | None = None
    failing_tools: list[dict[str, Any]] = field(default_factory=list)
    preferences: list[dict[str, Any]] = field(default_factory=list)
    not_listed: dict[str, int] = field(default_factory=dict)  # older items past the bound
    budget: dict[str, Any] | None = None
    omitted: list[str] = field(default_factory=list)
    compressed: list[str] = field(default_factory=list)  # parts shown in their short form
    text: str = ""
    pinned_text: str = ""
    # Memory versions waiting for the user's word (status → count; issue 25): named under
    # the header so a session start tells the user, never the model's evidence.
    review_queue: dict[str, int] = field(default_factory=dict)


# ---------------------------------------------------------------- gathering


def pick_run(store: Store, ref: str | None) -> Run:
    if ref:
        return get_run(store, ref)
    run = current_run(store)  # the one rule (runs/log.py): never another active run
    if run is None:
        active = active_run_ids(store, 3)
        others = (f" (still active, not current: {', '.join('run:' + a for a in active)})"
                  if active else "")
        raise NotFound(f"no unfinished run to resume{others}; name one: "
                       "`agentstate resume run:…`")
    return run


def _gist(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= GIST_CHARS else first[: GIST_CHARS - 1] + "…"


def recent_events(store: Store, run: Run, limit: int,
                  exclude: set[str] | None = None) -> list[RecentEvent]:
    """The most relevant of the run's newest events: weighted by kind, then recency (an
    event whose body `agentstate gc` collected has nothing left to show and is left out).

    `exclude` holds refs already shown elsewhere in the pack (failed verifications); open
    failing tool results have their own section too."""
    if limit <= 0:
        return []
    exclude = (exclude or set()) | {f.ref for f in open_failures(store, run)}
    # The run log's query now that resume lives above runs/ (runs/ owns the tables).
    rows = newest_live_events(store, run.id, _SHOWN_ELSEWHERE, limit * 4)
    rows = [r for r in rows if make_ref("evt", r[0]) not in exclude]
    scored = []
    for position, (eid, kind, ts, text, meta) in enumerate(rows):
        recency = 1.0 - position / max(len(rows), 1)
        weight = KIND_WEIGHT.get(kind, 1.0)
        if kind == "tool" and tool_failed(json.loads(meta or "{}")):
            weight += 1.0  # a failing tool call is worth more than a passing one
        scored.append((weight + 2.0 * recency, position, eid, kind, ts, text))
    best = sorted(scored, key=lambda s: (-s[0], s[1]))[:limit]
    best.sort(key=lambda s: -s[1])  # back to timeline order, oldest first
    return [
        RecentEvent(make_ref("evt", eid), kind, ts, _gist(text), round(score, 3))
        for score, _, eid, kind, ts, text in best
    ]


def matching_skills(store: Store, goal: str) -> tuple[list[SkillHit], str | None]:
    """Published skills matching the goal, via the skills catalog (metadata only)."""
    hits = []
    for hit in match_skills(store, goal, limit=3):
        hits.append(
            SkillHit(
                name=getattr(hit, "name", ""),
                version=getattr(hit, "version", None),
                description=getattr(hit, "description", ""),
                ref=getattr(hit, "ref", ""),
                score=float(getattr(hit, "score", 0.0) or 0.0),
            )
        )
    return hits, None


def build_pack(
    store: Store,
    ref: str | None = None,
    *,
    principal: Principal | str,
    budget: int | None = None,
    count: Callable[[str], int] | None = None,
    drift: dict[str, Any] | None = None,
    skills: list[SkillHit] | None = None,
) -> ResumePack:
    """Gather and render the resume pack; with `budget`, fit it within that many tokens.

    `principal` reads: its read scopes decide which preferences the pack shows (an entry
    point resolves it — CLI `--as`, the MCP server's principal, `agent` for hooks — and
    passes it down; nothing below falls back to the environment). `count` defaults to the
    store's configured token counter; `drift` and `skills` can be passed in (tests, or
    callers that already computed them).
    """
    if budget is not None and budget < 1:
        raise InvalidInput("--budget must be a positive number of tokens")
    run = pick_run(store, ref)
    ess = gather(store, run, principal=principal, drift=drift)
    state = ess.state
    assert state is not None and ess.drift is not None
    checkpoint = last_checkpoint(store, run)
    checkpoint_dict = None
    if checkpoint is not None:
        checkpoint_dict = {
            "ref": checkpoint.ref, "note": checkpoint.note, "created": checkpoint.created,
            "event_seq": checkpoint.event_seq,
            "events_since": events_since(store, checkpoint),
        }
    skills_note = None
    if skills is None:
        skills, skills_note = matching_skills(store, run.goal)
    pack = ResumePack(
        run={"ref": run.ref, "status": run.status, "created": run.created,
             "updated": run.updated, "ended": run.ended, "events": state.event_count},
        goal=run.goal,
        constraints=state.constraints,
        pending_verifications=state.pending_verifications,
        open_questions=state.open_questions,
        diagnoses=state.diagnoses,
        failed_verifications=state.failed_verifications,
        hypotheses=state.hypotheses,
        drift=ess.drift,
        checkpoint=checkpoint_dict,
        recent_events=recent_events(store, run, store.settings.resume.recent_events,
                                    exclude={i.ref for i in state.failed_verifications}),
        skills=skills,
        skills_note=skills_note,
        failing_tools=[vars(f) for f in ess.failures],
        preferences=[{"ref": preference_ref(p), "scope": p.scope, "text": p.text}
                     for p in ess.preferences],
        not_listed=dict(state.more),
        review_queue=_review_queue(store, principal),
    )
    if count is None and budget is not None:
        count = _store_counter(store)
    render_pack(pack, ess, budget=budget, count=count or len)
    return pack


def _review_queue(store: Store, principal: Principal | str) -> dict[str, int]:
    from agentstate.memory.review import review_queue_counts

    return review_queue_counts(store, principal)


def _store_counter(store: Store) -> Callable[[str], int]:
    from agentstate.tokens import counter_for

    return counter_for(store.settings.tokens).count


# ---------------------------------------------------------------- rendering


@dataclass
class _Part:
    """One unit of the pack: an essential (always there, in its short form at least) or an
    optional part (whole or left out)."""

    section: str
    ref: str  # what the omitted list names: an evt:/skill: ref, or a part name
    lines: list[str]
    floor: list[str] | None = None  # essentials: the form kept whatever the budget


SECTION_TITLES = {
    **ESSENTIAL_TITLES,
    "diagnoses": "## Confirmed diagnoses",
    "failed": "## Failed verifications",
    "checkpoint": "## Last checkpoint",
    "hypotheses": "## Unconfirmed hypotheses (not facts; do not rely on them)",
    "skills": "## Matching skills (metadata only; load with `agentstate skill load NAME`)",
    "recent": "## Relevant recent events (refs; read with `agentstate events`)",
    "more": "## Not listed (older task state)",
}
SECTION_ORDER = list(SECTION_TITLES)
# Who gets the room left after the essentials, highest first: the header, then the optional
# sections, with the essentials' fuller forms slotted in where they matter.
PRIORITY = ["header", "questions", "verifications", "diagnoses", "failed", "failing", "drift",
            "checkpoint", "hypotheses", "skills", "recent", "more"]
_GROUP_LABELS = {"diagnoses": "confirmed diagnosis(es)", "hypotheses": "hypothesis(es)",
                 "open_questions": "open question(s)",
                 "pending_verifications": "pending verification(s)",
                 "failed_verifications": "failed verification(s)"}


def _item_lines(item: StateItem, prefix: str = "") -> list[str]:
    text_lines = item.text.splitlines() or [""]
    extra = []
    if item.replaces:
        extra.append(f"replaces {item.replaces}")
    if item.about:
        extra.append(f"settles {item.about}")
    if item.source != "user":
        extra.append(f"source {item.source}")
    suffix = f" ({'; '.join(extra)})" if extra else ""
    first = f"- {item.ref} {prefix}{text_lines[0]}{suffix}"
    return [first, *(f"  {line}" for line in text_lines[1:])]


def _header(pack: ResumePack) -> str:
    from agentstate.memory.review import queue_mention

    run = pack.run
    mention = queue_mention(pack.review_queue)
    # Part of the header (a budgeted part): under a tight budget it goes with the header.
    return (f"# Resume {run['ref']} ({run['status']}, started {_when(run['created'])}, "
            f"{run['events']} events)" + (f"\n\n> {mention}" if mention else ""))


def _skill_ref(skill: SkillHit) -> str:
    if skill.ref:
        return skill.ref
    return f"skill:{skill.name}@v{skill.version}" if skill.version else f"skill:{skill.name}"


def _when(ts: str) -> str:
    """A stored timestamp to the minute: enough to order things, short in a pack."""
    return f"{ts[:16]}Z" if len(ts) >= 16 else ts


def all_parts(pack: ResumePack, ess: Essentials) -> list[_Part]:
    """Every part: the essentials first (in text order), then the optional ones by
    priority (highest first)."""
    # Optional items are questions and verifications past the essentials' ceiling.
    parts = [_Part(i.section, i.ref, [i.full], floor=None if i.optional else [i.floor])
             for i in ess.items]
    optional: list[_Part] = [_Part("header", "header", [_header(pack)])]
    optional += [_Part("diagnoses", i.ref, _item_lines(i)) for i in pack.diagnoses]
    optional += [_Part("failed", i.ref, _item_lines(i)) for i in pack.failed_verifications]
    optional += [_Part("failing", f["ref"], [f"- [{f['ref']} · {f['source']} · "
                                             f"{_when(f['ts'])}] {f['text']}"])
                 for f in pack.failing_tools[1:]]  # the newest is an essential
    if pack.checkpoint:
        cp = pack.checkpoint
        note = (cp.get("note") or "(no note)").splitlines() or [""]
        optional.append(_Part("checkpoint", cp["ref"], [
            f"- {cp['ref']} at {_when(cp['created'])} ({cp['events_since']} event(s) since): "
            f"{note[0]}",
            *(f"  {line}" for line in note[1:]),
        ]))
    optional += [_Part("hypotheses", i.ref, _item_lines(i, "UNCONFIRMED: "))
                 for i in pack.hypotheses]
    for skill in pack.skills:
        ref = _skill_ref(skill)
        optional.append(_Part("skills", ref, [f"- {ref}: {skill.description}"]))
    optional += [_Part("recent", e.ref, [f"- {e.ref} {e.kind} {_when(e.ts)}: {e.gist}"])
                 for e in pack.recent_events]
    if pack.not_listed:
        counts = ", ".join(f"{more_label(n)} older {_GROUP_LABELS[g]}"
                           for g, n in pack.not_listed.items())
        optional.append(_Part("more", "more", [
            f"- {counts}: `agentstate events --run {pack.run['ref']}`"]))
    return parts + optional


def _compose(parts: list[_Part], wide: set[int], omitted: list[_Part],
             listed_refs: int | None, run_ref: str) -> str:
    """The markdown for one selection: essentials in their full form when in `wide`, else
    their floor; optional parts in `wide`; then the omitted refs (all of them, the first
    `listed_refs` and a count of the rest, or — with listed_refs -1 — no omitted section)."""
    header = ""
    grouped: dict[str, list[str]] = {}
    for part in parts:
        if part.floor is None and id(part) not in wide:
            continue
        lines = part.lines if id(part) in wide else part.floor or []
        if part.section == "header":
            header = lines[0] + "\n\n"
            continue
        grouped.setdefault(part.section, []).extend(lines)
    blocks = [(SECTION_TITLES[s], grouped[s]) for s in SECTION_ORDER if s in grouped]
    if omitted and listed_refs != -1:
        listed = len(omitted) if listed_refs is None else min(listed_refs, len(omitted))
        refs = ", ".join(p.ref for p in omitted[:listed])
        rest = len(omitted) - listed
        if not rest:
            line = f"- {refs}"
        else:
            more = f"{refs} and {rest} more" if refs else f"{rest} part(s)"
            line = f"- {more}; see `agentstate events --run {run_ref}`"
        blocks.append(("## Omitted for budget", [line]))
    return header + join_sections(blocks)


def render_pack(
    pack: ResumePack,
    ess: Essentials,
    *,
    budget: int | None,
    count: Callable[[str], int],
) -> None:
    """Fill pack.text (and, under a budget, pack.budget/omitted and trimmed lists)."""
    # Stored text is shown through output.visible (no raw escape sequences), before counting
    # (the essentials' items do it themselves).
    parts = all_parts(pack, ess)
    for part in parts:
        if part.floor is None:
            part.lines = [visible(line) for line in part.lines]
    essentials = [p for p in parts if p.floor is not None]
    pack.pinned_text = ess.text()
    run_ref = pack.run["ref"]
    everything = {id(p) for p in parts}
    full = _compose(parts, everything, [], None, run_ref)
    if budget is None:
        pack.text = full
        return
    minimum = count(pack.pinned_text)
    full_tokens = count(full)
    if full_tokens <= budget:
        pack.text = full
        pack.budget = {"budget": budget, "tokens": full_tokens, "minimum": minimum,
                       "pinned_tokens": minimum}
        return
    if minimum > budget:
        raise BudgetTooSmall(budget, minimum, WHAT)
    upgrades = [p for p in essentials if p.lines != p.floor]
    optional = [p for p in parts if p.floor is None]
    wide = _greedy_choice(upgrades, optional, {p.section for p in essentials},
                          room=budget - minimum, count=count, run_ref=run_ref)
    text = _fit(parts, wide, optional, budget, count, run_ref)
    while text is None:
        wide.pop()  # the lowest priority chosen so far; with none, the essentials fit
        text = _fit(parts, wide, optional, budget, count, run_ref)
    kept = {id(p) for p in wide}
    pack.text = text
    pack.omitted = [p.ref for p in optional if id(p) not in kept]
    pack.compressed = [p.ref for p in upgrades if id(p) not in kept]
    pack.budget = {"budget": budget, "tokens": count(text), "minimum": minimum,
                   "pinned_tokens": minimum}
    _keep_only_shown(pack, {p.ref for p in wide})


def _greedy_choice(upgrades: list[_Part], optional: list[_Part], sections: set[str], *,
                   room: int, count: Callable[[str], int], run_ref: str) -> list[_Part]:
    """The parts to show beyond the essentials' floors, chosen greedily in priority order
    on per-part estimates (tokenising the whole text per candidate would be quadratic):
    optional parts and the essentials whose full form is longer than their floor. `room`
    is the budget less the floors; `sections` are those the floors already open (changed)."""
    rank = {name: n for n, name in enumerate(PRIORITY)}
    ordered = sorted(upgrades + optional, key=lambda p: rank.get(p.section, len(rank)))

    def cost(lines: list[str] | None) -> int:
        return count("\n".join(lines or [])) + 2

    header_cost = {s: count("\n" + t) + 2 for s, t in SECTION_TITLES.items()}
    # Room kept for the omitted list: its refs, or at most the "N part(s)" line.
    omitted_header = count("\n## Omitted for budget\n- ") + 2
    count_mode = count(f"- 999 part(s); see `agentstate events --run {run_ref}`") + 2
    ref_cost = {id(p): count(p.ref + ", ") for p in optional}
    refs_left = sum(ref_cost.values())
    optional_left = len(optional)
    used = 0
    wide: list[_Part] = []
    for part in ordered:
        extra = cost(part.lines) - (cost(part.floor) if part.floor is not None else 0)
        if part.floor is None and part.section not in sections:
            extra += header_cost.get(part.section, 0)
        after_refs = refs_left - ref_cost.get(id(part), 0)
        after_left = optional_left - (part.floor is None)
        listing = min(after_refs, count_mode) + omitted_header if after_left else 0
        if used + extra + listing <= room:
            wide.append(part)
            used += extra
            refs_left, optional_left = after_refs, after_left
            sections.add(part.section)
    return wide


def _fit(parts: list[_Part], chosen: list[_Part], optional: list[_Part], budget: int,
         count: Callable[[str], int], run_ref: str) -> str | None:
    """The exact text for this selection if it fits: every omitted ref listed, or as many
    as fit (binary search) with a count of the rest, or no omitted list."""
    ids = {id(p) for p in chosen}
    dropped = [p for p in optional if id(p) not in ids]
    text = _compose(parts, ids, dropped, None, run_ref)
    if count(text) <= budget:
        return text
    best = _compose(parts, ids, dropped, 0, run_ref)
    if count(best) > budget:
        bare = _compose(parts, ids, dropped, -1, run_ref)
        return bare if count(bare) <= budget else None
    low, high = 0, len(dropped) - 1  # invariant: `low` refs fit
    while low < high:
        middle = (low + high + 1) // 2
        attempt = _compose(parts, ids, dropped, middle, run_ref)
        if count(attempt) <= budget:
            low, best = middle, attempt
        else:
            high = middle - 1
    return best


def _keep_only_shown(pack: ResumePack, refs: set[str]) -> None:
    """The structured lists describe what the text holds: drop what the budget left out."""
    pack.diagnoses = [i for i in pack.diagnoses if i.ref in refs]
    pack.failed_verifications = [i for i in pack.failed_verifications if i.ref in refs]
    pack.hypotheses = [i for i in pack.hypotheses if i.ref in refs]
    pack.recent_events = [e for e in pack.recent_events if e.ref in refs]
    pack.skills = [s for s in pack.skills if _skill_ref(s) in refs]
    pack.failing_tools = pack.failing_tools[:1] + [f for f in pack.failing_tools[1:]
                                                   if f["ref"] in refs]
    if pack.checkpoint and pack.checkpoint["ref"] not in refs:
        pack.checkpoint = None
    if "more" not in refs:
        pack.not_listed = {}
