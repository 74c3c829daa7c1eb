"""`make bench`: every performance figure the project reports, and the eval summary, in one
report (bench/REPORT.md, written by the run and not committed; also printed as it goes).

Runs every bench/bench_*.py module's `main()` in one process — store sizes, `--help`,
`resume`, `context`, `recall`, `remember`/`log`, hooks, skills, import throughput and the ui's
pages, with growth from 1,000 to 100,000 events and `python -c pass` in the same run — then
`agentstate eval scenarios` (defaults) and, when the LoCoMo development split is there
(AGENTSTATE_LOCOMO_DIR, else ../shared/eval/locomo-dev beside the checkout), `eval locomo`
at 1k and 2k. Benchmarks measure; tests assert behaviour. Ratios are taken within this run
(these machines are shared and noisy).

    python bench/run.py                 # everything
    python bench/run.py context eval    # only bench_context and the evals
    python bench/run.py --smoke         # every benchmark at tiny sizes (a test runs this)
    python bench/run.py --out PATH      # write the report elsewhere

Every benchmark prints its figures as ratios against floors measured in the same run
(`python -c pass`, a plain FTS5 script, a file copy, parsing the file alone) and a verdict
against its target from issue 24 (`target …: ok` or `MISSED`); the report gathers those
verdicts in one table at the top. Smoke mode (AGENTSTATE_BENCH_SMOKE=1) shrinks every size to
a few hundred items and one repeat and skips the evals: it proves the bench runs, its
figures mean nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import platform
import re
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).parent
REPORT = HERE / "REPORT.md"
LOCOMO_BUDGETS = (1000, 2000)


def precompile() -> None:
    """Byte-compile the package first, as an installed wheel is.

    With PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) an editable checkout
    never gets .pyc files, and every measured command would pay ~70 ms of compiling source
    that a real installation does not.
    """
    import compileall

    compileall.compile_dir(str(HERE.parent / "agentstate"), quiet=1)


def keep_bytecode_aside() -> None:
    """Smoke mode starts a few hundred short processes: with PYTHONDONTWRITEBYTECODE set (as
    in CI images and these machines) each would compile the package from source again
    (~0.1-0.3 s apiece). They write their bytecode to a temporary cache instead — the first
    process compiles, the rest read — and nothing is written into the checkout."""
    import atexit
    import shutil
    import tempfile

    cache = tempfile.mkdtemp(prefix="agentstate-bench-pycache-")
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = cache


class _Tee(io.TextIOBase):
    """Print as it goes (a long run shows progress) and keep a copy for the report."""

    def __init__(self, out) -> None:
        self.out, self.copy = out, io.StringIO()

    def write(self, text: str) -> int:
        self.out.write(text)
        self.out.flush()
        return self.copy.write(text)


def locomo_dir() -> Path | None:
    candidates = [os.environ.get("AGENTSTATE_LOCOMO_DIR"),
                  str(HERE.parent.parent.parent / "shared" / "eval" / "locomo-dev"),
                  str(HERE.parent.parent / "shared" / "eval" / "locomo-dev")]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return Path(candidate)
    return None


def _rendered(report, render) -> str:
    from rich.console import Console

    out = io.StringIO()
    render(Console(file=out, width=170, no_color=True, highlight=False), report)
    return out.getvalue()


def evals() -> list[tuple[str, str]]:
    """(title, rendered tables) of the eval summary."""
    from agentstate.cli.eval_cmd import _render, _render_scenarios
    from agentstate.evals.measure import run_locomo
    from agentstate.evals.scenario_measure import run_scenarios

    sections = [("eval scenarios (defaults)", _rendered(run_scenarios(), _render_scenarios))]
    path = locomo_dir()
    if path is None:
        sections.append(("eval locomo", "skipped: no LoCoMo data (set AGENTSTATE_LOCOMO_DIR)\n"))
    else:
        report = run_locomo(path, budgets=LOCOMO_BUDGETS)
        sections.append((f"eval locomo {path.name} at 1k and 2k", _rendered(report, _render)))
    return sections


def main() -> int:
    args = sys.argv[1:]
    if {"-h", "--help"} & set(args):
        print(__doc__)
        return 0
    known = {p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py")} | {"eval"}
    unknown = [a for a in args if not a.startswith("-") and a not in known
               and (a != args[args.index("--out") + 1] if "--out" in args else True)]
    if unknown:
        print(f"bench/run.py: no benchmark named {', '.join(unknown)} "
              f"(known: {', '.join(sorted(known))})", file=sys.stderr)
        return 2
    out = REPORT
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1])
        del args[at:at + 2]
    smoke = "--smoke" in args
    if smoke:
        args.remove("--smoke")
        os.environ["AGENTSTATE_BENCH_SMOKE"] = "1"  # read by bench.data at import
    sys.path.insert(0, str(HERE.parent))
    if not smoke:
        precompile()
    else:
        keep_bytecode_aside()
    selected = set(args)
    started = time.perf_counter()
    sections: list[tuple[str, str, float]] = []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem
        if selected and name.removeprefix("bench_") not in selected:
            continue
        print(f"== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        tee = _Tee(sys.stdout)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(tee):
            module.main()
        sections.append((name, tee.copy.getvalue(), time.perf_counter() - t0))
        print()
    from bench.data import cleanup

    cleanup()
    if not smoke and (not selected or "eval" in selected):
        print("== eval", flush=True)
        t0 = time.perf_counter()
        for title, text in evals():
            print(f"-- {title}\n{text}")
            sections.append((title, text, time.perf_counter() - t0))
            t0 = time.perf_counter()
    write_report(sections, time.perf_counter() - started, out, smoke)
    print(f"report written to {out}")
    return 0


# A verdict as the benchmarks print it: `target …: ok` or `target …: MISSED` (a line may hold two).
_VERDICT = re.compile(r"target[^()]*?: (ok|MISSED)(?![A-Za-z])")


def verdicts(sections: list[tuple[str, str, float]]) -> list[str]:
    """Every line a benchmark printed with a verdict against a target, in one table; beside a
    MISSED one, why it is missed and what meeting it would take (bench/missed.py)."""
    from bench.missed import note_for

    rows = []
    for title, text, _ in sections:
        bench = title.removeprefix("bench_")
        for line in text.splitlines():
            found = _VERDICT.findall(line)
            if not found:
                continue
            status = "MISSED" if "MISSED" in found else "ok"
            why = ""
            if status == "MISSED":
                note = note_for(bench, line)
                why = (f"{note.why}. Would take: {note.would_take} ({note.where})" if note
                       else "no note in bench/missed.py says why")
            rows.append(f"| {status} | {bench} | {line.strip().replace('|', '/')} | "
                        f"{why.replace('|', '/')} |")
    if not rows:
        return []
    return ["## Against the targets", "",
            "Each line as its benchmark printed it below (ratios within this run); beside a "
            "miss, why and what meeting the target would take, as last analysed.", "",
            "| verdict | bench | figure | why missed, and what it would take |",
            "|---|---|---|---|", *rows, ""]


def write_report(sections: list[tuple[str, str, float]], seconds: float,
                 out: Path = REPORT, smoke: bool = False) -> None:
    import agentstate

    head = [
        "# agentstate benchmark and eval report",
        "",
        f"Written by `make bench` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC in {seconds:.0f} s: "
        f"agentstate {getattr(agentstate, '__version__', '?')}, Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPU(s). Every figure below comes from this one run; compare "
        "ratios, not absolute times, across machines."
        + (" SMOKE MODE: tiny sizes, one repeat; the figures mean nothing." if smoke else ""),
        "",
        *verdicts(sections),
    ]
    body = []
    for title, text, took in sections:
        body += [f"## {title}", "", f"({took:.0f} s)", "", "```", text.rstrip(), "```", ""]
    out.write_text("\n".join(head + body + _kept_mutation_section(out)), encoding="utf-8")


def _kept_mutation_section(out: Path) -> list[str]:
    """The section `make mutation` wrote into an earlier report (bench/mutation.py): a bench
    run does not measure it, so it is carried over rather than lost."""
    from bench.mutation import section_span

    if not out.exists():
        return []
    old = out.read_text(encoding="utf-8").splitlines()
    span = section_span(old)
    return old[span[0]:span[1]] if span is not None else []


if __name__ == "__main__":
    raise SystemExit(main())
