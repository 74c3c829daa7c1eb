"""`make mutation`: mutation testing of the gates, the budgeter, the tool policy, sync merge
and the hook handler, in bounded time, with its score in bench/REPORT.md.

    python bench/mutation.py [--budget SECONDS] [--max-children N] [--out PATH] [--all]

mutmut (`[tool.mutmut]` in pyproject.toml names the modules and the tests) copies the package
into mutants/, plants one change at a time (`>` for `>=`, a constant, a dropped call…) and runs
the tests that reach the changed function. A change no test notices *survived*: a bug of that
shape would pass the suite.

mutmut makes about 4,000 mutants of the six modules; on a shared 2-core machine one costs
seconds, so all of them take hours. Each run therefore checks a fixed sample: the mutants of
each module's deciding functions (`SAMPLE`) whose number ends in one of `SAMPLE_DIGITS`
(mutmut numbers a function's mutants in source order, so this spreads the sample over each
function). `--all` checks every mutant instead (then run it again until none is left). Before
the first mutant mutmut runs the test selection twice (once traced, to learn which test reaches
which function; once clean), so the selection holds the quick in-process test files only.
When the budget (default 20 minutes) runs out the run is interrupted the way mutmut expects
(Ctrl-C: it keeps every result so far), and the sampled mutants it did not reach are reported
as not checked, never as killed.

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


# The functions of each module that decide (a gate's verdict, a fit, a rule, a merge, a hook's
# record), as mutmut names them: `Class.method` for a method.
SAMPLE = {
    "agentstate.memory.write": ("remember", "_gate_status", "_find_duplicate", "outside_evidence",
                                "guesses", "check_text", "_with_source_evidence"),
    "agentstate.memory.recall": ("recall", "_gate_decision", "_relevant", "lapsed_sources",
                                 "_checked_filters"),
    "agentstate.context.budgeter": ("allocate", "_Packer.place", "_Packer.fits_extra",
                                    "_place_ranked", "_place_index", "_demote_until_within",
                                    "_fix_pinned", "_visit_order"),
    "agentstate.tools.policy": ("_allow", "_deny_matches", "_first_refusal", "authorize",
                                "check_command", "resolve_program"),
    "agentstate.sync.merge": ("_refusal", "_replace_parent", "user_stated_here", "_memory",
                              "_evidence", "_tombstones", "_settle", "_applies_tombstones",
                              "_match"),
    "agentstate.integrations.hooks": ("_prompt", "handle", "_resume_context"),
    "agentstate.integrations.hook_payload": ("confined_transcript", "parse_payload"),
    "agentstate.integrations.hook_tool": ("tool_record", "_judged_outcome"),
}
# A mutant is in the sample when its number ends in one of these (about 1 in 10 per digit):
# some 270 of the 2,600 mutants of the functions above.
SAMPLE_DIGITS = "3"


def sample_patterns(digits: str = SAMPLE_DIGITS) -> list[str]:
    """mutmut mutant-name globs of the sample (`module.x_function__mutmut_*3`)."""
    patterns = []
    for module, functions in SAMPLE.items():
        for function in functions:
            cls, _, method = function.rpartition(".")
            mangled = f"x\u01c1{cls}\u01c1{method}" if cls else f"x_{method}"
            patterns += [f"{module}.{mangled}__mutmut_*{digit}" for digit in digits]
    return patterns


def run_mutmut(budget: float, max_children: int, patterns: list[str]) -> tuple[float, bool]:
    """Run `mutmut run` on the mutants `patterns` name (every one when empty) until it ends or
    `budget` seconds pass; (seconds, cut short)."""
    mutmut = Path(sys.executable).parent / "mutmut"
    start = time.monotonic()
    process = subprocess.Popen([str(mutmut), "run", "--max-children", str(max_children),
                                *patterns], cwd=ROOT, start_new_session=True)
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


def tally(patterns: list[str]) -> tuple[dict[str, int], list[str]]:
    """(count per mutmut status, surviving mutants) over the mutants `patterns` name (all
    when empty), from the results mutmut keeps beside each mutated file."""
    from fnmatch import fnmatchcase

    from mutmut.stats import status_by_exit_code

    counts: dict[str, int] = {}
    alive: list[str] = []
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        codes = json.loads(meta.read_text("utf-8")).get("exit_code_by_key", {})
        for name, code in codes.items():
            if patterns and not any(fnmatchcase(name, p) for p in patterns):
                continue
            status = status_by_exit_code[code]
            counts[status] = counts.get(status, 0) + 1
            if status == "survived":
                alive.append(name)
    return counts, sorted(alive)


def section(counts: dict[str, int], alive: list[str], seconds: float, cut: bool,
            budget: float, *, sampled: bool, loads: tuple[str, str]) -> list[str]:
    def n(status: str) -> int:
        return counts.get(status, 0)

    killed = n("killed") + n("timeout")
    checked = killed + n("survived")
    total = sum(counts.values())
    other = total - checked - n("no tests") - n("not checked")
    score = f"{100 * killed / checked:.1f} %" if checked else "n/a"
    how = f"stopped at the budget of {budget:.0f} s" if cut else "every mutant reached"
    what = (f"the sample (mutants numbered *{SAMPLE_DIGITS} of the deciding functions, "
            "`SAMPLE` in bench/mutation.py)" if sampled else "every mutant")
    lines = [
        HEADING, "",
        f"Written by `make mutation` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in "
        f"{seconds:.0f} s ({how}; load average {loads[0]} at the start, {loads[1]} at the "
        f"end; mutmut on {what}, with the modules and tests of `[tool.mutmut]` in "
        "pyproject.toml).", "",
        f"**Score {score}**: {killed} of {checked} mutants checked were killed "
        f"({n('timeout')} of them by a timeout).", "",
        "| mutants | count |", "|---|---|",
        f"| in this run | {total} |",
        f"| killed | {n('killed')} |",
        f"| killed by a timeout | {n('timeout')} |",
        f"| survived | {n('survived')} |",
        f"| no selected test reaches them | {n('no tests')} |",
        f"| not checked (budget) | {n('not checked')} |",
        f"| other (suspicious, segfault, skipped, interrupted) | {other} |",
        "",
    ]
    if alive:
        lines += ["Survivors (`mutmut show NAME` prints the change):", "", "```",
                  *alive[:40], *([f"… and {len(alive) - 40} more"] if len(alive) > 40 else []),
                  "```", ""]
    return lines


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


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
    patterns = [] if "--all" in args else sample_patterns()
    before = load_average()
    seconds, cut = run_mutmut(budget, max_children, patterns)
    counts, alive = tally(patterns)
    lines = section(counts, alive, seconds, cut, budget, sampled=bool(patterns),
                    loads=(before, load_average()))
    write_section(lines, out)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
