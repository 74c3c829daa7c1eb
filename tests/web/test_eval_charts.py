"""The Eval page's figures (web/charts.py): the geometry --plot's axes would give."""

from __future__ import annotations

import pytest

from agentstate.web import charts


def _report(budgets, results, arms=("full", "no-memory")):
    return {"arms": list(arms), "budgets": budgets, "questions": 4, "seeds": [1, 2],
            "results": results}


def test_points_sit_where_the_log2_axis_and_the_value_put_them():
    report = _report([1000, 2000, 4000, 8000], [
        {"arm": "full", "budget": b, "recall": r, "leak": 0.0}
        for b, r in ((8000, 1.0), (1000, 0.25), (4000, 0.5), (2000, None))])
    recall = charts.figure("scenarios", report).panels[0]
    (line,) = recall.lines  # no-memory has no results: no line
    # Sorted by budget; a missing value (None) leaves its point out, as --plot does.
    assert [p.budget for p in line.points] == [1000, 4000, 8000]
    xs = {p.budget: p.x for p in line.points}
    # Equal steps on a log-2 axis: 1000 → 4000 is two doublings, 4000 → 8000 one.
    assert xs[4000] - xs[1000] == pytest.approx(2 * (xs[8000] - xs[4000]))
    ticks = dict((label, x) for x, label in recall.x_ticks)
    assert ticks["4,000"] == pytest.approx(xs[4000])
    ys = {p.budget: p.y for p in line.points}
    scale = (recall.bottom - recall.top) / 1.04  # the axis runs from -0.02 to 1.02
    assert ys[1000] - ys[4000] == pytest.approx(0.25 * scale)
    assert recall.top < ys[8000] < ys[4000] < ys[1000] < recall.bottom
    assert [p.value for p in line.points] == [0.25, 0.5, 1.0]
    assert line.path.startswith(f"M{line.points[0].x:.1f},") and line.path.count("L") == 2


def test_each_kind_draws_the_panels_its_plot_draws():
    report = _report([500], [{"arm": "no-memory", "budget": 500, "recall": 0.0}])
    locomo = charts.figure("locomo", report)
    assert [p.metric for p in locomo.panels] == ["recall"]
    assert locomo.title == "LoCoMo evidence recall (4 questions)"
    (line,) = locomo.panels[0].lines
    assert line.arm == "no-memory" and line.index == 1  # its colour follows the arm's place
    # One budget: the point is in the middle of the axis, at the bottom for 0.
    panel = locomo.panels[0]
    assert line.points[0].x == pytest.approx((panel.left + panel.right) / 2)
    assert line.points[0].y == pytest.approx(panel.bottom)
    scenarios = charts.figure("scenarios", report)
    assert [p.metric for p in scenarios.panels] == ["recall", "leak"]
    assert scenarios.title == "generated scenarios (2 seeds, 4 questions)"
