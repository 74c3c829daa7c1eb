"""Run log commands: `run start|list|show|end`, `log`, `events`."""

from __future__ import annotations

from typing import Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, RunOption, cli_store, handle_errors, parse_key_values
from agentstate.output import emit

run_app = typer.Typer(help="Start, list, show and end runs.", no_args_is_help=True)
app.add_typer(run_app, name="run")


@run_app.command("start")
@handle_errors
def run_start(
    goal: Annotated[str, typer.Argument(help="What this run is for.")],
    constraint: Annotated[
        list[str] | None,
        typer.Option("--constraint", "-c", help="A rule the work must respect (repeatable)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Start a run, record the work-tree version, and make it the current run."""
    from agentstate.runs.log import start_run
    from agentstate.runs.worktree import snapshot

    with cli_store() as store:
        run, constraints = start_run(store, goal, constraint, worktree=snapshot(store.work_tree))
    data = {"run": run, "constraints": [e.ref for e in constraints]}

    def human(console, _):
        console.print(run.ref)
        where = f"{run.branch or '(no branch)'} @ {(run.head or '(no commit)')[:12]}"
        dirty = f", {len(run.dirty_files)} uncommitted file(s)" if run.dirty_files else ""
        console.print(f"  goal: {run.goal}\n  work tree: {where}{dirty}")

    emit("run start", data, as_json=as_json, human=human)


@app.command("log")
@handle_errors
def log_event(
    kind: Annotated[str, typer.Argument(help="observation, decision, diagnosis, hypothesis, "
                                              "question, answer, verify, verified, failed, "
                                              "constraint or note.")],
    text: Annotated[str, typer.Argument(help="What happened.")],
    run: RunOption = None,
    source: Annotated[
        str, typer.Option(help="user, model, tool:NAME or file:PATH@COMMIT.")
    ] = "user",
    meta: Annotated[
        list[str] | None, typer.Option("--meta", help="KEY=VALUE kept with the event (repeatable).")
    ] = None,
    resolves: Annotated[
        str | None, typer.Option(help="evt:… this answers (question) or settles (verify).")
    ] = None,
    supersedes: Annotated[str | None, typer.Option(help="evt:… this replaces.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Append one typed event to a run (the current run by default)."""
    from agentstate.runs.log import append_event

    with cli_store() as store:
        event = append_event(
            store, run, kind, text, source=source, meta=parse_key_values(meta),
            resolves=resolves, supersedes=supersedes,
        )
    emit("log", event, as_json=as_json, human=lambda c, e: c.print(f"{e.ref} ({e.kind}, {e.run})"))
