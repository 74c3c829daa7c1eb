"""`agentstate context`: assemble one budgeted, traceable context pack.

gather candidates (sources.py; evidence: evidence_search.py, event_items.py) → allocate
within the budget (budgeter.py) → place and render (placement.py, rendering.py) → store the
manifest and the text's hash (manifest.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.config import MAX_BUDGET, ContextSettings
from agentstate.context import sources as src
from agentstate.context.budgeter import (
    Allocation,
    allocate,
    class_order,
)
from agentstate.context.candidates import (
    Candidate,
    ClassAllocation,
    ManifestEntry,
    allocation_rows,
)
from agentstate.context.evidence_search import EvidenceSwitches, gather_evidence
from agentstate.errors import InvalidInput, UsageError
from agentstate.store.db import Store

if TYPE_CHECKING:
    from pathlib import Path

    from agentstate.runs.log import Run
    from agentstate.store.principals import Principal


@dataclass
class ContextPack:
    ref: str | None                 # pack:… once stored
    run: str | None
    principal: str
    query: str
    budget: int
    tokens: int
    minimum: int                    # the smallest budget the pinned content allows
    text: str
    text_hash: str
    created: str
    manifest: list[ManifestEntry]
    allocation: list[ClassAllocation]
    withheld: dict[str, int] = field(default_factory=dict)  # read-gate counts by reason

    def as_dict(self) -> dict[str, Any]:
        """The --json shape: the text, the manifest (one row per candidate), the allocation."""
        return {
            "ref": self.ref, "run": self.run, "principal": self.principal,
            "query": self.query, "budget": self.budget, "tokens": self.tokens,
            "minimum": self.minimum, "text_hash": self.text_hash, "created": self.created,
            "text": self.text,
            "manifest": [
                {"ref": e.ref, "class": e.cls, "kind": e.kind, "score": e.score,
                 "tokens": e.tokens, "decision": e.decision, "reason": e.reason,
                 "position": e.position, "flags": e.flags, "note": e.note}
                for e in self.manifest
            ],
            "allocation": allocation_rows(self.allocation),
            "withheld": self.withheld,
        }



# The goal is restated at the end of a pack only from this budget up: it is there because
# models read the middle of a long context worst, and in a shorter pack the goal at the top
# is never far away — its tokens go to evidence instead.
RESTATE_GOAL_FROM = 2_000


def parse_budget(value: str | int | None, default: int) -> int:
    """A budget from the command line: a positive whole number of tokens."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        text = str(value).strip().replace("_", "")
        try:
            number = int(text)
        except ValueError as exc:
            raise UsageError(
                f"--budget must be a whole number of tokens, got {value!r}"
            ) from exc
    if number <= 0:
        raise InvalidInput(f"--budget must be a positive number of tokens, got {number}")
    if number > MAX_BUDGET:
        # Stored in an SQLite INTEGER; far beyond any model's window anyway.
        raise InvalidInput(f"--budget must be at most {MAX_BUDGET} tokens, got {number}")
    return number


def build_context(
    store: Store,
    *,
    run: str | None = None,
    budget: int | str | None = None,
    query: str | None = None,
    system_file: str | None = None,
    principal: Principal | str,
    no_run: bool = False,
    save: bool = True,
    retrieval: bool = True,
    trajectory: bool = True,
    read_gate: bool = True,
    dense: bool = True,
    speakers: bool = True,
    answer_lines: bool = True,
) -> ContextPack:
    """Assemble a context pack. With no run (no current run, or `no_run`) a query is needed.

    The last six switches exist for ablations (`agentstate eval`), so that every arm is
    this one assembly with one part turned off rather than a copy of it: `retrieval=False`
    gathers no evidence (no memories, no past events), `trajectory=False` leaves out the
    run's recent events, `read_gate=False` takes memory and event search hits as they come
    (no permission, scope, status, staleness or relevance checks), `dense=False` keeps the
    event and memory searches lexical even where the dense model is installed,
    `speakers=False` matches a speaker's name as plain text rather than as the turn's
    speaker field,
    `answer_lines=False` makes an evidence item's one-line form the matched sentence alone
    (no completing sentence, short turns cut too). The CLI never turns them off.
    """
    from agentstate.context.essentials import WHAT
    from agentstate.skills.records import any_published
    from agentstate.store.principals import acting
    from agentstate.tokens import counter_for

    settings = store.settings.context
    budget_n = parse_budget(budget, settings.default_budget)
    order = class_order(settings.classes)
    who = acting(store, principal)
    if query is not None:
        _check_query(query)
    # The system file is read (and rejected if missing or not text) before anything else.
    system_path = system_file if system_file is not None else settings.system_file
    system_base = store.work_tree if system_file is None else _cwd()
    system = src.read_system_file(system_path, system_base) if system_path else None
    the_run = _target_run(store, run, no_run=no_run, query=query)

    candidates: list[Candidate] = []
    if system is not None:
        cand = src.system_candidate(*system)
        if cand:
            candidates.append(cand)
    task = _task_part(store, the_run, who.name, settings, budget_n, trajectory=trajectory,
                      query=query)
    candidates += task.candidates
    skip = {c.ref for c in candidates}  # refs already shown elsewhere (evidence duplicates)
    query = task.query
    assert query is not None  # a run's query is made from its goal; without a run, checked

    # Catalog: tool definitions from the config, skills matching the query (metadata only).
    catalog, more_skills = _catalog(store, query, settings)
    candidates += catalog

    # Evidence: gated memories and past events of every run, ranked for the query.
    counter = counter_for(store.settings.tokens)
    memories: list[Candidate] = []
    withheld: dict[str, int] = {}
    if retrieval:
        memories, withheld = gather_evidence(
            store, query, who.name, task.scope, skip, candidates,
            (budget_n, order, counter.count_many), gate=read_gate,
            switches=EvidenceSwitches(dense, speakers, answer_lines))
    candidates += src.index_hints(
        query=query, run_ref=the_run.ref if the_run else None, task_more=task.task_more,
        older_events=task.older_events, more_skills=more_skills and any_published(store),
        more_memories=not retrieval or len(memories) >= settings.evidence_memories,
    )

    _link_duplicates(candidates, order)
    reserve = min(settings.index_reserve, budget_n // 20)
    what = WHAT if the_run is not None else "the pinned instructions and preferences"
    if system is not None:
        what = f"the system instructions and {what}"
    allocation = _allocate(candidates, budget_n, counter, order=order,
                           index_reserve=reserve, what=what)
    return _finish(store, ContextPack(
        ref=None, run=the_run.ref if the_run else None, principal=who.name, query=query,
        budget=budget_n, tokens=allocation.tokens, minimum=allocation.minimum,
        text=allocation.text,
        text_hash=hashlib.sha256(allocation.text.encode("utf-8")).hexdigest(),
        created=store.now(), manifest=_manifest(allocation.candidates, order),
        allocation=allocation.classes, withheld=withheld,
    ), save=save)


def _allocate(candidates: list[Candidate], budget: int, counter: Any, *,
              order: tuple[str, ...], index_reserve: int, what: str) -> Allocation:
    """Allocate the budget; then, where an evidence hit that gave way to its copy in a
    later class (one of the run's newest events, shown whole in its timeline) lost that
    copy too while a weaker hit is shown — the weaker hits filled the budget before the
    timeline was reached — allocate once more with such hits decided at their own rank
    (the second allocation costs ~7% of a pack's build where it happens). A hit gives way
    to a copy only where the copy is shown. Packs where no such hit is lost are decided
    once, as before (deciding every copy at its hit's rank, whole, cost the dev split
    0.010 at 8,000 tokens: docs/evaluation.md). The timeline copy of a hit decided at its
    rank is then its duplicate."""

    def run() -> Allocation:
        return allocate(candidates, budget, counter.count, order=order,
                        index_reserve=index_reserve, count_many=counter.count_many,
                        what=what)

    before = [_decision_state(c) for c in candidates]
    allocation = run()
    shown = [c.score for c in candidates if c.cls == "evidence" and _shown(c)]
    weakest = min(shown, default=float("inf"))
    if not any(c.after is not None and c.cls == "evidence" and not _shown(c)
               and not _shown(c.after) and c.score > weakest for c in candidates):
        return allocation  # no hit lost while a weaker one is shown: decided once
    for cand, state in zip(candidates, before, strict=True):
        (cand.decision, cand.reason, cand.form, cand.position, cand.tokens, cand.order,
         cand.note) = state
    # Every such hit, not only those lost: the budget does not reach the whole timeline,
    # and a hit still waiting for its copy would lose the room the others now take first.
    for cand in candidates:
        if cand.after is not None and cand.cls == "evidence" \
                and order.index(cand.after.cls) > order.index("evidence"):
            cand.after = None
    return run()


def _decision_state(cand: Candidate) -> tuple[Any, ...]:
    """What allocation writes on a candidate (restored before a second allocation)."""
    return (cand.decision, cand.reason, cand.form, cand.position, cand.tokens, cand.order,
            cand.note)


def _shown(cand: Candidate) -> bool:
    return cand.decision in ("included", "compressed")


def _finish(store: Store, pack: ContextPack, *, save: bool) -> ContextPack:
    """Record the pack (its ref is how `trace` finds it) unless `save` is off."""
    if save:
        from agentstate.context.manifest import save_pack

        pack.ref = save_pack(store, pack)
    return pack


def _check_query(query: str) -> None:
    """A query must have words to search for and no secret (it is stored with the pack's
    manifest)."""
    from agentstate.memory.terms import split_query
    from agentstate.safety import refuse_secrets
    from agentstate.store.limits import MAX_QUERY_CHARS, check_length

    if not query.strip():
        raise InvalidInput("--query is empty")
    check_length(query, MAX_QUERY_CHARS, "--query")
    refuse_secrets(query, "the query")
    if split_query(query) == ([], []):
        raise InvalidInput(f"the query {query!r} has no words to search for")


def _target_run(store: Store, run: str | None, *, no_run: bool, query: str | None
                ) -> Run | None:
    """The run the pack is for: --run, else the current run unless --no-run; None needs a
    query."""
    from agentstate.runs.log import current_run, get_run

    if run and no_run:
        raise UsageError("--run and --no-run contradict each other; give one")
    the_run = None
    if run:
        the_run = get_run(store, run)
    elif not no_run:
        the_run = current_run(store)
    if the_run is None and not query:
        raise InvalidInput("no run to assemble context for: pass --run REF, start a run, "
                           "or give --query TEXT for a pack without a run")
    return the_run


@dataclass
class _TaskPart:
    """The run's own fragments: its essentials, task state, failing tool results and recent
    trajectory (without a run, only the user's pinned preferences)."""

    candidates: list[Candidate]
    scope: dict[str, Any] | None  # what preferences and memories apply to (run, branch…)
    query: str | None  # the query given, else one made from the run's goal and questions
    task_more: dict[str, str] = field(default_factory=dict)
    older_events: int = 0


def _task_part(store: Store, the_run: Run | None, principal: str, settings: ContextSettings,
               budget: int, *, trajectory: bool, query: str | None) -> _TaskPart:
    from agentstate.context.essentials import gather
    from agentstate.runs.lookups import newest_events

    # The task's essentials, the same as `resume` keeps (context/essentials.py).
    ess = gather(store, the_run, principal=principal)
    part = _TaskPart(src.essential_candidates(ess.items), ess.scope, query)
    if the_run is None:
        return part
    assert ess.state is not None
    task, part.task_more = src.task_candidates(ess.state, the_run.ref, the_run.goal,
                                               _last_checkpoint(store, the_run))
    if budget < RESTATE_GOAL_FROM:
        task = [c for c in task if c.kind != "goal-restated"]
    part.candidates += task
    part.candidates += src.failing_tool_candidates(ess.failures)
    if trajectory:
        # The window always covers the events kept whole.
        window = max(settings.trajectory_window, settings.recent_full_events)
        rows, part.older_events = newest_events(store, the_run.id, window)
        part.candidates += src.trajectory_candidates(rows, the_run.ref,
                                                     settings.recent_full_events)
    if not query:
        # Bounded: the goal and the newest few open questions (a run with hundreds of
        # open questions must not turn into a query of thousands of terms).
        questions = ess.state.open_questions
        newest = questions[-settings.query_questions:] if settings.query_questions else []
        part.query = _bounded_query([the_run.goal] + [q.text for q in reversed(newest)],
                                    settings.query_words)
    return part


def _catalog(store: Store, query: str, settings: ContextSettings
             ) -> tuple[list[Candidate], bool]:
    """Tool definitions and the skills matching the query; and whether more skills than
    shown may match (the index then says how to list them)."""
    from agentstate.skills.catalog import match_skills

    candidates = src.tool_candidates(store.settings.tools.definitions)
    skills = match_skills(store, query, limit=settings.catalog_skills + 1) \
        if settings.catalog_skills else []
    more_skills = len(skills) > settings.catalog_skills or not skills
    candidates += src.skill_candidates(skills[: settings.catalog_skills])
    return candidates, more_skills


def _manifest(candidates: list[Candidate], order: tuple[str, ...]) -> list[ManifestEntry]:
    return [
        ManifestEntry(ref=c.ref, cls=c.cls, score=c.score, tokens=c.tokens,
                      decision=c.decision, reason=c.reason, position=c.position,
                      kind=c.kind, flags=list(c.flags), note=c.note, form=c.form)
        for c in _manifest_order(candidates, order)
    ]


def _bounded_query(parts: list[str], max_words: int) -> str:
    """Join the parts, keeping at most `max_words` distinct words (goal first, then the
    newest questions): every extra term makes the full-text search score more rows."""
    seen: list[str] = []
    folded: set[str] = set()
    for part in parts:
        for word in part.split():
            if word.casefold() not in folded:
                folded.add(word.casefold())
                seen.append(word)
    return " ".join(seen[:max_words]) if max_words else " ".join(seen)


def _link_duplicates(candidates: list[Candidate], order: tuple[str, ...]) -> None:
    """Pair fragments that say the same thing, for the budgeter to keep one of each pair.

    Twins are fragments with the same ref, one of them evidence or trajectory (an event both
    in the trajectory and the task state, or an evidence hit; a memory that is also a pinned
    preference) or, for evidence, the same
    normalised text as a higher-priority fragment. Sources may have dropped a fragment as a
    `duplicate` already (its ref was shown elsewhere); that is undone here and decided in
    allocation instead, where the reason can name a twin that is really in the text.
    """
    from agentstate.context.budgeter import priority_key

    by_ref: dict[str, list[Candidate]] = {}
    by_norm: dict[str, Candidate] = {}
    for cand in sorted(candidates, key=priority_key(order)):
        if cand.decision == "dropped" and cand.reason == "duplicate":
            cand.decision = cand.reason = ""
        if cand.decision or cand.cls == "index":
            continue
        for twin in by_ref.get(cand.ref, []):
            if {cand.cls, twin.cls} & {"evidence", "trajectory"}:  # not the goal restated
                _pair(cand, twin)
                hit, shown = (cand, twin) if cand.cls == "evidence" else (twin, cand)
                # Only where the run shows the event whole (task state, the newest events):
                # an older event the trajectory would only compress is placed as evidence
                # at its rank, and its trajectory line is then the duplicate.
                keeps_place = shown.cls != "trajectory" or shown.full is not None
                if hit.cls == "evidence" and shown.cls != "evidence" and keeps_place \
                        and hit.after is None:
                    hit.after = shown
        by_ref.setdefault(cand.ref, []).append(cand)
        if cand.norm:
            first = by_norm.setdefault(cand.norm, cand)
            if first is not cand and cand.cls == "evidence":
                _pair(cand, first)


def _pair(one: Candidate, other: Candidate) -> None:
    if other not in one.twins:
        one.twins.append(other)
        other.twins.append(one)


def _cwd() -> Path:
    from pathlib import Path

    return Path.cwd()


def _manifest_order(candidates: list[Candidate], order: tuple[str, ...]) -> list[Candidate]:
    """Manifest rows: placed fragments in text order, then the rest by priority."""
    from agentstate.context.budgeter import priority_key

    key = priority_key(order)
    positioned = [(c.position, c) for c in candidates if c.position is not None]
    placed = [c for _, c in sorted(positioned, key=lambda pair: pair[0])]
    rest = sorted((c for c in candidates if c.position is None), key=key)
    return placed + rest


def _last_checkpoint(store: Store, run: Any) -> Any:
    from agentstate.runs.checkpoint import last_checkpoint

    return last_checkpoint(store, run)
