"""The plots `eval … --plot` draws (evals/plot.py, matplotlib), as geometry for inline SVG.

The Eval page draws them in the browser from the stored report with no library and no
network asset: the same panels (scenarios: evidence recall and leakage against budget;
LoCoMo: evidence recall against budget), one line per arm, budgets on a log-2 axis ticked
at the measured budgets, values from 0 to 1. Only numbers and coordinates are computed
here; the template writes the elements, so every label passes through autoescape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

WIDTH, HEIGHT = 520, 330
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 48
Y_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass
class Point:
    x: float
    y: float
    budget: int
    value: float


@dataclass
class Line:
    arm: str
    index: int          # the arm's place in the report: its colour class
    points: list[Point]

    @property
    def path(self) -> str:
        return " ".join(f"{'M' if n == 0 else 'L'}{p.x:.1f},{p.y:.1f}"
                        for n, p in enumerate(self.points))


@dataclass
class Panel:
    metric: str
    label: str           # the y axis, as --plot labels it
    lines: list[Line] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


@dataclass
class Figure:
    title: str
    panels: list[Panel]


def _x_of(budgets: list[int]) -> Any:
    """Budget → x on a log-2 axis spanning the measured budgets (one budget: the middle)."""
    low, high = math.log2(min(budgets)), math.log2(max(budgets))
    span = WIDTH - RIGHT - LEFT
    pad = span * 0.05

    def x(budget: int) -> float:
        if high == low:
            return LEFT + span / 2
        return LEFT + pad + (math.log2(budget) - low) / (high - low) * (span - 2 * pad)
    return x


def _y_of(low: float, high: float) -> Any:
    def y(value: float) -> float:
        return (HEIGHT - BOTTOM) - (value - low) / (high - low) * (HEIGHT - BOTTOM - TOP)
    return y


def panel(report: dict[str, Any], metric: str, label: str, limits: tuple[float, float]
          ) -> Panel:
    """One metric against budget, one line per arm; a result without the metric (None)
    leaves its point out, as --plot does."""
    budgets = [int(b) for b in report.get("budgets") or []] or [1]
    x, y = _x_of(budgets), _y_of(*limits)
    out = Panel(metric=metric, label=label,
                x_ticks=[(x(b), f"{b:,}") for b in budgets],
                y_ticks=[(y(v), f"{v:.1f}") for v in Y_TICKS])
    results = report.get("results") or []
    for index, arm in enumerate(report.get("arms") or []):
        points = sorted((Point(x(int(r["budget"])), y(float(r[metric])), int(r["budget"]),
                               float(r[metric]))
                         for r in results if r.get("arm") == arm and r.get(metric) is not None),
                        key=lambda p: p.budget)
        if points:
            out.lines.append(Line(arm=arm, index=index, points=points))
    return out


def figure(kind: str, report: dict[str, Any]) -> Figure:
    """The figure --plot draws for this kind of report."""
    if kind == "scenarios":
        seeds = len(report.get("seeds") or [])
        return Figure(
            title=f"generated scenarios ({seeds} seeds, {report.get('questions', 0)} questions)",
            panels=[panel(report, "recall", "evidence recall ↑", (-0.02, 1.02)),
                    panel(report, "leak", "leakage: stale, forgotten or poisoned ↓",
                          (-0.02, 1.02))])
    return Figure(title=f"LoCoMo evidence recall ({report.get('questions', 0)} questions)",
                  panels=[panel(report, "recall", "evidence recall", (0.0, 1.0))])
