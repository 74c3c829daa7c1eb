"""Context commands: `context` (assemble a budgeted pack) and `trace` (follow refs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import AsOption, JsonOption, acting_as, cli_store, emit

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.context.assemble import ContextPack
    from agentstate.context.trace import TraceNode


@app.command("context")
def context(
    run: Annotated[
        str | None, typer.Option("--run", help="Run ref (run:…); default: the current run.")
    ] = None,
    budget: Annotated[
        str | None,
        typer.Option("--budget", "-b", metavar="N",
                     help="Token budget (default: [context] default_budget). The rendered "
                          "text never exceeds it, counted by the configured tokenizer."),
    ] = None,
    query: Annotated[
        str | None,
        typer.Option("--query", "-q",
                     help="What to retrieve evidence for (default: the goal plus the open "
                          "questions). Alone, with no run, builds a pack without task state."),
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("--system", metavar="FILE",
                     help="System instructions file pinned at the top (overrides "
                          "[context] system_file)."),
    ] = None,
    principal: Annotated[
        str | None,
        typer.Option("--as", metavar="PRINCIPAL",
                     help="Read memory as this principal (default: AGENTSTATE_PRINCIPAL or "
                          "[principals] default)."),
    ] = None,
    no_run: Annotated[
        bool, typer.Option("--no-run", help="Ignore the current run (needs --query).")
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="After the text, print the allocation table "
                                             "(class, tokens, items in and out).")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Assemble what the model should see next, within a token budget.

    Pinned instructions, constraints and user preferences come first and are never dropped or
    altered; the task state is restated at the end; evidence (gated memories and past events
    of every run), the skill catalog and the run's trajectory fill the middle by priority.
    What does not fit is compressed, turned into a pointer, or dropped — each with a reason in
    the manifest (--json). The manifest and a hash of the text are stored as pack:ID.

    A budget below what the pinned content and the task's essentials need (goal,
    constraints, preferences, open questions, pending verifications, the latest failing tool
    result, the drift summary) is refused (exit 3) naming the minimum — for a run, the same
    one `resume --budget` names.
    """
    from agentstate.context.assemble import build_context
    from agentstate.integrations.context_runner import record_pack, show_pack

    with cli_store() as store:
        pack = build_context(store, run=run, budget=budget, query=query, system_file=system,
                             principal=acting_as(store, principal), no_run=no_run, save=False)
        record_pack(store, pack)
    show_pack(pack, as_json)
    if explain and not as_json:
        from agentstate.output import stdout_console

        _print_allocation(stdout_console(), pack)


def _print_allocation(console: Console, pack: ContextPack) -> None:
    from rich.table import Table

    table = Table(title=f"{pack.ref} allocation: {pack.tokens} of {pack.budget} tokens "
                        f"(minimum {pack.minimum})")
    for column in ("class", "tokens", "in", "compressed", "pointer", "out"):
        table.add_column(column, justify="left" if column == "class" else "right")
    for row in pack.allocation:
        table.add_row(row.cls, str(row.tokens), str(row.items_in), str(row.items_compressed),
                      str(row.items_pointer), str(row.items_out))
    console.print()
    console.print(table)
    out = [e for e in pack.manifest if e.decision != "included"]
    if out:
        detail = Table(title="not included whole")
        for column in ("ref", "class", "decision", "reason", "score", "tokens", "note"):
            detail.add_column(column)
        for entry in out:
            detail.add_row(entry.ref, entry.cls, entry.decision, entry.reason,
                           f"{entry.score:g}", str(entry.tokens), entry.note)
        console.print(detail)
    if pack.withheld:
        withheld = ", ".join(f"{n} {why}" for why, n in sorted(pack.withheld.items()))
        console.print(f"memory read gate withheld: {withheld}")


@app.command("trace")
def trace_cmd(
    ref: Annotated[str, typer.Argument(help="pack:…, mem:…[@vN], evt:…, skill:NAME[@vN], "
                                            "run:… or run:…#N (a pack's `#N` label)")],
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow cross-layer references both ways.

    pack → fragments → memory versions → evidence; memory → versions, evidence, packs that
    considered it; event → packs and memories drawn from it; skill version → runs that loaded
    it; run → its packs and skill loads. Tells "never assembled" from "assembled but unused"
    from "stale source".
    """
    from agentstate.context.trace import trace

    with cli_store() as store:
        root = trace(store, ref, principal=acting_as(store, principal))

    def human(console: Console, node: TraceNode) -> None:
        # Plain lines (not rich.Tree): long summaries must wrap, never be cut off.
        lines = [f"{node.ref}  {node.summary}"]

        def walk(children: list[TraceNode], prefix: str) -> None:
            for n, child in enumerate(children):
                last = n == len(children) - 1
                lines.append(f"{prefix}{'└── ' if last else '├── '}{child.relation}: "
                             f"{child.ref}  {child.summary}")
                walk(child.children, prefix + ("    " if last else "│   "))

        walk(node.children, "")
        console.print("\n".join(lines), markup=False, highlight=False)

    emit(root, as_json=as_json, human=human)
