"""Kept eval reports (evals/results.py): what is stored, how many, and what is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentstate.errors import NotFound, Refused
from agentstate.evals import results
from agentstate.evals.measure import ArmResult, LocomoReport
from agentstate.evals.scenario_measure import ScenarioReport


def _locomo(path: str = "data/locomo10.json", recall: float = 0.5) -> LocomoReport:
    return LocomoReport(
        path=path, conversations=["a"], turns=3, questions=2, by_category={"single-hop": 2},
        skipped_adversarial=0, skipped_no_evidence=0, unknown_evidence=0, turns_rejected=0,
        arms=["full", "no-memory"], budgets=[500, 1000],
        results=[ArmResult(arm="full", budget=500, recall=recall, by_category={},
                           questions=2, tokens_mean=480.0, p50_ms=3.0)])


def test_the_newest_report_of_each_kind_is_the_json_of_the_report(store):
    older = results.keep_report(store, "locomo", _locomo(recall=0.25))
    store.clock.advance(timedelta(minutes=1))
    newer = results.keep_report(store, "locomo", _locomo(recall=0.75))
    scenarios = results.keep_report(store, "scenarios", ScenarioReport(
        seeds=[3, 4, 5], questions=9, tasks=3, facts_by_kind={}, arms=["full"],
        budgets=[1000], metrics=["recall"]))
    latest = results.latest_reports(store)
    assert [r.id for r in latest] == [scenarios.id, newer.id]  # scenarios first
    assert latest[1].report["results"][0]["recall"] == 0.75
    assert latest[1].corpus == "LoCoMo data/locomo10.json"
    assert latest[0].corpus == "generated scenarios, seeds 3–5"
    assert results.get_report(store, older.id).report["results"][0]["recall"] == 0.25
    assert [s.id for s in results.list_reports(store)] == [scenarios.id, newer.id, older.id]


def test_only_the_newest_of_each_kind_are_kept(store, monkeypatch):
    monkeypatch.setattr(results, "KEEP_PER_KIND", 3)
    kept = []
    for n in range(5):
        kept.append(results.keep_report(store, "locomo", _locomo(recall=n / 10)).id)
        store.clock.advance(timedelta(seconds=1))
    other = results.keep_report(store, "scenarios", ScenarioReport(
        seeds=[1], questions=1, tasks=1, facts_by_kind={}, arms=["full"], budgets=[1000],
        metrics=["recall"])).id
    listed = [s.id for s in results.list_reports(store)]
    assert listed == [other, *reversed(kept[2:])]
    with pytest.raises(NotFound):
        results.get_report(store, kept[0])


def test_a_report_with_a_secret_is_refused_and_nothing_is_stored(store):
    with pytest.raises(Refused):
        results.keep_report(store, "locomo",
                            _locomo(path="/data/AKIAIOSFODNN7EXAMPLE/ghp_" + "a" * 36))
    assert results.list_reports(store) == []
