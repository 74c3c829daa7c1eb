"""`agentstate eval scenarios`: the generator is deterministic, its gold matches what the
store did, and the metrics read the pack the way they claim."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from agentstate.errors import InvalidInput
from agentstate.evals.arms import ArmPack
from agentstate.evals.scenario_measure import _scenario_store, run_scenarios, score
from agentstate.evals.scenarios import KINDS, Fact, Scenario, plan
from agentstate.memory.model import get_memory
from agentstate.runs.log import get_event, list_events


def test_the_same_seed_gives_the_same_scenario():
    assert plan(3) == plan(3)
    assert plan(3) != plan(4)
    with _scenario_store(3) as (one, first), _scenario_store(3) as (two, second):
        assert [e.text for e in list_events(one, first.run)] == \
            [e.text for e in list_events(two, second.run)]
        assert [asdict(f) for f in first.facts] == [asdict(f) for f in second.facts]


def test_every_kind_of_fact_appears_and_its_gold_matches_the_store():
    with _scenario_store(1) as (store, scenario):
        kinds = {f.kind for f in scenario.facts}
        assert kinds == set(KINDS)
        assert len(scenario.constraints) == 3
        for fact in scenario.facts:
            mems = {r: get_memory(store, r) for r in fact.current | fact.stale | fact.poisoned
                    | fact.forgotten if r.startswith("mem:")}
            status = {r: m.status for r, m in mems.items()}
            if fact.kind == "changed":
                new_event = next(r for r in fact.current if r.startswith("evt:"))
                old_event = next(r for r in fact.stale if r.startswith("evt:"))
                assert get_event(store, new_event).supersedes == old_event
                assert sorted(status[r] for r in fact.current | fact.stale
                              if r.startswith("mem:")) == ["active", "superseded"]
            elif fact.kind == "expiring":
                assert [status[r] for r in fact.stale if r.startswith("mem:")] == ["expired"]
                assert not fact.current
            elif fact.kind == "contradicted":
                assert [status[r] for r in fact.poisoned if r.startswith("mem:")] == \
                    ["contested"]
                assert get_event(store, next(r for r in fact.poisoned
                                             if r.startswith("evt:"))).kind == "hypothesis"
            elif fact.kind == "poisoned":
                assert [status[r] for r in fact.poisoned if r.startswith("mem:")] == \
                    ["quarantined"]
            elif fact.kind in ("forgotten", "purged"):
                memory = mems[next(iter(fact.forgotten))]
                assert memory.status == "forgotten"
                assert (fact.forgotten_text in memory.text) == (fact.kind == "forgotten")


def _fact(**kw) -> Fact:
    return Fact(key="k", kind="stable", question="q?", **kw)


def test_score_reads_refs_and_warnings():
    scenario = Scenario(seed=1, run="run:x", constraints=["evt:c1", "evt:c2"], facts=[])
    pack = ArmPack(refs={"evt:c1", "evt:now", "mem:old@v1", "evt:guess", "mem:bad@v2"},
                   tokens=10, seconds=0.0,
                   marks={"evt:guess": {"unconfirmed"}, "mem:bad@v2": {"flagged-nothing"}})
    fact = _fact(current={"evt:now", "mem:now@v2"}, stale={"mem:old@v1"},
                 poisoned={"evt:guess"}, forgotten={"mem:gone@v1"})
    assert score(scenario, fact, pack) == {"constraints": 0.5, "recall": 1.0, "stale": 1.0,
                                           "forgotten": 0.0, "poisoned": 0.0}
    # A poisoned fragment without a warning the model reads is a leak.
    assert score(scenario, _fact(poisoned={"mem:bad@v2"}), pack)["poisoned"] == 1.0
    # Metrics that do not apply to a fact are not scored at all.
    assert set(score(scenario, _fact(current={"evt:x"}), pack)) == {"constraints", "recall"}
    assert score(scenario, _fact(current={"evt:x"}), pack)["recall"] == 0.0


def test_arms_on_the_generated_histories():
    report = run_scenarios(seed=1, count=2, budgets=[1000])
    assert report.questions == 2 * 10
    by = {r.arm: r for r in report.results}
    # Constraints are pinned in the real system, with or without memory.
    assert by["full"].constraints == by["no-memory"].constraints == 1.0
    assert by["no-memory"].recall == 0.0
    # The read gate keeps forgotten memories out; without it a tombstoned one comes back.
    assert by["full"].forgotten == 0.0 and by["structured"].forgotten > 0.0
    # Contradictions and injected text reach the real system's pack only with a warning.
    assert by["full"].poisoned == 0.0
    # Plain text baselines carry no warnings: every retrieved injection is a leak.
    assert by["plain-search"].poisoned == 1.0
    assert by["full"].recall == 1.0


def test_bad_arguments():
    with pytest.raises(InvalidInput):
        run_scenarios(count=0)
    with pytest.raises(InvalidInput):
        run_scenarios(count=1, budgets=[-3])


def test_cli_envelope_and_errors(cli):
    data = cli.json("eval", "scenarios", "--scenarios", "1", "-b", "800", "--arm", "full")
    assert data["seeds"] == [1] and data["budgets"] == [800]
    assert set(data["results"][0]) >= {"constraints", "recall", "stale", "forgotten",
                                       "poisoned", "tokens_mean", "p50_ms"}
    assert "forgotten" in cli.ok("eval", "scenarios", "--scenarios", "1", "-b", "800").stdout
    assert cli("eval", "scenarios", "--arm", "nope").exit_code == 2
    assert cli("eval", "scenarios", "--budget", "0").exit_code == 1
