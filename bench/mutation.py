"""`make mutation`: mutation testing of the gates, the budgeter, the tool policy, sync merge
and the hook handler, in bounded time, with its score in bench/REPORT.md.

    python bench/mutation.py [--budget SECONDS] [--max-children N] [--out PATH]

mutmut (`[tool.mutmut]` in pyproject.toml names the modules and the tests) copies the package
into mutants/, plants one change at a time (`>` for `>=`, a constant, a dropped call…) and runs
the tests that reach the changed function. A change no test notices *survived*: a bug of that
shape would pass the suite. mutmut tries the mutants it expects to be quickest first; when the
budget (default 20 minutes) runs out the run is interrupted the way mutmut expects (Ctrl-C: it
keeps every result so far), and the mutants it did not reach are reported as not checked,
never as killed. Running it again continues where it stopped.

Like the benchmarks this measures; it asserts nothing. Its section replaces an earlier
"Mutation testing" section of the report, and `make bench` keeps it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
REPORT = HERE / "REPORT.md"
HEADING = "## Mutation testing"
DEFAULT_BUDGET = 20 * 60
GRACE = 120  # seconds mutmut gets to stop its workers and save after Ctrl-C


def run_mutmut(budget: float, max_children: int) -> tuple[float, bool]:
    """Run `mutmut run` until it ends or `budget` seconds pass; (seconds, cut short)."""
    mutmut = Path(sys.executable).parent / "mutmut"
    start = time.monotonic()
    process = subprocess.Popen([str(mutmut), "run", "--max-children", str(max_children)],
                               cwd=ROOT, start_new_session=True)
    try:
        process.wait(timeout=budget)
        return time.monotonic() - start, False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        return time.monotonic() - start, True


def stats() -> dict[str, int]:
    """mutmut's counts over every mutant (from its own export)."""
    mutmut = Path(sys.executable).parent / "mutmut"
    subprocess.run([str(mutmut), "export-cicd-stats"], cwd=ROOT, check=True,
                   capture_output=True, text=True)
    data = json.loads((ROOT / "mutants" / "mutmut-cicd-stats.json").read_text("utf-8"))
    return {key: int(value) for key, value in data.items()}


def survivors() -> list[str]:
    """Names of the mutants that survived (`mutmut results` lists every one not killed)."""
    mutmut = Path(sys.executable).parent / "mutmut"
    listing = subprocess.run([str(mutmut), "results"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
    return [line.split(":")[0].strip() for line in listing.splitlines()
            if line.strip().endswith(": survived")]


def section(counts: dict[str, int], alive: list[str], seconds: float, cut: bool,
            budget: float) -> list[str]:
    killed = counts["killed"] + counts["timeout"]
    checked = killed + counts["survived"]
    reached = checked + counts["no_tests"]
    not_checked = counts["total"] - reached - counts["skipped"] - counts["suspicious"] \
        - counts["segfault"] - counts["check_was_interrupted_by_user"]
    score = f"{100 * killed / checked:.1f} %" if checked else "n/a"
    strict = f"{100 * killed / reached:.1f} %" if reached else "n/a"
    how = (f"stopped at the budget of {budget:.0f} s" if cut
           else "every mutant reached")
    lines = [
        HEADING, "",
        f"Written by `make mutation` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in "
        f"{seconds:.0f} s ({how}; mutmut, the modules and tests of `[tool.mutmut]` in "
        "pyproject.toml).", "",
        f"**Score {score}**: {killed} of {checked} mutants checked were killed "
        f"({counts['timeout']} of them by a timeout). Counting the {counts['no_tests']} "
        f"mutants no selected test reaches as survivors: {strict}.", "",
        "| mutants | count |", "|---|---|",
        f"| generated | {counts['total']} |",
        f"| killed | {counts['killed']} |",
        f"| killed by a timeout | {counts['timeout']} |",
        f"| survived | {counts['survived']} |",
        f"| no selected test reaches them | {counts['no_tests']} |",
        f"| not checked (budget) | {max(0, not_checked)} |",
        f"| suspicious, segfault, skipped, interrupted | {counts['suspicious']}, "
        f"{counts['segfault']}, {counts['skipped']}, "
        f"{counts['check_was_interrupted_by_user']} |",
        "",
    ]
    if alive:
        lines += ["Survivors (`mutmut show NAME` prints the change):", "", "```",
                  *alive[:40], *([f"… and {len(alive) - 40} more"] if len(alive) > 40 else []),
                  "```", ""]
    return lines


def section_span(report: list[str]) -> tuple[int, int] | None:
    """(first, past last) line of this section in a report's lines, if it has one."""
    if HEADING not in report:
        return None
    start = report.index(HEADING)
    end = next((i for i in range(start + 1, len(report)) if report[i].startswith("## ")),
               len(report))
    return start, end


def write_section(lines: list[str], out: Path) -> None:
    """Put the section into the report, replacing an earlier one (the rest is kept)."""
    old = out.read_text("utf-8").splitlines() if out.exists() else [
        "# agentstate benchmark and eval report", ""]
    span = section_span(old)
    if span is not None:
        old = old[:span[0]] + old[span[1]:]
    while old and not old[-1].strip():
        old.pop()
    out.write_text("\n".join([*old, "", *lines]), encoding="utf-8")


def main() -> int:
    args = sys.argv[1:]

    def option(name: str, default: str) -> str:
        return args[args.index(name) + 1] if name in args else default

    budget = float(option("--budget", str(DEFAULT_BUDGET)))
    max_children = int(option("--max-children", str(os.cpu_count() or 2)))
    out = Path(option("--out", str(REPORT)))
    seconds, cut = run_mutmut(budget, max_children)
    lines = section(stats(), survivors(), seconds, cut, budget)
    write_section(lines, out)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
