"""`agentstate import jsonl FILE`: bulk import of events in the generic JSONL format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, cli_store, emit

import_app = typer.Typer(help="Import events from files.", no_args_is_help=True)
app.add_typer(import_app, name="import")

# Files bigger than this get a progress bar on stderr.
PROGRESS_BYTES = 256 * 1024
WARN_LINES = 5


@import_app.command("jsonl")
def import_jsonl(
    file: Annotated[Path, typer.Argument(help="One JSON object per line: kind, text, and "
                                              "optional ts, source, meta, id, resolves, "
                                              "supersedes.")],
    run: Annotated[
        str | None, typer.Option("--run", help="Import into this active run (run:…).")
    ] = None,
    goal: Annotated[
        str | None, typer.Option(help="Create a new run with this goal for the import "
                                      "(the same file with the same goal again reuses it).")
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Any malformed or refused line is an error and "
                                            "nothing is imported.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Import events from a JSONL file. Idempotent: importing the same file again adds nothing.

    Target run: --run REF; or --goal TEXT for a new run (the same file with the same goal
    again reuses it); otherwise the run an earlier import of this same file created, or else
    a new run named "imported from FILE" (which becomes the current run). Malformed lines are
    skipped, counted and reported on stderr (exit 0); with --strict they are an error (exit 1;
    exit 3 for a secret) and nothing is imported.
    """
    from agentstate.errors import InvalidInput, UsageError
    from agentstate.output import stderr_console, warn
    from agentstate.runs.importer import import_events, read_jsonl
    from agentstate.runs.worktree import snapshot

    if run and goal:
        raise UsageError("pass either --run or --goal, not both")
    path = file.expanduser()
    if not path.exists():
        raise InvalidInput(f"no such file: {file}")
    if not path.is_file():
        raise InvalidInput(f"not a regular file: {file}")
    size = path.stat().st_size
    with cli_store() as store:
        progress = None
        on_bytes = None
        console = stderr_console()
        # A progress bar only on a terminal: piped or redirected, stderr stays clean.
        if size >= PROGRESS_BYTES and console.is_terminal:
            from rich.progress import Progress

            progress = Progress(console=console, transient=True)
            task = progress.add_task(f"importing {path.name}", total=size)

            def on_bytes(n: int) -> None:
                progress.advance(task, n)

            progress.start()
        try:
            result = import_events(
                store, read_jsonl(path, on_bytes), run_ref=run, goal=goal,
                origin=str(path.resolve()), strict=strict, label="line",
                worktree=snapshot(store.work_tree) if not run else None,
            )
        finally:
            if progress is not None:
                progress.stop()
    bad = result.malformed + result.refused
    if bad:
        shown = ", ".join(f"line {r.position}: {r.reason}" for r in result.rejected[:WARN_LINES])
        more = f" (and {bad - WARN_LINES} more)" if bad > WARN_LINES else ""
        warn(f"skipped {result.malformed} malformed and {result.refused} refused line(s): "
             f"{shown}{more}")
    data = {
        "run": result.run, "created_run": result.created_run, "imported": result.imported,
        "duplicates": result.duplicates, "malformed": result.malformed,
        "refused": result.refused,
        "rejected": [{"line": r.position, "reason": r.reason, "refused": r.refused}
                     for r in result.rejected],
    }

    def human(console, d):
        console.print(d["run"] or "(no run: nothing to import)", markup=False)
        console.print(f"  imported {d['imported']}, duplicates {d['duplicates']}, "
                      f"malformed {d['malformed']}, refused {d['refused']}"
                      + (" (new run)" if d["created_run"] else ""))

    emit(data, as_json=as_json, human=human)
