"""`agentstate eval scenarios`: the generator is deterministic, its gold matches what the
store did, and every metric reads the pack (or the store) the way it claims — checked on
hand-made packs whose right answer is known."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from agentstate.errors import InvalidInput, UsageError
from agentstate.evals.arms import ArmPack
from agentstate.evals.scenario_measure import (
    _scenario_store,
    check_metrics,
    run_scenarios,
    score,
    score_task,
    system_checks,
)
from agentstate.evals.scenario_skills import GONE_TOOL, SkillGold, SkillTask
from agentstate.evals.scenarios import CHANGING, KINDS, Fact, Scenario, plan
from agentstate.memory.model import get_memory
from agentstate.runs.log import get_event, list_events
from agentstate.runs.sessions import session_run
from agentstate.store.principals import resolve_principal


@pytest.fixture(scope="module")
def seed_one():
    """Scenario 1, built once for the read-only checks of this module."""
    with _scenario_store(1) as built:
        yield built


def test_the_same_seed_gives_the_same_scenario(seed_one):
    assert plan(3) == plan(3)
    assert plan(3) != plan(4)
    one, first = seed_one
    with _scenario_store(1) as (two, second):
        assert [e.text for e in list_events(one, first.run)] == \
            [e.text for e in list_events(two, second.run)]
        assert [asdict(f) for f in first.facts] == [asdict(f) for f in second.facts]
        assert asdict(first.skills) == asdict(second.skills)


def test_every_kind_of_fact_appears_and_its_gold_matches_the_store(seed_one):
    store, scenario = seed_one
    assert {f.kind for f in scenario.facts} == set(KINDS)
    # The test command, a config value and an owner always change.
    assert {f.key for f in scenario.facts if f.kind == "changed"} == {c[0] for c in CHANGING}
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
            # A guess is no evidence: the write gate keeps it a candidate.
            assert [status[r] for r in fact.poisoned if r.startswith("mem:")] == \
                ["candidate"]
            assert get_event(store, next(r for r in fact.poisoned
                                         if r.startswith("evt:"))).kind == "hypothesis"
        elif fact.kind == "speculative":
            assert not fact.current
            assert [status[r] for r in fact.poisoned if r.startswith("mem:")] == \
                ["candidate"]
            assert get_event(store, next(r for r in fact.poisoned
                                         if r.startswith("evt:"))).kind == "hypothesis"
        elif fact.kind == "poisoned":
            assert [status[r] for r in fact.poisoned if r.startswith("mem:")] == \
                ["quarantined"]
        elif fact.kind in ("forgotten", "purged"):
            memory = mems[next(iter(fact.forgotten))]
            assert memory.status == "forgotten"
            assert (fact.forgotten_text in memory.text) == (fact.kind == "forgotten")


def test_the_history_spans_sessions_and_outgrows_the_budgets(seed_one):
    from agentstate.evals.arms import Arms

    store, scenario = seed_one
    assert len(scenario.sessions) == 3
    assert all(session_run(store, "claude-code", s).ref == scenario.run
               for s in scenario.sessions)
    # Constraints are stated once, at the start, and never repeated.
    texts = [e.text for e in list_events(store, scenario.run)]
    for ref in scenario.constraints:
        assert texts.count(get_event(store, ref).text) == 1
    arms = Arms(store, list_events(store, scenario.run))
    assert sum(arms.costs) > 8000   # raw history cannot hold everything at 1k-4k (or 8k)


def test_skills_gold_matches_the_registry(seed_one):
    from agentstate.skills.catalog import list_catalog

    store, scenario = seed_one
    gold = scenario.skills
    catalog = {e.name for e in list_catalog(store)}
    assert set(gold.published) <= catalog
    assert not set(gold.revoked) & catalog
    assert not set(gold.documents) & catalog and sorted(gold.refused) == sorted(gold.documents)
    assert GONE_TOOL not in {d.name for d in store.settings.tools.definitions}
    assert {t.kind for t in gold.tasks} == {"single", "composed", "revoked", "tool-gone"}
    composed = next(t for t in gold.tasks if t.kind == "composed")
    assert len(composed.right) == 2


# ---------------------------------------------------------------- every metric, by hand

SCENARIO = Scenario(seed=1, run="run:x", constraints=["evt:c1", "evt:c2"], facts=[])


def _fact(**kw) -> Fact:
    return Fact(key="k", kind="stable", question="q?", **kw)


def _pack(*refs: str, marks: dict | None = None, skills: list[str] | None = None) -> ArmPack:
    return ArmPack(refs=set(refs), tokens=10, seconds=0.0, marks=marks or {},
                   skills=skills or [])


def test_constraint_retention_is_the_share_of_constraints_in_the_pack():
    fact = _fact(current={"evt:now"})
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:now"))["constraints"] == 0.5
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:c2"))["constraints"] == 1.0
    assert score(SCENARIO, fact, _pack())["constraints"] == 0.0


def test_recall_needs_a_ref_carrying_the_current_value():
    fact = _fact(current={"evt:now", "mem:now@v2"}, stale={"mem:now@v1"})
    assert score(SCENARIO, fact, _pack("mem:now@v2"))["recall"] == 1.0
    assert score(SCENARIO, fact, _pack("mem:now@v1"))["recall"] == 0.0
    # Metrics that do not apply to a fact are not scored at all.
    assert "recall" not in score(SCENARIO, _fact(stale={"evt:old"}), _pack())
    assert set(score(SCENARIO, _fact(current={"evt:x"}), _pack())) == \
        {"constraints", "recall", "solvable"}


def test_stale_forgotten_and_poisoned_leakage():
    fact = _fact(stale={"evt:old"}, forgotten={"mem:gone@v1"}, poisoned={"evt:guess"})
    clean = score(SCENARIO, fact, _pack())
    assert (clean["stale"], clean["forgotten"], clean["poisoned"], clean["leak"]) == \
        (0.0, 0.0, 0.0, 0.0)
    assert score(SCENARIO, fact, _pack("evt:old"))["stale"] == 1.0
    assert score(SCENARIO, fact, _pack("mem:gone@v1"))["forgotten"] == 1.0
    assert score(SCENARIO, fact, _pack("evt:old"))["leak"] == 1.0
    assert score(SCENARIO, fact, _pack("mem:gone@v1"))["leak"] == 1.0
    assert score(SCENARIO, fact, _pack("evt:guess"))["leak"] == 1.0
    # A poisoned fragment is a leak unless it carries a warning the model reads.
    assert score(SCENARIO, fact, _pack("evt:guess"))["poisoned"] == 1.0
    assert score(SCENARIO, fact, _pack("evt:guess", marks={"evt:guess": {"unconfirmed"}})
                 )["poisoned"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:guess", marks={"evt:guess": {"pinned"}})
                 )["poisoned"] == 1.0


def test_conflict_resolution_wants_the_current_value_and_no_contradiction():
    fact = _fact(current={"evt:new"}, stale={"evt:old"}, poisoned={"evt:guess"})
    assert score(SCENARIO, fact, _pack("evt:new"))["conflict"] == 1.0
    assert score(SCENARIO, fact, _pack("evt:new", "evt:old"))["conflict"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:new", "evt:guess"))["conflict"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:new", "evt:guess",
                                       marks={"evt:guess": {"contested"}}))["conflict"] == 1.0
    assert score(SCENARIO, fact, _pack())["conflict"] == 0.0
    # Without a conflict there is nothing to resolve.
    assert "conflict" not in score(SCENARIO, _fact(current={"evt:new"}), _pack())


def test_solvable_needs_everything_and_nothing_wrong():
    fact = _fact(current={"evt:new"}, stale={"evt:old"}, forgotten={"mem:gone@v1"})
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:c2", "evt:new"))["solvable"] == 1.0
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:new"))["solvable"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:c2"))["solvable"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:c2", "evt:new", "evt:old")
                 )["solvable"] == 0.0
    assert score(SCENARIO, fact, _pack("evt:c1", "evt:c2", "evt:new", "mem:gone@v1")
                 )["solvable"] == 0.0
    # A fact with no current value (it expired, it was only a guess) is solvable by saying
    # nothing wrong.
    assert score(SCENARIO, _fact(stale={"evt:old"}), _pack("evt:c1", "evt:c2")
                 )["solvable"] == 1.0


GOLD = SkillGold(revoked=["old-skill"])


def test_skill_discovery_is_the_packs_first_skill():
    task = SkillTask("single", "do x", ["right"])
    assert score_task(GOLD, task, _pack(skills=["skill:right@v2", "skill:other@v1"])
                      )["discovery"] == 1.0
    assert score_task(GOLD, task, _pack(skills=["skill:other@v1", "skill:right@v2"])
                      )["discovery"] == 0.0
    assert score_task(GOLD, task, _pack())["discovery"] == 0.0


def test_composition_needs_both_skills():
    task = SkillTask("composed", "do x then y", ["x", "y"])
    assert score_task(GOLD, task, _pack(skills=["skill:y@v1", "skill:z@v1", "skill:x@v1"])
                      )["composition"] == 1.0
    assert score_task(GOLD, task, _pack(skills=["skill:x@v1", "skill:z@v1"])
                      )["composition"] == 0.0
    assert "discovery" not in score_task(GOLD, task, _pack())


def test_a_revoked_skill_offered_counts_anywhere_in_the_pack():
    task = SkillTask("revoked", "do the old thing", [], ["old-skill"])
    assert score_task(GOLD, task, _pack(skills=["skill:new@v1"]))["revoked"] == 0.0
    assert score_task(GOLD, task, _pack(skills=["skill:new@v1", "skill:old-skill@v1"])
                      )["revoked"] == 1.0


def test_system_checks_follow_the_store():
    """Write precision, load compliance and contamination change when the store does."""
    from agentstate.memory.corrections import confirm
    from agentstate.memory.forget import forget
    from agentstate.skills.publishing import publish_skill

    with _scenario_store(2) as (store, scenario):
        before = system_checks(store, scenario)
        assert before.contamination == 0 and before.documents == 2
        assert before.load_compliance == 1.0
        assert before.tool_gone_loads == 0   # its required tool is gone: refused at load
        good = {r for f in scenario.facts for r in f.current if r.startswith("mem:")}
        bad = {r for f in scenario.facts for r in f.poisoned if r.startswith("mem:")}
        active_good = sum(get_memory(store, r).status == "active" for r in good)
        active_bad = sum(get_memory(store, r).status == "active" for r in bad)
        assert before.bad_writes_active == active_bad
        assert before.write_precision == round(active_good / (active_good + active_bad), 4)
        # A guess the user confirms (wrongly) becomes active and lowers the precision;
        # taken out of the active memories again, the precision is back.
        speculative = next(f for f in scenario.facts if f.kind == "speculative")
        guess = next(r for r in speculative.poisoned if r.startswith("mem:"))
        confirm(store, guess, ["user"], principal=resolve_principal(store))
        after = system_checks(store, scenario)
        assert after.bad_writes_active == active_bad + 1
        assert after.write_precision < before.write_precision
        forget(store, guess, principal=resolve_principal(store))
        assert system_checks(store, scenario).write_precision == before.write_precision
        # A document's skill published with an approval is contamination.
        publish_skill(store, scenario.skills.documents[1], approve=True,
                      principal=resolve_principal(store))
        assert system_checks(store, scenario).contamination == 1
        # A right skill that can no longer be loaded breaks compliance.
        from agentstate.skills.revocation import revoke_skill

        # Three right skills load and one revoked is refused: each failure costs a quarter.
        revoke_skill(store, scenario.skills.tasks[0].right[0], "test",
                     principal=resolve_principal(store))
        assert system_checks(store, scenario).load_compliance == 0.75
        withdrawn = scenario.skills.revoked[0]
        draft = store.skills_path / withdrawn / "SKILL.md"
        draft.write_text(draft.read_text() + "\nFixed.\n")
        publish_skill(store, withdrawn, approve=True,
                      principal=resolve_principal(store))   # a new version: loads again
        assert system_checks(store, scenario).load_compliance == 0.5


def test_arms_on_the_generated_histories():
    report = run_scenarios(seed=1, count=1, budgets=[1000])
    assert report.questions == 10 and report.tasks == 5
    by = {r.arm: r for r in report.results}
    # Constraints are pinned in the real system, with or without memory.
    assert by["full"].constraints == by["no-memory"].constraints == 1.0
    assert by["no-memory"].recall == 0.0
    # The history is far longer than the budget: the newest events hold no answer.
    assert by["raw-history"].recall < by["full"].recall
    # The read gate keeps forgotten memories out; without it a tombstoned one comes back.
    assert by["full"].forgotten == 0.0 and by["structured"].forgotten > 0.0
    # Plain text baselines carry no warnings: every retrieved injection is a leak.
    assert by["plain-search"].poisoned == 1.0
    assert by["full"].recall == 1.0
    # No arm ever offers a revoked skill; the baselines offer no skill at all.
    assert all(r.revoked == 0.0 for r in report.results)
    assert by["plain-search"].discovery == 0.0 and by["full"].composition == 1.0
    assert report.system.contamination == 0


def test_bad_arguments():
    with pytest.raises(InvalidInput):
        run_scenarios(count=0)
    with pytest.raises(InvalidInput):
        run_scenarios(count=1, budgets=[-3])
    with pytest.raises(UsageError, match="unknown metric 'nope'"):
        check_metrics(["recall", "nope"])
    assert check_metrics(None)[0] == "constraints"


def test_cli_envelope_metric_filter_plot_and_errors(cli, repo, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "s.png"
    data = cli.json("eval", "scenarios", "--scenarios", "1", "-b", "500", "-b", "800",
                    "--arm", "full", "--arm", "raw-history", "--metric", "recall",
                    "--metric", "conflict", "--plot", str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert data["seeds"] == [1] and data["budgets"] == [500, 800]
    assert data["metrics"] == ["recall", "conflict"]
    assert set(data["results"][0]) >= {"constraints", "recall", "stale", "forgotten",
                                       "poisoned", "conflict", "solvable", "discovery",
                                       "composition", "revoked", "tokens_mean", "p50_ms"}
    assert data["system"]["contamination"] == 0
    # The stores are built in a temporary directory: nothing lands in the user's repository.
    assert not (repo / ".agentstate").exists()
    for args, code, needle in [
        (("--arm", "nope"), 2, "unknown arm 'nope'"),
        (("--metric", "nope"), 2, "unknown metric 'nope'"),
        (("--budget", "0"), 1, "budget"),
        (("--scenarios", "0"), 1, "--scenarios must be at least 1"),
    ]:
        result = cli("eval", "scenarios", *args)
        assert result.exit_code == code, result
        assert needle in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_the_table_shows_the_chosen_metrics_and_the_system_checks():
    import io

    from rich.console import Console

    from agentstate.cli.eval_cmd import _render_scenarios
    from agentstate.evals.scenario_measure import METRICS, ScenarioResult, SystemChecks

    def row(arm: str) -> ScenarioResult:
        return ScenarioResult(arm=arm, budget=1000, **{m: 0.5 for m in METRICS},
                              tokens_mean=900.0, p50_ms=3.0)

    from agentstate.evals.scenario_measure import ScenarioReport

    report = ScenarioReport(seeds=[1], questions=10, tasks=5, facts_by_kind={"stable": 10},
                            arms=["full", "raw-history"], budgets=[1000],
                            metrics=["recall", "conflict"],
                            results=[row("full"), row("raw-history")],
                            system=SystemChecks(0.75, 2, 0.5, 1.0, 1.0, 1, 0, 2))
    out = io.StringIO()
    _render_scenarios(Console(file=out, width=200), report)
    text = out.getvalue()
    assert "conflict" in text and "stale" not in text and "raw-history" in text
    assert "contamination" in text and "0.75" in text
