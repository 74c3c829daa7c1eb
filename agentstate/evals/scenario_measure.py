"""`agentstate eval scenarios`: what each arm keeps, leaks and finds, on generated histories.

For every generated scenario (one fresh store each), every fact's question and every skill
task, each arm builds a pack at each budget. Read from the pack (its refs, the warnings it
attaches, the skills its catalog offers) — never from its text:

- constraints: the share of the run's constraints in the pack (retention);
- recall: for facts with a current value, whether a ref carrying it is in the pack;
- stale: a superseded or expired version in the pack (facts that changed or expired);
- forgotten: a forgotten or purged memory in the pack;
- poisoned: a lower-authority contradiction, a guess or injected tool text in the pack with
  no warning (untrusted, contested, unconfirmed) attached;
- conflict: for facts with a current value and a contradicted one (changed, contradicted,
  poisoned), the current value is in the pack and no stale or unmarked contradicting one is;
- solvable: every constraint and the current evidence present, nothing stale, forgotten or
  unmarked-poisoned present (a proxy for "the next turn can be answered right");
- discovery: for a task with one right skill, the pack's first offered skill is it;
- composition: for a task that needs two skills, both are offered;
- revoked: the share of skill-task packs that offer a revoked skill (must be 0).

Leakage rates are shares of the questions about facts of that kind. Besides the arms, the
write path and the skill registry are checked once per scenario (they are the same for every
arm): write precision, catalog top-1 and composition (`skill match`), load compliance,
whether the skill whose tool has gone still loads, and contamination.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.evals.arms import SCENARIO_ARMS, ArmPack, Arms, check_arms, check_names
from agentstate.evals.measure import cost, find_result, mean
from agentstate.evals.scenario_skills import SkillGold, SkillTask
from agentstate.evals.scenarios import Fact, Scenario, build, start_time
from agentstate.memory.status import MemoryStatus
from agentstate.store.db import Store
from agentstate.store.principals import resolve_principal

DEFAULT_BUDGETS = (1000, 2000, 4000, 8000)
WARNINGS = {"untrusted", "contested", "unconfirmed"}
QUESTION_METRICS = ("constraints", "recall", "stale", "forgotten", "poisoned", "conflict",
                    "solvable", "leak")
SKILL_METRICS = ("discovery", "composition", "revoked")
METRICS = QUESTION_METRICS + SKILL_METRICS
# Lower is better for these (shown so in the table and the plot).
LEAKS = ("stale", "forgotten", "poisoned", "revoked", "leak")


@dataclass
class ScenarioResult:
    arm: str
    budget: int
    constraints: float | None   # retention (higher is better)
    recall: float | None        # evidence recall (higher is better)
    stale: float | None         # leakage rates (lower is better)
    forgotten: float | None
    poisoned: float | None
    conflict: float | None      # conflict resolution accuracy (higher is better)
    solvable: float | None      # solvability proxy (higher is better)
    leak: float | None          # any of stale/forgotten/poisoned (lower is better)
    discovery: float | None     # the pack's first skill is the right one
    composition: float | None   # both skills of a two-skill task offered
    revoked: float | None       # a revoked skill offered (lower is better)
    tokens_mean: float
    p50_ms: float


@dataclass
class SystemChecks:
    """The write path and the registry, once per scenario (the same for every arm)."""

    write_precision: float | None   # active memories that are true / all active ones
    bad_writes_active: int          # guesses, contradictions, injected text left active
    match_top1: float | None        # `skill match` top-1 is the right skill
    match_composition: float | None  # both skills of a two-skill task in `skill match`
    load_compliance: float | None   # right skills load, revoked ones are refused/absent
    tool_gone_loads: int            # skills whose required tool has gone that still load
    contamination: int              # skills published from documents (must be 0)
    documents: int                  # publish attempts from documents


@dataclass
class ScenarioReport:
    seeds: list[int]
    questions: int
    tasks: int
    facts_by_kind: dict[str, int]
    arms: list[str]
    budgets: list[int]
    metrics: list[str]
    history_tokens: float = 0.0     # mean tokens of a scenario's whole history
    results: list[ScenarioResult] = field(default_factory=list)
    system: SystemChecks | None = None
    seconds: float = 0.0

    def result(self, arm: str, budget: int) -> ScenarioResult:
        return find_result(self.results, arm, budget)


@dataclass
class _Tally:
    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)

    def add(self, pack: ArmPack, scores: dict[str, float]) -> None:
        for metric, value in scores.items():
            self.values[metric].append(value)
        self.tokens.append(pack.tokens)
        self.seconds.append(pack.seconds)


def check_metrics(names: list[str] | None) -> tuple[str, ...]:
    """The metrics asked for (default: all); unknown names are a usage error."""
    return check_names(names, METRICS, "metric")


def _unmarked(refs: set[str], pack: ArmPack) -> set[str]:
    return {r for r in refs & pack.refs if not pack.marks.get(r, set()) & WARNINGS}


def score(scenario: Scenario, fact: Fact, pack: ArmPack) -> dict[str, float]:
    """The metrics one pack earns for one question (only those that apply to the fact)."""
    out: dict[str, float] = {}
    held = sum(ref in pack.refs for ref in scenario.constraints)
    if scenario.constraints:
        out["constraints"] = held / len(scenario.constraints)
    found = bool(fact.current & pack.refs)
    stale = bool(fact.stale & pack.refs)
    forgotten = bool(fact.forgotten & pack.refs)
    poisoned = bool(_unmarked(fact.poisoned, pack))
    if fact.current:
        out["recall"] = float(found)
    if fact.stale:
        out["stale"] = float(stale)
    if fact.forgotten:
        out["forgotten"] = float(forgotten)
    if fact.poisoned:
        out["poisoned"] = float(poisoned)
    if fact.stale or fact.forgotten or fact.poisoned:
        out["leak"] = float(stale or forgotten or poisoned)
    if fact.current and (fact.stale or fact.poisoned):
        out["conflict"] = float(found and not stale and not poisoned)
    out["solvable"] = float(held == len(scenario.constraints)
                            and (found or not fact.current)
                            and not (stale or forgotten or poisoned))
    return out


def _name(ref: str) -> str:
    return ref.split(":", 1)[1].split("@", 1)[0]


def score_task(gold: SkillGold, task: SkillTask, pack: ArmPack) -> dict[str, float]:
    """The skill metrics one pack earns for one task."""
    offered = [_name(r) for r in pack.skills]
    out = {"revoked": float(any(n in gold.revoked for n in offered))}
    if len(task.right) == 1:
        out["discovery"] = float(offered[:1] == task.right)
    elif len(task.right) > 1:
        out["composition"] = float(set(task.right) <= set(offered))
    return out


def run_scenarios(
    *,
    seed: int = 1,
    count: int = 5,
    arms: list[str] | None = None,
    budgets: list[int] | tuple[int, ...] = DEFAULT_BUDGETS,
    metrics: list[str] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ScenarioReport:
    """Generate scenarios `seed` … `seed + count - 1` and measure every arm at every budget."""
    from agentstate.context.assemble import parse_budget
    from agentstate.errors import InvalidInput
    from agentstate.runs.log import list_events

    if count < 1:
        raise InvalidInput(f"--scenarios must be at least 1, got {count}")
    started = time.perf_counter()
    chosen = check_arms(arms, SCENARIO_ARMS)
    shown = check_metrics(metrics)
    budgets = sorted({parse_budget(b, 0) for b in budgets or DEFAULT_BUDGETS})
    seeds = list(range(seed, seed + count))
    report = ScenarioReport(seeds=seeds, questions=0, tasks=0, facts_by_kind={},
                            arms=list(chosen), budgets=list(budgets), metrics=list(shown))
    tallies = {(a, b): _Tally() for a in chosen for b in budgets}
    checks: list[SystemChecks] = []
    history: list[int] = []
    for n, one in enumerate(seeds):
        with _scenario_store(one) as (store, scenario):
            queries = len(scenario.facts) + len(scenario.skills.tasks)
            if on_start and n == 0:
                on_start(queries * len(chosen) * len(budgets) * count)
            arms_here = Arms(store, list_events(store, scenario.run))
            history.append(sum(arms_here.costs))
            try:
                for fact in scenario.facts:
                    report.questions += 1
                    report.facts_by_kind[fact.kind] = report.facts_by_kind.get(fact.kind, 0) + 1
                    for arm in chosen:
                        for budget in budgets:
                            pack = arms_here.pack(arm, fact.question, budget)
                            tallies[(arm, budget)].add(pack, score(scenario, fact, pack))
                    if on_progress:
                        on_progress(len(chosen) * len(budgets))
                for task in scenario.skills.tasks:
                    report.tasks += 1
                    for arm in chosen:
                        for budget in budgets:
                            pack = arms_here.pack(arm, task.text, budget)
                            tallies[(arm, budget)].add(pack,
                                                       score_task(scenario.skills, task, pack))
                    if on_progress:
                        on_progress(len(chosen) * len(budgets))
            finally:
                arms_here.close()
            # Loads append events to the run: checked after every pack was measured.
            checks.append(system_checks(store, scenario))
    report.results = [_summarise(a, b, tallies[(a, b)]) for a in chosen for b in budgets]
    report.system = _combine(checks)
    report.history_tokens = round(sum(history) / len(history), 1)
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def system_checks(store: Store, scenario: Scenario) -> SystemChecks:
    """Write precision and the registry's answers for one scenario."""
    from agentstate.errors import AgentStateError
    from agentstate.memory.model import get_memory
    from agentstate.skills.catalog import list_catalog, match_skills
    from agentstate.skills.load import load_skill

    good = {r for f in scenario.facts for r in f.current if r.startswith("mem:")}
    bad = {r for f in scenario.facts for r in f.poisoned if r.startswith("mem:")}
    active = {r for r in good | bad if get_memory(store, r).status == MemoryStatus.ACTIVE}
    gold = scenario.skills
    top1, composed = [], []
    for task in gold.tasks:
        names = [m.name for m in match_skills(store, task.text)]
        if len(task.right) == 1:
            top1.append(float(names[:1] == task.right))
        elif len(task.right) > 1:
            composed.append(float(set(task.right) <= set(names)))
    catalog = {e.name for e in list_catalog(store)}

    def loads(name: str) -> bool:
        try:
            load_skill(store, name, run_ref=scenario.run, principal=resolve_principal(store))
        except AgentStateError:
            return False
        return True

    right = {n for t in gold.tasks for n in t.right}
    compliance = [float(loads(n)) for n in sorted(right)]
    compliance += [float(not loads(n) and n not in catalog) for n in gold.revoked]
    return SystemChecks(
        write_precision=round(len(active & good) / len(active), 4) if active else None,
        bad_writes_active=len(active & bad),
        match_top1=mean(top1), match_composition=mean(composed),
        load_compliance=mean(compliance),
        tool_gone_loads=sum(loads(n) for n in gold.tool_gone),
        contamination=sum(n in catalog for n in gold.documents),
        documents=len(gold.documents),
    )


def _combine(checks: list[SystemChecks]) -> SystemChecks:
    def avg(name: str) -> float | None:
        return mean([getattr(c, name) for c in checks if getattr(c, name) is not None])

    return SystemChecks(
        write_precision=avg("write_precision"),
        bad_writes_active=sum(c.bad_writes_active for c in checks),
        match_top1=avg("match_top1"), match_composition=avg("match_composition"),
        load_compliance=avg("load_compliance"),
        tool_gone_loads=sum(c.tool_gone_loads for c in checks),
        contamination=sum(c.contamination for c in checks),
        documents=sum(c.documents for c in checks),
    )


class _scenario_store:
    """A fresh store in a temporary directory with scenario `seed` written into it: its
    skills published first (with the soon-gone tool declared), then the history."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.base = Path(tempfile.mkdtemp(prefix="agentstate-eval-"))
        self.store: Store | None = None

    def __enter__(self) -> tuple[Store, Scenario]:
        from agentstate.evals.scenario_skills import declare_tool, publish_skills
        from agentstate.maintenance.init import init_store
        from agentstate.store.clock import Clock, IdSource
        from agentstate.store.db import open_store

        try:
            init_store(target=self.base)
            path = self.base / ".agentstate"
            clock, ids = Clock(start_time(self.seed)), IdSource(seed=self.seed)
            declare_tool(path / "config.toml", present=True)
            self.store = open_store(path, clock=clock, ids=ids)
            skills = publish_skills(self.store, self.seed)
            self.store.close()
            # The tool has gone: the config no longer declares it (settings load at open).
            declare_tool(path / "config.toml", present=False)
            self.store = open_store(path, clock=clock, ids=ids)
            return self.store, build(self.store, self.seed, skills=skills)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.base, ignore_errors=True)


def _summarise(arm: str, budget: int, tally: _Tally) -> ScenarioResult:
    tokens_mean, p50_ms = cost(tally.tokens, tally.seconds)
    return ScenarioResult(arm=arm, budget=budget, **{m: mean(tally.values[m]) for m in METRICS},
                          tokens_mean=tokens_mean, p50_ms=p50_ms)
