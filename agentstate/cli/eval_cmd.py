"""`agentstate eval`: offline measurements of the system against its ablations."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, cli_store, emit

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.evals.measure import LocomoReport
    from agentstate.evals.scenario_measure import ScenarioReport

eval_app = typer.Typer(help="Measure the system against ablations, offline, in temporary "
                            "stores (your store only keeps the report, for `agentstate ui`).",
                       no_args_is_help=True)
app.add_typer(eval_app, name="eval")

BudgetsOption = Annotated[
    list[str] | None,
    typer.Option("--budget", "-b", metavar="N",
                 help="Token budget to measure at; repeat for several (default: "
                      "1000 2000 4000 8000)."),
]
ArmsOption = Annotated[
    list[str] | None,
    typer.Option("--arm", metavar="ARM",
                 help="Arm to run; repeat for several (default: all, the dense ones where "
                      "the [dense] extra is installed): full, dense, hybrid, plain-search, "
                      "raw-history, no-memory, structured; ablations of full, only when "
                      "named: no-dense, no-speakers, no-answer-lines."),
]


@eval_app.command("locomo")
def locomo(
    path: Annotated[Path, typer.Argument(help="A LoCoMo conversation file (JSON) or a folder "
                                              "of them.")],
    budget: BudgetsOption = None,
    arm: ArmsOption = None,
    limit_questions: Annotated[
        int | None,
        typer.Option("--limit-questions", metavar="N", min=1,
                     help="Measure only the first N questions (quick runs)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png",
                     help="Also draw recall against budget per arm (needs the [plot] "
                          "extra: matplotlib)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Does a context pack hold the evidence the next turn needs? Measured on LoCoMo.

    Each conversation is imported, turn by turn, as events into a temporary store (removed
    afterwards). For every question of categories 1-4 (multi-hop, temporal, open-domain,
    single-hop) each arm builds a pack with the question as the query, at each budget.
    Recall = the share of the question's evidence turns whose events are in the pack, whole
    or compressed (read from the pack's manifest). Answer-visible recall, beside it, counts
    a compressed item only where its line shows every answer word (the dataset's `answer`)
    that the turn holds. Arms: full (`agentstate context --query` as is), dense (the
    offline embedding model alone), hybrid (FTS5 BM25 and dense fused by reciprocal rank),
    plain-search (FTS5 BM25, porter), raw-history (newest turns that fit), no-memory
    (pinned + task state only), structured (no read gate); the ablations no-dense,
    no-speakers and no-answer-lines are full with one part off. Reports mean recall per
    category and overall, mean tokens used and the median assembly time, and why each
    missed evidence turn was missed (never retrieved, or the pack manifest's reason:
    budget, low relevance, duplicate, pointer…).

    Questions without evidence are skipped and counted; category 5 (adversarial) is left out.
    """
    from agentstate.context.assemble import parse_budget
    from agentstate.evals.arms import check_arms
    from agentstate.evals.measure import DEFAULT_BUDGETS, run_locomo

    # Every argument is checked before the (long) run starts.
    budgets = [parse_budget(b, 0) for b in budget] if budget else list(DEFAULT_BUDGETS)
    arms = list(check_arms(arm))
    if plot is not None:
        from agentstate.evals.plot import check_plot_target

        plot = check_plot_target(plot)

    with _progress() as callbacks:
        report = run_locomo(path, arms=arms, budgets=budgets, limit_questions=limit_questions,
                            **callbacks)
    if plot is not None:
        from agentstate.evals.plot import plot_recall

        plot_recall(report, plot)
    _keep("locomo", report)
    emit(report, as_json=as_json, human=_render)
    if plot is not None and not as_json:
        from agentstate.output import info

        info(f"plot written to {plot}")


def _keep(kind: str, report: Any) -> None:
    """Keep the report in this repository's store, when there is one, for the ui's Eval
    page. The run's result is printed either way: a report that cannot be kept (no store
    here, a locked or refused write) is said on stderr, never an error after a long run."""
    from agentstate.errors import AgentStateError, StoreMissing
    from agentstate.evals.results import keep_report
    from agentstate.output import info

    try:
        with cli_store() as store:
            kept = keep_report(store, kind, report)
    except StoreMissing:
        info("no agentstate store here: the report is not kept (the ui's Eval page shows "
             "the reports of runs made inside a repository with a store)")
        return
    except AgentStateError as exc:
        info(f"the report is not kept: {exc}")
        return
    info(f"report kept in the store ({kind} {kept.id}): `agentstate ui` draws it on its "
         "Eval page")


PROGRESS_AFTER_S = 1.5


@contextmanager
def _progress() -> Iterator[dict[str, Any]]:
    """A progress bar on stderr, only on a terminal (piped, stderr stays clean) and only once
    the run has taken over PROGRESS_AFTER_S (a quick run shows none); yields the callbacks the
    measuring functions take."""
    import time

    from agentstate.output import stderr_console

    console = stderr_console()
    if not console.is_terminal:
        yield {}
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    progress = Progress("packs", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
    task = progress.add_task("packs", total=None)
    started = time.monotonic()

    def advance(n: int) -> None:
        progress.advance(task, n)
        if not progress.live.is_started and time.monotonic() - started > PROGRESS_AFTER_S:
            progress.start()

    try:
        yield {"on_start": lambda total: progress.update(task, total=total),
               "on_progress": advance}
    finally:
        progress.stop()


def _render(console: Console, report: LocomoReport) -> None:
    from rich.table import Table

    from agentstate.evals.locomo import CATEGORIES

    def pct(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    cats = ", ".join(f"{name} {n}" for name, n in report.by_category.items())
    console.print(f"LoCoMo: {len(report.conversations)} conversation(s), {report.turns} turns, "
                  f"{report.questions} questions measured ({cats}); skipped "
                  f"{report.skipped_adversarial} adversarial, {report.skipped_no_evidence} "
                  f"without evidence; {report.unknown_evidence} evidence id(s) name no turn; "
                  f"{report.seconds:g} s")
    if report.turns_rejected:
        console.print(f"{report.turns_rejected} turn(s) refused by the importer (secrets or "
                      f"empty text): their evidence counts as missed (not imported)")
    if not console.is_terminal:
        # Piped or redirected (a report, a README): never squeeze the columns to 80.
        console.width = max(console.width, 120)
    table = Table(title="evidence recall by arm and budget")
    columns = ["budget", "arm", "recall", "answer visible", *CATEGORIES.values(),
               "tokens (mean)", "p50 ms"]
    errors = any(r.errors for r in report.results)
    if errors:
        columns.append("errors")
    for column in columns:
        table.add_column(column, justify="left" if column == "arm" else "right")
    for budget in report.budgets:
        rows = [r for r in report.results if r.budget == budget]
        for n, row in enumerate(rows):
            cells = [f"{budget:,}" if n == 0 else "", row.arm, pct(row.recall),
                     pct(row.answer_visible),
                     *(pct(row.by_category[c]) for c in CATEGORIES.values()),
                     f"{row.tokens_mean:,.0f}", f"{row.p50_ms:.1f}"]
            if errors:
                cells.append(str(row.errors))
            table.add_row(*cells, end_section=n == len(rows) - 1)
    console.print(table)
    _render_misses(console, report)


def _render_misses(console: Console, report: LocomoReport) -> None:
    """Why evidence turns were not in the pack: never retrieved, or the manifest's reason."""
    from rich.table import Table

    reasons = list(dict.fromkeys(why for r in report.results for why in r.misses))
    if not reasons:
        return
    table = Table(title="evidence turns missed, by why")
    for column in ("budget", "arm", *reasons):
        table.add_column(column, justify="left" if column == "arm" else "right")
    for budget in report.budgets:
        rows = [r for r in report.results if r.budget == budget]
        for n, row in enumerate(rows):
            table.add_row(f"{budget:,}" if n == 0 else "", row.arm,
                          *(str(row.misses.get(why, 0)) for why in reasons),
                          end_section=n == len(rows) - 1)
    console.print(table)


@eval_app.command("scenarios")
def scenarios(
    seed: Annotated[int, typer.Option("--seed", help="First scenario's seed.")] = 1,
    count: Annotated[
        int, typer.Option("--scenarios", metavar="N",
                          help="How many scenarios (seeds SEED … SEED+N-1; at least 1).")
    ] = 5,
    budget: BudgetsOption = None,
    arm: ArmsOption = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", metavar="NAME",
                     help="Show only this metric; repeat for several (default: all): "
                          "constraints, recall, stale, forgotten, poisoned, conflict, "
                          "solvable, leak, discovery, composition, revoked."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png",
                     help="Also draw recall and leakage against budget per arm (needs the "
                          "[plot] extra: matplotlib)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Generated coding-agent histories with known answers: what each arm keeps, leaks, finds.

    Each seed writes one task into a temporary store (removed afterwards) through the
    ordinary domain functions, over three sessions of one run: constraints stated once at
    the start; facts observed in tool output and remembered (the test command, a config
    value and an owner change later; one is contradicted by the model's guess, one is only
    a guess, one expires, one is forgotten, one purged, one comes with injected
    instructions); ~10k tokens of chatter; skills with triggers (one revoked, one whose
    required tool has gone, a task needing two); documents that try to get a skill
    published. For each fact's question and skill task, every arm and budget: constraint
    retention, evidence recall, stale/forgotten/poisoned leakage, conflict resolution, a
    solvability proxy, skill discovery (top-1), composition and revoked skills offered.
    Once per scenario (the same for every arm): write precision, `skill match` top-1, load
    compliance, and contamination (skills published from documents: must be 0). The same
    seed gives the same scenario on every machine.
    """
    from agentstate.context.assemble import parse_budget
    from agentstate.errors import InvalidInput
    from agentstate.evals.arms import SCENARIO_ARMS, check_arms
    from agentstate.evals.scenario_measure import DEFAULT_BUDGETS, check_metrics, run_scenarios

    if count < 1:
        raise InvalidInput(f"--scenarios must be at least 1, got {count}")
    budgets = [parse_budget(b, 0) for b in budget] if budget else list(DEFAULT_BUDGETS)
    arms = list(check_arms(arm, SCENARIO_ARMS))
    metrics = list(check_metrics(metric))
    if plot is not None:
        from agentstate.evals.plot import check_plot_target

        plot = check_plot_target(plot)
    with _progress() as callbacks:
        report = run_scenarios(seed=seed, count=count, arms=arms, budgets=budgets,
                               metrics=metrics, **callbacks)
    if plot is not None:
        from agentstate.evals.plot import plot_scenarios

        plot_scenarios(report, plot)
    _keep("scenarios", report)
    emit(report, as_json=as_json, human=_render_scenarios)
    if plot is not None and not as_json:
        from agentstate.output import info

        info(f"plot written to {plot}")


# Column headings of the scenarios table (short, so 14 columns fit in 130 characters).
HEADINGS = {"constraints": "constr.", "recall": "recall", "stale": "stale↓",
            "forgotten": "forgot.↓", "poisoned": "poison↓", "conflict": "conflict",
            "solvable": "solvable", "leak": "leak↓", "discovery": "skill top-1",
            "composition": "compose", "revoked": "revoked↓"}


def _render_scenarios(console: Console, report: ScenarioReport) -> None:
    from rich.table import Table

    def cell(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    kinds = ", ".join(f"{k} {n}" for k, n in sorted(report.facts_by_kind.items()))
    console.print(f"{len(report.seeds)} scenario(s) (seeds {report.seeds[0]}–"
                  f"{report.seeds[-1]}; history {report.history_tokens:,.0f} tokens each on "
                  f"average), {report.questions} questions ({kinds}), {report.tasks} skill "
                  f"tasks; {report.seconds:g} s")
    if not console.is_terminal:
        console.width = max(console.width, 160)
    table = Table(title="per arm and budget (↓ lower is better; the rest higher is better)")
    columns = ("budget", "arm", *(HEADINGS[m] for m in report.metrics), "tokens", "p50 ms")
    for column in columns:
        table.add_column(column, justify="left" if column == "arm" else "right")
    for budget in report.budgets:
        rows = [r for r in report.results if r.budget == budget]
        for n, row in enumerate(rows):
            table.add_row(f"{budget:,}" if n == 0 else "", row.arm,
                          *(cell(getattr(row, m)) for m in report.metrics),
                          f"{row.tokens_mean:,.0f}", f"{row.p50_ms:.1f}",
                          end_section=n == len(rows) - 1)
    console.print(table)
    s = report.system
    if s is None:
        return
    checks = Table(title="write path and skill registry (the same for every arm)")
    checks.add_column("check")
    checks.add_column("value", justify="right")
    checks.add_row("write precision (active memories that are true)", cell(s.write_precision))
    checks.add_row("guesses/contradictions/injections left active ↓", str(s.bad_writes_active))
    checks.add_row("skill match top-1", cell(s.match_top1))
    checks.add_row("skill match composition (both in the top 3)", cell(s.match_composition))
    checks.add_row("load compliance (right skills load, revoked refused)",
                   cell(s.load_compliance))
    checks.add_row("skills whose tool has gone that still load ↓", str(s.tool_gone_loads))
    checks.add_row(f"contamination: published from {s.documents} document attempts ↓",
                   str(s.contamination))
    console.print(checks)
