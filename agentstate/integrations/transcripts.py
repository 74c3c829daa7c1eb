"""What the agent-transcript importers share: reading lines, telling formats apart, building
records for the one import path (`agentstate.runs.importer.import_events`), and running it.

A transcript importer reads ONE file into ONE run: the run given, else the run an earlier
import of the same session created (the origin is `AGENT:SESSION-ID`, so the same session read
from another path lands in the same run), else a new run named after the session's first real
user request. Every record keeps an identity from the transcript (a message uuid and block
number, a tool call id, or a line number), so importing a file again, or after it grew, adds
only what is new.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.integrations.paths import inside
from agentstate.integrations.transcript_lines import (
    ReadCursor,
    check_format,
    session_cwd,
    transcript_files,
)
from agentstate.runs.importer import ImportLine, ImportResult, import_events
from agentstate.store.clock import format_ts, parse_ts
from agentstate.store.db import Store
from agentstate.store.sources import relayed_prompt_source, tool_source
from agentstate.tools.excerpt import excerpt, redact

GOAL_CHARS = 300
MAX_TEXT_CHARS = 20_000  # a pasted log in a message: kept, but bounded
INPUT_CHARS = 200
# `<command-name>…</command-name>`, `<local-command-stdout>…`, `<environment_context>…`:
# text the harness wrapped around something, not a request someone typed.
_WRAPPER = re.compile(r"^\s*<([A-Za-z][\w\-]*)(?:\s[^>]*)?>.*</\1>\s*$", re.DOTALL)
_HARNESS_PREFIXES = ("Caveat: The messages below were generated", "[Request interrupted",
                     "# AGENTS.md instructions", "<environment_context>", "<user_instructions>",
                     "<system-reminder>", "<command-", "<local-command-")


@dataclass
class Session:
    """What a transcript says about its session."""

    agent: str
    session: str | None = None
    cwd: str | None = None
    branch: str | None = None
    goal: str | None = None  # the first real user request
    first_ts: str | None = None  # for records without a time of their own


@dataclass
class TranscriptImport:
    """The outcome of importing one transcript file."""

    path: str
    agent: str
    session: str | None
    cwd: str | None
    branch: str | None
    result: ImportResult
    counts: dict[str, int] = field(default_factory=dict)
    # Lines an earlier import (or a hook's catch-up) of this file into the same run had read
    # already, and this one did not read again (see resume_point).
    already_read: int = 0

    def as_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "file": self.path, "agent": self.agent, "session": self.session, "cwd": self.cwd,
            "branch": self.branch, "run": r.run, "created_run": r.created_run,
            **self.counts,
            "imported": r.imported, "duplicates": r.duplicates, "already_read": self.already_read,
            "malformed": r.malformed,
            "refused": r.refused, "skipped": r.skipped, "skipped_reasons": r.skipped_reasons,
            "rejected": [{"line": x.position, "reason": x.reason, "refused": x.refused}
                         for x in r.rejected],
        }


def counts_by_kind(result: ImportResult) -> dict[str, int]:
    """The per-kind counts every transcript import reports."""
    kinds = dict(result.kinds)
    return {"observations": kinds.pop("observation", 0), "tool_events": kinds.pop("tool", 0),
            "checkpoints": kinds.pop("checkpoint", 0), "notes": sum(kinds.values())}


# ---------------------------------------------------------------- sessions


HEAD_KEY = "head"  # in a cursor's state: the session its transcript's first lines describe


def kept_session(cursor: ReadCursor | None, agent: str) -> tuple[Session, dict[str, Any]] | None:
    """The session (and the reader's own facts, e.g. Codex's `has_items`) that an earlier
    read of this transcript's head found complete, kept in the cursor: a long session's
    every Stop then reads only its new lines, not its first ones again. None before the
    first read, or while the head still lacked something."""
    if cursor is None or not cursor.offset:
        return None
    kept = cursor.state.get(HEAD_KEY)
    if not isinstance(kept, dict) or not all(isinstance(kept.get(k), str)
                                             for k in ("session", "cwd", "goal")):
        return None
    optional = {k: kept[k] if isinstance(kept.get(k), str) else None
                for k in ("branch", "first_ts")}
    session = Session(agent, kept["session"], kept["cwd"], optional["branch"], kept["goal"],
                      optional["first_ts"])
    extra = kept.get("extra")
    return session, extra if isinstance(extra, dict) else {}


def keep_session(cursor: ReadCursor | None, session: Session,
                 extra: dict[str, Any] | None = None) -> None:
    """Keep a complete head in the cursor (see `kept_session`); an incomplete one (no goal
    yet: the session has just started) is read again next time."""
    if cursor is None or not (session.session and session.cwd and session.goal):
        return
    cursor.state[HEAD_KEY] = {"session": session.session, "cwd": session.cwd,
                              "branch": session.branch, "goal": session.goal,
                              "first_ts": session.first_ts, "extra": extra or {}}


def unanswered(pending: dict[str, Any]) -> Iterator[ImportLine]:
    """Calls still waiting for their result at the end of the file: the next import, after
    the result is written, makes them tool events."""
    for line, *_ in pending.values():
        yield ImportLine(line, skip="tool call without a result yet")


# ---------------------------------------------------------------- record building


def is_harness_text(text: str) -> bool:
    """Text the agent's harness wrote in the user's place (command wrappers, caveats,
    environment blocks), which is never the session's goal."""
    stripped = text.strip()
    return bool(_WRAPPER.match(stripped)) or stripped.startswith(_HARNESS_PREFIXES)


def goal_from(text: str) -> str | None:
    """A run goal from a user request: bounded, cut at a word, None if it holds a secret."""
    from agentstate.safety import find_secrets

    flat = " ".join(text.split())
    if not flat or find_secrets(flat):
        return None
    if len(flat) > GOAL_CHARS:
        cut = flat[:GOAL_CHARS].rsplit(" ", 1)[0]
        flat = cut + " …"
    return flat


def bounded(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} characters cut on import …]"


def timestamp(value: Any) -> str | None:
    """The transcript's timestamp in stored form; None (import time) if it is unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return format_ts(parse_ts(value))
    except InvalidInput:
        return None


def record(kind: str, text: str, source: str, ts: str | None, identity: str,
           meta: dict[str, Any] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": kind, "text": bounded(text), "source": source,
                            "id": identity, "meta": meta or {}}
    if ts:
        data["ts"] = ts
    return data


def input_summary(name: str, value: Any) -> str:
    """One line saying what a tool was asked to do: the command, the file, the pattern."""
    if value is None:
        return ""
    if isinstance(value, dict):
        for key in ("command", "cmd", "file_path", "path", "pattern", "url", "query",
                    "description", "prompt"):
            found = value.get(key)
            if isinstance(found, list) and all(isinstance(x, str) for x in found):
                found = _shell_words(found)
            if isinstance(found, str) and found.strip():
                text = found
                break
        else:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    elif isinstance(value, str) and value.lstrip().startswith("*** Begin Patch"):
        # A patch says most in the files it touches: "update api/retry.py, add x.py".
        found = re.findall(r"^\*\*\* (Add|Update|Delete) File: (.+)$", value, re.MULTILINE)
        text = ", ".join(f"{verb.lower()} {name.strip()}" for verb, name in found) or "patch"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    line = " ".join(text.split())
    if len(line) > INPUT_CHARS:
        line = line[: INPUT_CHARS - 1] + "…"
    return redact(line)


def _shell_words(argv: list[str]) -> str:
    # ["bash", "-lc", "pytest -q"] is the script `pytest -q`, not a quoted list.
    if len(argv) == 3 and argv[1] in ("-c", "-lc") and argv[0].rsplit("/", 1)[-1] in (
            "bash", "sh", "zsh"):
        return argv[2]
    import shlex

    return shlex.join(argv)


def tool_record(agent: str, name: str, tool_input: Any, output: str, *, error: bool | None,
                exit_code: int | None, ts: str | None, identity: str,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """ONE tool event for a call and its result: what ran, how it ended, an excerpt.

    `error` is the transcript's own word (True: the client marked the result an error;
    False: the client marks every failure and did not; None: the client never says), and
    `exit_code` a code from a metadata field. Without a code, tool_outcome looks for one in
    the client's text, then for a runner's summary; otherwise the outcome is unknown."""
    from agentstate.integrations.tool_outcome import judge

    outcome = judge(output, exit_code=exit_code, client_failed=error)
    summary = input_summary(name, tool_input)
    status = outcome.status if outcome.exit_code is not None or not outcome.failed else "error"
    text = f"{name}: {summary} → {status}" if summary else f"{name} → {status}"
    meta: dict[str, Any] = {
        "agent": agent, "tool": name, "exit_code": outcome.exit_code,
        "error": outcome.failed is True, "failed": outcome.failed, "outcome": outcome.how,
        "excerpt": excerpt(outcome.output), "output_chars": len(output), **(extra or {}),
    }
    return record("tool", text, tool_source(name), ts, identity, meta)


# ---------------------------------------------------------------- running


AlreadyLogged = Callable[[dict[str, Any]], bool]
LOGGED_BY_HOOK = "already logged by a hook"


def run_import(store: Store, path: Path, session: Session, records: Iterator[ImportLine], *,
               run_ref: str | None, goal: str | None, strict: bool,
               already_logged: AlreadyLogged | None = None,
               make_current: bool = False,
               resumed: tuple[ReadCursor, int] | None = None) -> TranscriptImport:
    """Import one transcript's records through the generic path and remember its session.
    With `resumed` (the cursor the records are read with, and its line at the start), where
    this import stopped is kept for the next one (see resume_point).

    What the hooks recorded of this session as it happened — a prompt, a tool call — is
    counted as skipped rather than stored twice (`already_logged`, by default the indexed
    look-up of hook_keys.logged_by_hooks). Without `run_ref` or `goal`, a session the hooks
    bound to an active run goes on in that run. A new run becomes the current run only with
    `make_current`."""
    from agentstate.integrations.hook_keys import logged_by_hooks
    from agentstate.runs.importer import RunSource, remember_run_source
    from agentstate.runs.worktree import snapshot

    # A hook's catch-up passes its own check; it always acts for the agent (see below).
    hook_catch_up = already_logged is not None
    if already_logged is None:
        already_logged = logged_by_hooks(store, session.session)
    records = _skipping(records, already_logged)
    if run_ref is None and goal is None and session.session:
        from agentstate.runs.sessions import session_run

        hooked = session_run(store, session.agent, session.session)
        if hooked is not None:
            run_ref = hooked.ref

    origin = _origin(session, path)
    default_goal = session.goal or (
        f"{session.agent} session {session.session}" if session.session
        else f"imported from {path}")
    result = import_events(
        store, records, run_ref=run_ref, goal=goal, default_goal=default_goal, origin=origin,
        strict=strict, label="line", worktree=None if run_ref else snapshot(store.work_tree),
        extra_kinds=frozenset({"checkpoint"}), bind_origin=True, make_current=make_current,
        relay_user_as=(relayed_prompt_source(session.agent)
                       if hook_catch_up or _run_for_an_agent(store) else None),
    )
    if result.run:
        remember_run_source(store, result.run, RunSource(
            agent=session.agent, session=session.session,
            cwd=redact(session.cwd) if session.cwd else None,
            branch=redact(session.branch) if session.branch else None,
            file=redact(str(path.resolve())),
        ))
    imported = TranscriptImport(path=str(path), agent=session.agent, session=session.session,
                                cwd=session.cwd, branch=session.branch, result=result,
                                counts=counts_by_kind(result))
    return imported if resumed is None else _remember_resume_point(store, imported, path,
                                                                   *resumed)


def _run_for_an_agent(store: Store) -> bool:
    """True when the principal running this import may not claim `user`: the transcript is
    then a file the agent could have written, so its user turns are relayed, unverified. A
    hook's catch-up (`already_logged` given) is always the agent's (hooks act as `agent`)."""
    from agentstate.errors import Refused
    from agentstate.store.principals import environment_principal

    try:
        return not environment_principal(store).principal.can_claim("user")
    except Refused:  # AGENTSTATE_PRINCIPAL raised under an agent: the agent's, then
        return True


def _skipping(records: Iterator[ImportLine], already_logged: AlreadyLogged
              ) -> Iterator[ImportLine]:
    for line in records:
        if line.skip is None and isinstance(line.data, dict) and already_logged(line.data):
            yield ImportLine(line.position, line.data, skip=LOGGED_BY_HOOK)
        else:
            yield line


def _origin(session: Session, path: Path) -> str:
    """What an import of this transcript is known by: its session (the same session read from
    another path lands in the same run), else the file."""
    return (f"{session.agent}:{session.session}" if session.session
            else f"{session.agent}:{path.resolve()}")


def resume_point(store: Store, path: Path, session: Session, run_ref: str | None
                 ) -> ReadCursor:
    """For an import that brings no cursor of its own (the CLI's, the library's): where an
    earlier import or a hook's catch-up of this same file into the run this one goes to
    stopped, if the file still starts with what that read (ReadCursor.fits); else the start.
    Importing a file again then reads only what was added since, instead of re-reading and
    re-checking every line to find each one a duplicate."""
    from agentstate.runs.log import get_run
    from agentstate.runs.sessions import session_run, transcript_cursor

    run = get_run(store, run_ref) if run_ref else None
    if run is None and session.session:
        run = session_run(store, session.agent, session.session)
    if run is None:
        from agentstate.runs.importer import origin_run

        run = origin_run(store, _origin(session, path))
    if run is None:
        return ReadCursor()
    cursor = ReadCursor.from_dict(transcript_cursor(store, run, str(path.resolve())))
    return cursor if cursor.fits(path) else ReadCursor()


def _remember_resume_point(store: Store, imported: TranscriptImport, path: Path,
                          cursor: ReadCursor, start_line: int) -> TranscriptImport:
    """Keep where this import stopped for the next one (see resume_point); the report says
    how many lines an earlier read had covered."""
    imported.already_read = start_line
    if imported.result.run is not None:
        from agentstate.runs.log import get_run
        from agentstate.runs.sessions import save_transcript_cursor

        save_transcript_cursor(store, get_run(store, imported.result.run),
                               str(path.resolve()), cursor.as_dict())
    return imported


def open_transcript(path: Path, agent: str, cursor: ReadCursor | None = None) -> Path:
    """Check the path names a readable file of this agent's format. A cursor past the start
    means an earlier read already checked the format of this same file (the cursor fits it),
    so its first lines are not sniffed again."""
    path = Path(path).expanduser()
    if not path.exists():
        raise InvalidInput(f"no such file: {path}")
    if not path.is_file():
        raise InvalidInput(f"not a regular file: {path}")
    if cursor is None or not cursor.offset:
        check_format(path, agent)
    return path


# ------------------------------------------------------------------ a file or a folder of them

# Per-file counts an import reports (beside `imported`), in the order they are shown.
COUNTS = ("observations", "tool_events", "checkpoints", "notes", "skipped", "duplicates",
          "malformed", "refused")


def files_to_import(path: Path, *, goal: str | None) -> list[Path]:
    """The transcripts `import claude-code|codex PATH` reads: the file, or every *.jsonl
    under a folder. Refused: a missing path, a folder with none, --goal with a folder."""
    from agentstate.errors import UsageError

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
    return files


@dataclass
class TranscriptBatch:
    """What importing a file or a folder of transcripts did, per file and in total."""

    path: Path
    reports: list[TranscriptImport]
    foreign: list[dict[str, str | None]]  # sessions of other projects, left out: file, cwd
    total: dict[str, int]

    def check_something_imported(self) -> None:
        """Non-empty files of which nothing was imported, duplicate or recorded by a hook:
        an error (InvalidInput) naming the first reason."""
        reports, total = self.reports, self.total
        non_empty = [r for r in reports if Path(r.path).stat().st_size > 0]
        hooked = sum(r.result.skipped_reasons.get(LOGGED_BY_HOOK, 0) for r in reports)
        if not non_empty or total["imported"] or total["duplicates"] or hooked \
                or total["already_read"]:
            return
        first = next((r for r in non_empty if r.result.rejected), None)
        reason = (f"line {first.result.rejected[0].position}: {first.result.rejected[0].reason}"
                  if first else "no messages, tool calls or summaries in it")
        where = self.path if len(reports) == 1 else f"{len(non_empty)} file(s) under {self.path}"
        raise InvalidInput(f"nothing imported from {where} ({reason})",
                           details={"files": [r.as_dict() for r in reports], "total": total})


def import_transcripts(store: Store, path: Path, files: list[Path],
                       one: Callable[[Store, Path], TranscriptImport], *,
                       all_projects: bool = False, make_current: bool = False
                       ) -> TranscriptBatch:
    """Import `files` (from `files_to_import(path)`) one by one with `one`. From a folder,
    sessions whose cwd is outside this repository stay out unless `all_projects` (counted
    and named). With `make_current`, the last imported session's run becomes current."""
    foreign: list[dict[str, str | None]] = []
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
    reports = [one(store, file) for file in files]
    if make_current:
        from agentstate.runs.log import set_current_run

        last = next((r.result.run for r in reversed(reports) if r.result.run), None)
        if last:
            set_current_run(store, last)
    total = {key: sum(r.as_dict()[key] for r in reports)
             for key in ("imported", *COUNTS, "already_read")}
    return TranscriptBatch(path, reports, foreign, total)
