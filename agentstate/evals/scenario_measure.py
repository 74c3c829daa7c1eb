"""`agentstate eval scenarios`: constraint retention, evidence recall and leakage per arm.

For every generated scenario (one fresh store each) and every fact's question, each arm
builds a pack at each budget. Read from the pack (its refs, and the warnings it attaches):
- constraint retention: the share of the run's constraints in the pack;
- evidence recall: for facts with a current value, whether a ref carrying it is in the pack;
- stale leakage: a superseded or expired version in the pack (facts that changed or expired);
- forgotten leakage: a forgotten or purged memory in the pack;
- poisoned leakage: a lower-authority contradiction or injected tool text in the pack with no
  warning (untrusted, contested, unconfirmed) attached.
Leakage rates are shares of the questions about facts of that kind.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.evals.arms import ArmPack, Arms, check_arms
from agentstate.evals.measure import cost, find_result, mean
from agentstate.evals.scenarios import Fact, Scenario, build, start_time

DEFAULT_BUDGETS = (250, 500, 1000, 2000)
WARNINGS = {"untrusted", "contested", "unconfirmed"}
METRICS = ("constraints", "recall", "stale", "forgotten", "poisoned")


@dataclass
class ScenarioResult:
    arm: str
    budget: int
    constraints: float | None   # retention (higher is better)
    recall: float | None        # evidence recall (higher is better)
    stale: float | None         # leakage rates (lower is better)
    forgotten: float | None
    poisoned: float | None
    tokens_mean: float
    p50_ms: float


@dataclass
class ScenarioReport:
    seeds: list[int]
    questions: int
    facts_by_kind: dict[str, int]
    arms: list[str]
    budgets: list[int]
    results: list[ScenarioResult] = field(default_factory=list)
    seconds: float = 0.0

    def result(self, arm: str, budget: int) -> ScenarioResult:
        return find_result(self.results, arm, budget)


@dataclass
class _Tally:
    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def score(scenario: Scenario, fact: Fact, pack: ArmPack) -> dict[str, float]:
    """The metrics one pack earns for one question (only those that apply to the fact)."""
    out: dict[str, float] = {}
    if scenario.constraints:
        held = sum(ref in pack.refs for ref in scenario.constraints)
        out["constraints"] = held / len(scenario.constraints)
    if fact.current:
        out["recall"] = float(bool(fact.current & pack.refs))
    if fact.stale:
        out["stale"] = float(bool(fact.stale & pack.refs))
    if fact.forgotten:
        out["forgotten"] = float(bool(fact.forgotten & pack.refs))
    if fact.poisoned:
        unmarked = [r for r in fact.poisoned & pack.refs
                    if not pack.marks.get(r, set()) & WARNINGS]
        out["poisoned"] = float(bool(unmarked))
    return out


def run_scenarios(
    *,
    seed: int = 1,
    count: int = 5,
    arms: list[str] | None = None,
    budgets: list[int] | tuple[int, ...] = DEFAULT_BUDGETS,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ScenarioReport:
    """Generate scenarios `seed` … `seed + count - 1` and measure every arm at every budget."""
    from agentstate.context.assemble import parse_budget
    from agentstate.errors import InvalidInput

    if count < 1:
        raise InvalidInput(f"--scenarios must be at least 1, got {count}")
    started = time.perf_counter()
    chosen = check_arms(arms)
    budgets = sorted({parse_budget(b, 0) for b in budgets or DEFAULT_BUDGETS})
    seeds = list(range(seed, seed + count))
    report = ScenarioReport(seeds=seeds, questions=0, facts_by_kind={}, arms=list(chosen),
                            budgets=list(budgets))
    tallies = {(a, b): _Tally() for a in chosen for b in budgets}
    for n, one in enumerate(seeds):
        with _scenario_store(one) as (store, scenario):
            if on_start and n == 0:
                on_start(len(scenario.facts) * len(chosen) * len(budgets) * count)
            from agentstate.runs.log import list_events

            arms_here = Arms(store, list_events(store, scenario.run))
            try:
                for fact in scenario.facts:
                    report.questions += 1
                    report.facts_by_kind[fact.kind] = report.facts_by_kind.get(fact.kind, 0) + 1
                    for arm in chosen:
                        for budget in budgets:
                            pack = arms_here.pack(arm, fact.question, budget)
                            tally = tallies[(arm, budget)]
                            for metric, value in score(scenario, fact, pack).items():
                                tally.values[metric].append(value)
                            tally.tokens.append(pack.tokens)
                            tally.seconds.append(pack.seconds)
                    if on_progress:
                        on_progress(len(chosen) * len(budgets))
            finally:
                arms_here.close()
    report.results = [_summarise(a, b, tallies[(a, b)]) for a in chosen for b in budgets]
    report.seconds = round(time.perf_counter() - started, 2)
    return report


class _scenario_store:
    """A fresh store in a temporary directory with scenario `seed` written into it."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.base = Path(tempfile.mkdtemp(prefix="agentstate-eval-"))
        self.store = None

    def __enter__(self):
        from agentstate.maintenance.init import init_store
        from agentstate.store.clock import Clock, IdSource
        from agentstate.store.db import open_store

        try:
            init_store(target=self.base)
            self.store = open_store(self.base / ".agentstate", clock=Clock(start_time(self.seed)),
                                    ids=IdSource(seed=self.seed))
            return self.store, build(self.store, self.seed)
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc) -> None:
        if self.store is not None:
            self.store.close()
        shutil.rmtree(self.base, ignore_errors=True)


def _summarise(arm: str, budget: int, tally: _Tally) -> ScenarioResult:
    tokens_mean, p50_ms = cost(tally.tokens, tally.seconds)
    return ScenarioResult(arm=arm, budget=budget, **{m: mean(tally.values[m]) for m in METRICS},
                          tokens_mean=tokens_mean, p50_ms=p50_ms)
