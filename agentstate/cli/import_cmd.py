"""`agentstate import jsonl|claude-code|codex`: bulk import of events from files.

`jsonl` reads the generic format; `claude-code` and `codex` read those agents' session
transcripts (agentstate/integrations/). All three go through the one import path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, cli_store, emit

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.integrations.transcripts import TranscriptImport
    from agentstate.runs.importer import ImportResult
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
    from agentstate.integrations.transcripts import AGENT_LABELS, sniff

    agent = sniff(path)
    if agent:
        raise InvalidInput(f"{file} looks like {AGENT_LABELS[agent]}, not the generic JSONL "
                           f"format; import it with `agentstate import {agent} {file}`")
    from agentstate.store.principals import resolve_principal

    with cli_store() as store:
        who = resolve_principal(store)
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
                worktree=snapshot(store.work_tree) if not run else None, claimed_by=who,
            )
        finally:
            if progress is not None:
                progress.stop()
    bad = result.malformed + result.refused
    if result.nothing_accepted:
        _nothing_imported(file, result)
    if bad:
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


def _nothing_imported(file: Path, result: ImportResult) -> None:
    """Every record was rejected: an error (exit 1), with the first reasons and the counts."""
    from agentstate.errors import InvalidInput

    shown = "; ".join(f"line {r.position}: {r.reason}" for r in result.rejected[:3])
    raise InvalidInput(
        f"nothing imported from {file}: {result.malformed} malformed and {result.refused} "
        f"refused line(s) ({shown})",
        details={"malformed": result.malformed, "refused": result.refused,
                 "skipped": result.skipped},
    )


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


COUNTS = ("observations", "tool_events", "checkpoints", "notes", "skipped", "duplicates",
          "malformed", "refused")


def _transcripts(agent: str, path: Path, run: str | None, goal: str | None, strict: bool,
                 as_json: bool, all_projects: bool, make_current: bool,
                 one: Callable[[Store, Path], TranscriptImport]) -> None:
    """Import one transcript or a folder of them; report per file and in total."""
    from agentstate.errors import InvalidInput, UsageError
    from agentstate.integrations.transcripts import (
        LOGGED_BY_HOOK,
        inside,
        session_cwd,
        transcript_files,
    )
    from agentstate.output import warn

    if run and goal:
        raise UsageError("pass either --run or --goal, not both")
    path = path.expanduser()
    if not path.exists():
        raise InvalidInput(f"no such file or folder: {path}")
    files = transcript_files(path)
    if path.is_dir():
        if goal:
            raise UsageError("--goal names one run; a folder holds one run per session "
                             "(import a single file with --goal, or use --run)")
        if not files:
            raise InvalidInput(f"no *.jsonl files under {path}")
        # Subagent transcripts last, so a session's run is named after its main transcript.
        files.sort(key=lambda f: (f.name.startswith("agent-") or "subagents" in f.parts, f))
    reports = []
    foreign: list[dict[str, str | None]] = []
    with cli_store() as store:
        if path.is_dir() and not all_projects:
            # Other projects' sessions stay out of this repository's store: counted, named.
            mine = []
            for file in files:
                cwd = session_cwd(file)
                if inside(cwd, store.work_tree):
                    mine.append(file)
                else:
                    foreign.append({"file": str(file), "cwd": cwd})
            files = mine
        for file in files:
            reports.append(one(store, file))
        if make_current:
            from agentstate.runs.log import set_current_run

            last = next((r.result.run for r in reversed(reports) if r.result.run), None)
            if last:
                set_current_run(store, last)
    total = {key: sum(r.as_dict()[key] for r in reports) for key in ("imported", *COUNTS)}
    for report in reports:
        result = report.result
        if result.malformed or result.refused:
            shown = ", ".join(f"line {r.position}: {r.reason}"
                              for r in result.rejected[:WARN_LINES])
            warn(f"{report.path}: skipped {result.malformed} malformed and {result.refused} "
                 f"refused line(s): {shown}")
    non_empty = [r for r in reports if Path(r.path).stat().st_size > 0]
    hooked = sum(r.result.skipped_reasons.get(LOGGED_BY_HOOK, 0) for r in reports)
    if non_empty and not (total["imported"] or total["duplicates"] or hooked):
        first = next((r for r in non_empty if r.result.rejected), None)
        reason = (f"line {first.result.rejected[0].position}: {first.result.rejected[0].reason}"
                  if first else "no messages, tool calls or summaries in it")
        where = path if len(reports) == 1 else f"{len(non_empty)} file(s) under {path}"
        raise InvalidInput(f"nothing imported from {where} ({reason})",
                           details={"files": [r.as_dict() for r in reports], "total": total})
    total["other_projects"] = len(foreign)
    data = {"files": [r.as_dict() for r in reports], "total": total,
            "other_projects": foreign}

    def human(console: Console, d: dict[str, Any]) -> None:
        for f in d["files"]:
            session = f" session {f['session']}" if f["session"] else ""
            console.print(f"{f['run'] or '(no run: nothing to import)'}{session} ← {f['file']}"
                          + (" (new run)" if f["created_run"] else ""), markup=False)
            console.print("  " + ", ".join(f"{key.replace('_', ' ')} {f[key]}" for key in COUNTS))
        if d["other_projects"]:
            shown = d["other_projects"][:WARN_LINES]
            names = ", ".join(f"{Path(o['file']).name} ({o['cwd'] or 'no cwd'})" for o in shown)
            more = (f" and {len(d['other_projects']) - WARN_LINES} more"
                    if len(d["other_projects"]) > WARN_LINES else "")
            console.print(f"skipped {len(d['other_projects'])} session(s) of other projects: "
                          f"{names}{more} (--all-projects imports them)", markup=False)

    emit(data, as_json=as_json, human=human)
