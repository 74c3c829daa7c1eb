"""Recall against budget, one line per arm (matplotlib: the optional `[plot]` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentstate.distribution import install_hint
from agentstate.errors import InvalidInput

FORMATS = (".png", ".svg", ".pdf")
INSTALL_HINT = install_hint("plot", "matplotlib>=3.7")


def check_plot_target(path: Path) -> Path:
    """Fail before a long run, not after it: matplotlib present, a known format, a folder
    that exists."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in FORMATS:
        raise InvalidInput(f"--plot {path}: the file must end in {', '.join(FORMATS)}")
    if not path.parent.is_dir():
        raise InvalidInput(f"--plot {path}: the folder {path.parent} does not exist")
    if path.is_dir():
        raise InvalidInput(f"--plot {path} is a folder, not a file")
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise InvalidInput(f"--plot needs matplotlib, which is not installed ({INSTALL_HINT})"
                           ) from exc
    return path


def plot_recall(report: Any, path: Path) -> Path:
    """Write the figure; the Figure API directly, so no GUI backend is ever touched."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.5), dpi=120)
    axes = figure.subplots()
    for arm in report.arms:
        points = [(r.budget, r.recall) for r in report.results
                  if r.arm == arm and r.recall is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            axes.plot(xs, ys, marker="o", label=arm)
    axes.set_xscale("log", base=2)
    axes.set_xticks(report.budgets, [f"{b:,}" for b in report.budgets])
    axes.set_ylim(0, 1)
    axes.set_xlabel("budget (tokens, cl100k)")
    axes.set_ylabel("evidence recall")
    axes.set_title(f"LoCoMo evidence recall ({report.questions} questions)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    figure.savefig(path)
    return path


def plot_scenarios(report: Any, path: Path) -> Path:
    """Two panels against budget, one line per arm: evidence recall (higher is better) and
    leakage — a stale, forgotten or unmarked poisoned fact in the pack (lower is better)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.5), dpi=120)
    panels = figure.subplots(1, 2)
    for axes, metric, label in ((panels[0], "recall", "evidence recall ↑"),
                                (panels[1], "leak", "leakage: stale, forgotten or poisoned ↓")):
        for arm in report.arms:
            points = [(r.budget, getattr(r, metric)) for r in report.results
                      if r.arm == arm and getattr(r, metric) is not None]
            if points:
                xs, ys = zip(*points, strict=True)
                axes.plot(xs, ys, marker="o", label=arm)
        axes.set_xscale("log", base=2)
        axes.set_xticks(report.budgets, [f"{b:,}" for b in report.budgets])
        axes.set_ylim(-0.02, 1.02)
        axes.set_xlabel("budget (tokens, cl100k)")
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
    panels[0].legend(loc="best")
    figure.suptitle(f"generated scenarios ({len(report.seeds)} seeds, {report.questions} "
                    "questions)")
    figure.tight_layout()
    figure.savefig(path)
    return path
