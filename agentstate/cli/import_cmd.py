"""`agentstate import jsonl|claude-code|codex`: bulk import of events from files.

`jsonl` reads the generic format; `claude-code` and `codex` read those agents' session
transcripts (agentstate/integrations/). All three go through the one import path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, cli_store, emit

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.integrations.transcripts import TranscriptImport
    from agentstate.store.db import Store

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
    from agentstate.runs.jsonl_import import import_jsonl_file, jsonl_file
    from agentstate.store.principals import resolve_principal

    if run and goal:
        raise UsageError("pass either --run or --goal, not both")
    path = jsonl_file(file)
    from agentstate.integrations.transcript_lines import AGENT_LABELS, sniff

    agent = sniff(path)
    if agent:
        raise InvalidInput(f"{file} looks like {AGENT_LABELS[agent]}, not the generic JSONL "
                           f"format; import it with `agentstate import {agent} {file}`")
    with cli_store() as store, _progress(path) as on_bytes:
        result = import_jsonl_file(store, file, run_ref=run, goal=goal, strict=strict,
                                   claimed_by=resolve_principal(store), on_bytes=on_bytes)
    bad = result.malformed + result.refused
    if bad:
        from agentstate.output import warn

        shown = ", ".join(f"line {r.position}: {r.reason}" for r in result.rejected[:WARN_LINES])
        more = f" (and {bad - WARN_LINES} more)" if bad > WARN_LINES else ""
        warn(f"skipped {result.malformed} malformed and {result.refused} refused line(s): "
             f"{shown}{more}")
    data = {
        "run": result.run, "created_run": result.created_run, "imported": result.imported,
        "duplicates": result.duplicates, "malformed": result.malformed,
        "refused": result.refused, "downgraded": result.downgraded,
        "rejected": [{"line": r.position, "reason": r.reason, "refused": r.refused}
                     for r in result.rejected],
    }

    def human(console: Console, d: dict[str, Any]) -> None:
        console.print(d["run"] or "(no run: nothing to import)", markup=False)
        console.print(f"  imported {d['imported']}, duplicates {d['duplicates']}, "
                      f"malformed {d['malformed']}, refused {d['refused']}"
                      + (" (new run)" if d["created_run"] else ""))
        if d["downgraded"]:
            console.print(f"  {d['downgraded']} line(s) claimed a source this principal may "
                          "not claim: recorded as model (meta claimed_source)", markup=False)

    emit(data, as_json=as_json, human=human)


@contextmanager
def _progress(path: Path) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr for a large file, only on a terminal (piped or redirected,
    stderr stays clean): yields the callback that advances it by bytes read, or None."""
    from agentstate.output import stderr_console

    console = stderr_console()
    if path.stat().st_size < PROGRESS_BYTES or not console.is_terminal:
        yield None
        return
    from rich.progress import Progress

    progress = Progress(console=console, transient=True)
    task = progress.add_task(f"importing {path.name}", total=path.stat().st_size)
    progress.start()
    try:
        yield lambda n: progress.advance(task, n)
    finally:
        progress.stop()


TranscriptArg = Annotated[Path, typer.Argument(help="A transcript file, or a folder of them "
                                                    "(every *.jsonl below it).",
                                               metavar="FILE|DIR")]
TranscriptRun = Annotated[str | None, typer.Option(
    "--run", help="Import into this active run (run:…) instead of the session's own run.")]
TranscriptGoal = Annotated[str | None, typer.Option(
    help="Goal of a new run for this file (default: the session's first real user request).")]
StrictOption = Annotated[bool, typer.Option(
    "--strict", help="Any malformed or refused line is an error and nothing is imported.")]
AllProjectsOption = Annotated[bool, typer.Option(
    "--all-projects", help="With a folder: also import sessions whose cwd is outside this "
                           "repository (each into its own run).")]
MakeCurrentOption = Annotated[bool, typer.Option(
    "--make-current", help="Make the imported session's run the current run (an import "
                           "never changes it otherwise).")]


@import_app.command("claude-code")
def import_claude_code_cmd(
    path: TranscriptArg,
    run: TranscriptRun = None,
    goal: TranscriptGoal = None,
    strict: StrictOption = False,
    include_thinking: Annotated[bool, typer.Option(
        "--include-thinking", help="Also store thinking blocks (as `note` events).")] = False,
    all_projects: AllProjectsOption = False,
    make_current: MakeCurrentOption = False,
    as_json: JsonOption = False,
) -> None:
    """Import Claude Code session transcripts (~/.claude/projects/PROJECT/*.jsonl).

    One run per session (found again by session id, so importing again, or after the
    session grew, adds only what is new; a session the hooks recorded goes on in the hooks'
    run, and what they recorded is not stored twice). User and assistant text become
    observations; each tool call with its result one `tool` event with an excerpt of the
    output; compaction summaries checkpoints. A folder takes only sessions whose cwd is
    inside this repository (others are counted and named; --all-projects takes them). The
    current run is not changed unless --make-current. Exit 1 when nothing could be imported
    from a non-empty file.
    """
    from agentstate.integrations.claude_code import import_claude_code

    _transcripts("claude-code", path, run, goal, strict, as_json, all_projects, make_current,
                 lambda store, f: import_claude_code(store, f, run_ref=run, goal=goal,
                                                     strict=strict,
                                                     include_thinking=include_thinking))


@import_app.command("codex")
def import_codex_cmd(
    path: TranscriptArg,
    run: TranscriptRun = None,
    goal: TranscriptGoal = None,
    strict: StrictOption = False,
    include_reasoning: Annotated[bool, typer.Option(
        "--include-reasoning", help="Also store reasoning summaries (as `note` events).")
    ] = False,
    all_projects: AllProjectsOption = False,
    make_current: MakeCurrentOption = False,
    as_json: JsonOption = False,
) -> None:
    """Import Codex CLI rollout files (~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl).

    Same mapping as `import claude-code`: one run per session (from session_meta), messages
    as observations, each call with its output one `tool` event with an excerpt, `compacted`
    records as checkpoints; what the hooks recorded is skipped, a folder takes only this
    repository's sessions unless --all-projects, the current run moves only with
    --make-current. Exit 1 when nothing could be imported from a non-empty file.
    """
    from agentstate.integrations.codex import import_codex

    _transcripts("codex", path, run, goal, strict, as_json, all_projects, make_current,
                 lambda store, f: import_codex(store, f, run_ref=run, goal=goal, strict=strict,
                                               include_reasoning=include_reasoning))


def _transcripts(agent: str, path: Path, run: str | None, goal: str | None, strict: bool,
                 as_json: bool, all_projects: bool, make_current: bool,
                 one: Callable[[Store, Path], TranscriptImport]) -> None:
    """Import one transcript or a folder of them; report per file and in total."""
    from agentstate.errors import UsageError
    from agentstate.integrations.transcripts import files_to_import, import_transcripts
    from agentstate.output import warn

    if run and goal:
        raise UsageError("pass either --run or --goal, not both")
    path = path.expanduser()
    files = files_to_import(path, goal=goal)
    with cli_store() as store:
        batch = import_transcripts(store, path, files, one, all_projects=all_projects,
                                   make_current=make_current)
    for report in batch.reports:
        result = report.result
        if result.malformed or result.refused:
            shown = ", ".join(f"line {r.position}: {r.reason}"
                              for r in result.rejected[:WARN_LINES])
            warn(f"{report.path}: skipped {result.malformed} malformed and {result.refused} "
                 f"refused line(s): {shown}")
    batch.check_something_imported()
    total = {**batch.total, "other_projects": len(batch.foreign)}
    data = {"files": [r.as_dict() for r in batch.reports], "total": total,
            "other_projects": batch.foreign}

    def human(console: Console, d: dict[str, Any]) -> None:
        from agentstate.integrations.transcripts import COUNTS

        for f in d["files"]:
            session = f" session {f['session']}" if f["session"] else ""
            console.print(f"{f['run'] or '(no run: nothing to import)'}{session} ← {f['file']}"
                          + (" (new run)" if f["created_run"] else ""), markup=False)
            console.print("  " + ", ".join(f"{key.replace('_', ' ')} {f[key]}"
                                           for key in COUNTS))
            if f["already_read"]:
                console.print(f"  {f['already_read']} line(s) read by an earlier import of "
                              "this file into this run were not read again", markup=False)
        if d["other_projects"]:
            shown = d["other_projects"][:WARN_LINES]
            names = ", ".join(f"{Path(o['file']).name} ({o['cwd'] or 'no cwd'})" for o in shown)
            more = (f" and {len(d['other_projects']) - WARN_LINES} more"
                    if len(d["other_projects"]) > WARN_LINES else "")
            console.print(f"skipped {len(d['other_projects'])} session(s) of other projects: "
                          f"{names}{more} (--all-projects imports them)", markup=False)

    emit(data, as_json=as_json, human=human)
