"""Run log commands: `run start|list|show|end`, `log`, `events`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import (
    AsOption,
    JsonOption,
    RunOption,
    acting_as,
    cli_store,
    emit,
    from_stdin,
    parse_key_values,
)
from agentstate.output import shorten

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.runs.records import Event, Run
    from agentstate.store.db import Store

run_app = typer.Typer(help="Start, list, show and end runs.", no_args_is_help=True)
app.add_typer(run_app, name="run")


@run_app.command("start")
def run_start(
    goal: Annotated[str, typer.Argument(help="What this run is for.")],
    constraint: Annotated[
        list[str] | None,
        typer.Option("--constraint", "-c", help="A rule the work must respect (repeatable)."),
    ] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Start a run, record the work-tree version, and make it the current run.

    Constraints are recorded as the principal's own words: `user` for the owner, `model` for
    a principal that may not claim the user's authority (the default `agent`).
    """
    from agentstate.runs.log import start_run
    from agentstate.runs.worktree import snapshot
    from agentstate.store.principals import default_source, resolve_principal

    with cli_store() as store:
        who = resolve_principal(store, principal)
        run, constraints = start_run(store, goal, constraint, worktree=snapshot(store.work_tree),
                                     source=default_source(who), claimed_by=who)
    data = {"run": run, "constraints": [e.ref for e in constraints]}

    def human(console: Console, _: object) -> None:
        console.print(run.ref)
        where = f"{run.branch or '(no branch)'} @ {(run.head or '(no commit)')[:12]}"
        dirty = f", {len(run.dirty_files)} uncommitted file(s)" if run.dirty_files else ""
        console.print(f"  goal: {run.goal}\n  work tree: {where}{dirty}")

    emit(data, as_json=as_json, human=human)


@app.command("log")
def log_event(
    kind: Annotated[str, typer.Argument(help="observation, decision, diagnosis, hypothesis, "
                                              "question, answer, verify, verified, failed, "
                                              "constraint or note.")],
    text: Annotated[str, typer.Argument(help="What happened; - reads it from stdin.")],
    run: RunOption = None,
    source: Annotated[
        str | None, typer.Option(help="user, model, tool:NAME or file:PATH@COMMIT (default: "
                                      "user, or model for a principal that may not claim user).")
    ] = None,
    meta: Annotated[
        list[str] | None, typer.Option("--meta", help="KEY=VALUE kept with the event (repeatable).")
    ] = None,
    resolves: Annotated[
        str | None, typer.Option(help="evt:… this answers (question) or settles (verify).")
    ] = None,
    supersedes: Annotated[str | None, typer.Option(help="evt:… this replaces.")] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Append one typed event to a run (the current run by default).

    The source must be one the principal may claim: the default `agent` principal cannot log
    as `user` (exit 3).
    """
    from agentstate.runs.log import append_event
    from agentstate.store.principals import default_source, resolve_principal

    text = from_stdin(text, "TEXT")
    with cli_store() as store:
        who = resolve_principal(store, principal)
        event = append_event(
            store, run, kind, text, source=source or default_source(who),
            meta=parse_key_values(meta), resolves=resolves, supersedes=supersedes,
            claimed_by=who,
        )
    emit(event, as_json=as_json, human=lambda c, e: c.print(f"{e.ref} ({e.kind}, {e.run})"))




@run_app.command("list")
def run_list(
    status: Annotated[
        str | None, typer.Option(help="Only runs with this status: active, done, abandoned.")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many runs, newest first.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List runs, newest first, with their status and event counts."""
    from agentstate.runs.log import list_runs
    from agentstate.runs.run_listing import event_counts_by_run, marked_current_run_id

    with cli_store() as store:
        if limit is not None and limit < 1:
            from agentstate.errors import InvalidInput

            raise InvalidInput("--limit must be at least 1")
        runs = list_runs(store, status=status, limit=limit)
        counts = event_counts_by_run(store)
        current_id = marked_current_run_id(store)
    data = [
        {**_run_dict(r), "events": counts.get(r.id, 0), "current": r.id == current_id}
        for r in runs
    ]

    def human(console: Console, rows: list[dict[str, Any]]) -> None:
        if not rows:
            console.print("no runs yet; start one with `agentstate run start GOAL`")
            return
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for col in ("ref", "status", "created", "events", "goal"):
            table.add_column(col)
        for row in rows:
            mark = " *" if row["current"] else ""
            table.add_row(row["ref"] + mark, row["status"], row["created"][:19],
                          str(row["events"]), shorten(row["goal"], 60))
        console.print(table)

    emit(data, as_json=as_json, human=human)


def _read_run(store: Store, ref: str | None) -> Run:
    """The run a read command shows; says so on stderr when it is not the current one."""
    from agentstate.output import info
    from agentstate.runs.log import run_to_read

    run, fell_back = run_to_read(store, ref)
    if fell_back:
        info(f"no active run; showing the most recent, {run.ref} ({run.status}, "
             f"ended {run.ended or run.updated})")
    return run


def _run_dict(run: Run) -> dict[str, Any]:
    from agentstate.output import to_jsonable

    return to_jsonable(run)


@run_app.command("show")
def run_show(
    ref: Annotated[str | None, typer.Argument(help="run:… (default: the current run).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a run: its goal, work-tree version, event counts by kind, open questions,
    pending verifications and last checkpoint."""
    from agentstate.runs.checkpoint import last_checkpoint, recorded_version, working_state
    from agentstate.runs.run_listing import event_counts_by_kind

    with cli_store() as store:
        run = _read_run(store, ref)
        counts = event_counts_by_kind(store, run)
        state = working_state(store, run)
        checkpoint = last_checkpoint(store, run)
        recorded, since = recorded_version(store, run)
    data = {
        "run": run,
        "counts": counts,
        "events": state.event_count,
        "open_questions": state.open_questions,
        "pending_verifications": state.pending_verifications,
        "failed_verifications": state.failed_verifications,
        "last_checkpoint": checkpoint,
        "recorded_version": {"since": since, **recorded.as_dict()},
    }

    def human(console: Console, _: object) -> None:
        console.print(f"{run.ref} ({run.status})", markup=False)
        console.print(f"  goal: {run.goal}", markup=False)
        console.print(f"  created {run.created}, updated {run.updated}"
                      + (f", ended {run.ended}" if run.ended else ""))
        where = f"{run.branch or '(no branch)'} @ {(run.head or '(no commit)')[:12]}"
        console.print(f"  started at: {where}"
                      + (f", {len(run.dirty_files)} uncommitted file(s)" if run.dirty_files
                         else ""))
        summary = ", ".join(f"{k} {n}" for k, n in counts.items()) or "none"
        console.print(f"  events: {state.event_count} ({summary})", markup=False)
        for title, items in (("open questions", state.open_questions),
                             ("pending verifications", state.pending_verifications),
                             ("failed verifications", state.failed_verifications)):
            if title.startswith("failed") and not items:
                continue
            console.print(f"  {title}: {len(items)}")
            for item in items:
                console.print(f"    {item.ref} {shorten(item.text, 80)}", markup=False)
        if checkpoint:
            console.print(f"  last checkpoint: {checkpoint.ref} at {checkpoint.created}"
                          + (f": {checkpoint.note}" if checkpoint.note else ""), markup=False)
        head = (recorded.head or "(no commit)")[:12]
        console.print(f"  last recorded version ({since}): "
                      f"{recorded.branch or '(no branch)'} @ {head}", markup=False)

    emit(data, as_json=as_json, human=human)


@run_app.command("end")
def run_end(
    ref: Annotated[str | None, typer.Argument(help="run:… (default: the current run).")] = None,
    status: Annotated[
        str, typer.Option(help="How it ended: done or abandoned.")
    ] = "done",
    as_json: JsonOption = False,
) -> None:
    """End a run (done or abandoned). Ending an already-finished run is an error."""
    from agentstate.runs.log import end_run, resolve_run

    with cli_store() as store:
        run = end_run(store, resolve_run(store, ref).ref, status)
    emit(run, as_json=as_json,
         human=lambda c, r: c.print(f"{r.ref} {r.status} at {r.ended}"))


@app.command("events")
def events(
    run: RunOption = None,
    all_runs: Annotated[
        bool, typer.Option("--all", help="Events of every run instead of one.")
    ] = False,
    kind: Annotated[str | None, typer.Option(help="Only events of this kind.")] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the newest N (shown oldest first).")
    ] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """List a run's events (the current run by default), oldest first.

    With --json each event has its ref, run, seq, kind, text, source, ts, meta, resolves
    and supersedes. Only runs the principal may read (`run:…` scopes) are listed.
    """
    from agentstate.errors import UsageError
    from agentstate.runs.log import list_events

    if all_runs and run:
        raise UsageError("pass either --run or --all, not both")
    from agentstate.runs.log import readable_events

    with cli_store() as store:
        run_ref = None if all_runs else _read_run(store, run).ref
        found = readable_events(store, list_events(store, run_ref, kind=kind, limit=limit),
                                acting_as(store, principal), run_ref)

    def human(console: Console, rows: list[Event]) -> None:
        if not rows:
            console.print("no events")
            return
        for e in rows:
            links = "".join(
                f" [{how} {target}]" for how, target in
                (("resolves", e.resolves), ("supersedes", e.supersedes)) if target
            )
            who = "" if e.source == "user" else f" ({e.source})"
            text = (shorten(e.text, 100) if not e.collected_at
                    else f"(body collected by gc at {e.collected_at[:19]})")
            console.print(f"{e.ref} {e.ts[:19]} {e.kind}{who}: {text}{links}", markup=False)

    emit(found, as_json=as_json, human=human)


@app.command("checkpoint")
def checkpoint(
    note: Annotated[
        str | None, typer.Option(help="Where things stand, in a sentence, for whoever resumes "
                                      "(- reads it from stdin).")
    ] = None,
    run: RunOption = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Store the run's derived working state with pointers, plus the work-tree snapshot.

    The snapshot becomes the run's last recorded version: `resume` reports drift since it.
    """
    from agentstate.runs.checkpoint import create_checkpoint
    from agentstate.runs.worktree import snapshot
    from agentstate.store.principals import default_source, resolve_principal

    note = from_stdin(note, "--note")
    with cli_store() as store:
        who = resolve_principal(store, principal)
        cp = create_checkpoint(store, run, note, worktree=snapshot(store.work_tree),
                               source=default_source(who), claimed_by=who)

    def human(console: Console, _: object) -> None:
        s = cp.state
        console.print(cp.ref)
        console.print(
            f"  {cp.run} up to event {cp.event_seq}: {len(s['constraints'])} constraint(s), "
            f"{len(s['diagnoses'])} diagnosis(es), {len(s['open_questions'])} open "
            f"question(s), {len(s['pending_verifications'])} pending verification(s)")
        head = (cp.worktree.head or "(no commit)")[:12]
        dirty = len(cp.worktree.dirty_files)
        console.print(f"  work tree: {cp.worktree.branch or '(no branch)'} @ {head}"
                      + (f", {dirty} uncommitted file(s)" if dirty else ""))

    emit(cp, as_json=as_json, human=human)


@app.command("resume")
def resume(
    ref: Annotated[
        str | None, typer.Argument(help="run:… (default: the most recent unfinished run).")
    ] = None,
    budget: Annotated[
        int | None,
        typer.Option(help="Keep the pack within N tokens; the task's essentials first. Exit 3 "
                          "if they alone do not fit (the message names the minimum, the same "
                          "as `context --budget`)."),
    ] = None,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print what a new session needs to pick up a run: the task's essentials (goal,
    constraints, preferences, open questions, pending verifications, the latest failing tool
    result, work-tree drift — the same ones `context` keeps), then confirmed diagnoses, last
    checkpoint, relevant event refs and matching skills. Markdown by default; --json for the
    structure.
    """
    from agentstate.context.resume import build_pack
    from agentstate.store.principals import resolve_principal

    with cli_store() as store:
        pack = build_pack(store, ref, budget=budget,
                          principal=resolve_principal(store, principal))

    def human(console: Console, _: object) -> None:
        import sys

        sys.stdout.write(pack.text)
        sys.stdout.flush()

    emit(pack, as_json=as_json, human=human)
