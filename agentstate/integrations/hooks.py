"""`agentstate hook claude-code|codex`: what an agent's lifecycle hook does with its payload.

Claude Code and Codex CLI call a command with one JSON object on stdin: `session_id`,
`transcript_path`, `cwd`, `hook_event_name` and the event's own fields. This module is an
entry point, not a domain: it maps each event onto the run log's own functions.

    SessionStart                   → the resume pack (within RESUME_BUDGET_TOKENS) on stdout,
                                     as hookSpecificOutput.additionalContext
    UserPromptSubmit               → an `observation` from `prompt:AGENT`, the user's words
                                     unverified (the first prompt of a
                                     session without a run starts one, with it as the goal)
    PostToolUse(/Failure)          → a `tool` event with a bounded, redacted output excerpt
    PreCompact, Stop, SessionEnd   → catch up from the transcript, then a checkpoint

Everything but the user's own prompt is written with the `agent` principal's rights. The
caller (the CLI) turns any failure into one stderr line, a line in the hook-error log and
exit 0: a hook never breaks the agent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.integrations.hook_keys import logged_by_hooks, prompt_key
from agentstate.runs.log import Run
from agentstate.store.db import Store
from agentstate.store.principals import Principal

AGENTS = {"claude-code": "Claude Code", "codex": "Codex"}
# The SessionStart pack's budget in tokens (a candidate `[hooks] resume_budget` config key).
RESUME_BUDGET_TOKENS = 2000
# Hooks wait at most this long for a store another process holds locked.
HOOK_BUSY_TIMEOUT_MS = 2000
PROMPT_CHARS = 8000  # a pasted log in a prompt is kept to its head
GOAL_CHARS = 200
HEADLINE_COMMAND_CHARS = 200
HOOK_PRINCIPAL = "agent"
CHECKPOINT_EVENTS = {"PreCompact": "before compaction", "Stop": "end of turn",
                     "SessionEnd": "session ended"}
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")


@dataclass
class HookPayload:
    agent: str
    event: str
    session_id: str
    cwd: Path | None
    transcript_path: str | None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class HookOutcome:
    """What one hook call did: the refs it wrote and what to print on stdout (if anything)."""

    event: str
    run: str | None = None
    events: list[str] = field(default_factory=list)
    stdout: str | None = None
    skipped: str | None = None
    caught_up: int | None = None
    # What the payload did not say the way it should (a missing field, a string where an
    # object was, a transcript path refused): recorded as far as understood, and the CLI
    # writes one line to the hook-error log.
    problems: list[str] = field(default_factory=list)


def parse_payload(agent: str, raw: str | bytes) -> HookPayload:
    """Check the hook's stdin: a JSON object with a session id and an event name (UTF-8,
    within the JSON limits of store/limits.py)."""
    from agentstate.store.limits import parse_json

    if agent not in AGENTS:
        raise InvalidInput(f"unknown agent {agent!r}: expected {', '.join(AGENTS)}")
    data = parse_json(raw, "the hook input")
    if not isinstance(data, dict):
        raise InvalidInput("the hook input is not a JSON object")
    event = data.get("hook_event_name")
    session_id = data.get("session_id")
    if not isinstance(event, str) or not event:
        raise InvalidInput("the hook input has no hook_event_name")
    if not isinstance(session_id, str) or not session_id:
        raise InvalidInput("the hook input has no session_id")
    cwd = data.get("cwd")
    transcript = data.get("transcript_path")
    return HookPayload(agent, event, session_id,
                       Path(cwd) if isinstance(cwd, str) and cwd else None,
                       transcript if isinstance(transcript, str) and transcript else None, data)


def open_hook_store(payload_cwd: Path | None, override: str | None) -> Store:
    """The store found from the hook process's own working directory — where the client
    runs the hook it installed, i.e. this repository — (--dir / AGENTSTATE_DIR win). The
    payload's `cwd` is the agent's word and never chooses the store: one naming another
    repository must not write into that repository's store (`check_cwd` notes it)."""
    from agentstate.maintenance.join import open_or_join

    del payload_cwd  # kept in the signature for callers; see the docstring
    # A session in a fresh clone of a repository that shares .agentstate/ (the hook settings
    # may be committed too) sets the clone's store up rather than failing every hook.
    store, _ = open_or_join(override)
    store.set_busy_timeout(HOOK_BUSY_TIMEOUT_MS)
    return store


def check_cwd(store: Store, payload: HookPayload, outcome: HookOutcome) -> None:
    """Note a payload whose `cwd` is outside the repository of the store it is written to."""
    from agentstate.integrations.paths import inside

    if payload.cwd is not None and not inside(str(payload.cwd), store.work_tree):
        outcome.problems.append(
            f"cwd {_shown(str(payload.cwd))} is outside this repository; recorded in "
            f"{store.work_tree}'s store only")


def _shown(text: str, limit: int = 200) -> str:
    """A path from a payload, safe for a log line: printable and bounded."""
    text = "".join(ch if ch.isprintable() else "?" for ch in text[:limit])
    return repr(text)


def _mangled(path: Path) -> str:
    # Claude Code names a project's transcript folder after its directory, every character
    # that is not a letter or a digit replaced by "-": /home/dev/shop → -home-dev-shop.
    import re

    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def transcript_roots(agent: str, store: Store) -> list[Path]:
    """The folders a hook may read this project's transcripts from."""
    import os

    if agent == "claude-code":
        base = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude") / "projects"
        names = {_mangled(store.work_tree)}
        try:
            names.add(_mangled(Path.cwd()))
        except OSError:
            pass
        return [base / name for name in sorted(names)]
    return [Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "sessions"]


def confined_transcript(store: Store, payload: HookPayload) -> Path | None:
    """The payload's transcript_path when it is a regular file under this project's
    transcript folder (symlinks resolved first); None — noted in the outcome's problems when
    something is there — otherwise. The agent controls the payload: any other file would be
    read as the user's own turns."""
    if not payload.transcript_path:
        return None
    given = Path(payload.transcript_path).expanduser()
    try:
        real = given.resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # nothing there (yet): nothing to read, nothing to report
    for root in transcript_roots(payload.agent, store):
        try:
            real.relative_to(root.resolve())
        except (ValueError, OSError, RuntimeError):
            continue
        if real.is_file():
            return real
        break
    raise TranscriptRefused(
        f"transcript_path {_shown(payload.transcript_path)} is not a regular file under "
        f"{' or '.join(str(r) for r in transcript_roots(payload.agent, store))}: not read")


class TranscriptRefused(Exception):
    """A transcript_path outside this project's transcripts (noted, never read)."""


def hook_principal(store: Store) -> Principal:
    """The `agent` principal from config.toml; its shipped definition if it was removed."""
    from agentstate.config import PrincipalsSettings
    from agentstate.store.principals import lookup_principal

    try:
        return lookup_principal(store, HOOK_PRINCIPAL)
    except InvalidInput:
        spec = PrincipalsSettings().declared[HOOK_PRINCIPAL]
        return Principal(HOOK_PRINCIPAL, list(spec.read), list(spec.write),
                         list(spec.sources or ()), [])


def handle(store: Store, payload: HookPayload) -> HookOutcome:
    """Act on one hook call. Unknown events are accepted and ignored."""
    outcome = HookOutcome(payload.event)
    check_cwd(store, payload, outcome)
    if payload.event == "SessionStart":
        _session_start(store, payload, outcome)
    elif payload.event == "UserPromptSubmit":
        _prompt(store, payload, outcome)
    elif payload.event in TOOL_EVENTS:
        _tool(store, payload, outcome)
    elif payload.event in CHECKPOINT_EVENTS:
        _checkpoint(store, payload, outcome)
    else:
        outcome.skipped = f"{payload.event} is not recorded"
    return outcome


# ---------------------------------------------------------------- events


def _session_start(store: Store, payload: HookPayload, outcome: HookOutcome) -> None:
    from agentstate.runs.sessions import find_session_run

    run = find_session_run(store, payload.agent, payload.session_id)
    if run is None:
        context = ("agentstate: no active run in this repository yet. Your first prompt starts "
                   "one (its first line becomes the goal), or run `agentstate run start GOAL`.")
    else:
        outcome.run = run.ref
        context = _resume_context(store, run)
    outcome.stdout = json.dumps({"hookSpecificOutput": {
        "hookEventName": "SessionStart", "additionalContext": context}}, ensure_ascii=False)


def _resume_context(store: Store, run: Run) -> str:
    from agentstate.context.resume import build_pack
    from agentstate.errors import BudgetTooSmall

    try:
        pack = build_pack(store, run.ref, budget=RESUME_BUDGET_TOKENS,
                          principal=hook_principal(store))
    except BudgetTooSmall as exc:
        # The pinned parts alone are larger than the budget: show them whole, never cut.
        pack = build_pack(store, run.ref, budget=exc.minimum, principal=hook_principal(store))
    header = ("agentstate resume pack (this repository's run log; read an evt:… ref with "
              "`agentstate events`, record findings with `agentstate log KIND TEXT`):")
    return f"{header}\n\n{pack.text}"


def _ensure_run(store: Store, payload: HookPayload, goal: str | None) -> tuple[Run, bool]:
    """The session's run; a new one (goal: the prompt, else a placeholder) when none is active."""
    from agentstate.runs.sessions import find_session_run, start_session_run
    from agentstate.runs.worktree import snapshot

    run = find_session_run(store, payload.agent, payload.session_id)
    if run is not None:
        return run, False
    title = goal or f"{AGENTS[payload.agent]} session {payload.session_id[:8]}"
    run = start_session_run(store, payload.agent, payload.session_id, title,
                            worktree=snapshot(store.work_tree))
    return run, True


def _prompt(store: Store, payload: HookPayload, outcome: HookOutcome) -> None:
    # `redact` from the excerpt module, where it lives: importing it through the runner
    # loaded the tool policy, its argument rules and the sandbox on every prompt.
    from agentstate.runs.log import append_event
    from agentstate.store.sources import relayed_prompt_source
    from agentstate.tools.excerpt import redact

    prompt = payload.data.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("UserPromptSubmit input has no prompt")
    prompt = prompt.strip()
    key = prompt_key(prompt)
    # Cut before the secret scan: a 60 MB paste costs what PROMPT_CHARS do.
    cut = len(prompt) > PROMPT_CHARS
    text = redact(prompt[:PROMPT_CHARS] if cut else prompt)
    if not text:
        outcome.skipped = "empty prompt"
        return
    if cut:
        text += "\n[... prompt cut ...]"
    first_line = text.splitlines()[0].strip()
    goal = first_line if len(first_line) <= GOAL_CHARS else first_line[: GOAL_CHARS - 1] + "…"
    run, _ = _ensure_run(store, payload, goal)
    outcome.run = run.ref
    # The user's words as the client relays them: `prompt:AGENT`, unverified. Nothing in a
    # hook's input or environment tells the client from an agent piping the same JSON into
    # `agentstate hook` (docs/security.md, "Principals and authority").
    event = append_event(store, run.ref, "observation", text,
                         source=relayed_prompt_source(payload.agent),
                         meta=_meta(payload, prompt_key=key))
    outcome.events.append(event.ref)


def _meta(payload: HookPayload, **extra: Any) -> dict[str, Any]:
    meta = {"agent": payload.agent, "hook": payload.event, "session": payload.session_id}
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta




def tool_record(payload: HookPayload, problems: list[str] | None = None
                ) -> tuple[str, str, dict[str, Any]]:
    """(text, source, meta) of a `tool` event for a PostToolUse(/Failure) payload.

    Recorded as far as the payload is understood: a missing or oddly typed field is noted in
    `problems` (the caller logs it) and never turns the call into an `ok`. How it ended comes
    from tool_outcome: an exit code field, the client's own text, the client's failure
    event, a runner's summary — else `outcome unknown`."""
    from agentstate.integrations import tool_outcome as oc
    from agentstate.store.sources import tool_source
    from agentstate.tools.excerpt import excerpt, output_excerpt, redact

    noted = problems if problems is not None else []
    data = payload.data
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        noted.append("no tool_name")
        name = "tool"
    tool_input = data.get("tool_input")
    error = data.get("error") if isinstance(data.get("error"), str) else None
    # The client's own word: a failure event or an error; Claude Code sends every failed
    # call as PostToolUseFailure, so its PostToolUse is a success report. Codex has no
    # failure event: its PostToolUse says nothing either way.
    client_failed: bool | None = None
    if payload.event == "PostToolUseFailure" or error is not None:
        client_failed = True
    elif payload.agent == "claude-code":
        client_failed = False
    out = _response_output(payload, data.get("tool_response"), noted)
    if out.interrupted:
        client_failed = True
    if tool_input is not None and not isinstance(tool_input, dict):
        noted.append(f"tool_input is a {type(tool_input).__name__}, not an object")
    # Codex's text starts with its header ("… Process exited with code 1 … Output:"),
    # Claude Code's error with "Exit code 1": the code is taken, the wrapper dropped.
    stdout, text_code = oc.strip_client_wrapper(out.stdout)
    stderr, exit_code = out.stderr, out.exit_code
    error_text = ""
    if error:
        error_text, error_code = oc.strip_claude_exit(error)
        text_code = text_code if text_code is not None else error_code
    how = oc.EXIT_CODE
    if exit_code is None and text_code is not None:
        exit_code, how = text_code, oc.CLIENT_TEXT
    if exit_code is not None:
        failed: bool | None = exit_code != 0 or bool(client_failed)
    else:
        failed, how = _judged_outcome("\n".join((stdout, stderr, error_text)), client_failed)
    if error_text.strip() and not (stdout.strip() or stderr.strip()):
        # Claude Code's `error` is the command's whole output, not its stderr.
        excerpt_text = excerpt(error_text)
    else:
        excerpt_text = output_excerpt(stdout, "\n".join(x for x in (stderr, error_text)
                                                        if x.strip()))
    command, file_path = _input_target(tool_input)
    status = oc.Outcome(exit_code, failed, how, "").status
    # The excerpt lives in the meta, as for `exec` and the importers: resume and context show
    # it under the headline (in the text too, it was shown twice).
    text = _tool_headline(name, status, failed, excerpt_text, command, file_path)
    call_id = data.get("tool_use_id") or data.get("call_id")
    meta = _meta(payload, tool=name,
                 command=redact(command[:4000]) if command else None,
                 path=redact(file_path[:1000]) if file_path else None,
                 excerpt=excerpt_text or None,
                 tool_use_id=call_id if isinstance(call_id, str) and call_id else None)
    # A command's exit code is kept (None when nothing stated one): resume ranks calls with
    # a non-zero code higher. `failed` is None when the outcome is unknown.
    if failed or command or exit_code is not None:
        meta["exit_code"] = exit_code
    meta["failed"] = failed
    meta["outcome"] = how
    return text, tool_source(str(name)), meta


@dataclass
class _ToolOutput:
    """What a tool_response says, in whichever of the clients' shapes it came."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    interrupted: bool = False  # the response itself says the call failed or was cut short


def _response_output(payload: HookPayload, response: Any, noted: list[str]) -> _ToolOutput:
    out = _ToolOutput()
    if isinstance(response, dict):
        out.stdout = _text(response.get("stdout") or response.get("output")
                           or response.get("aggregated_output"))
        out.stderr = _text(response.get("stderr"))
        for key in ("exit_code", "exitCode", "returncode"):
            if isinstance(response.get(key), int) and not isinstance(response.get(key), bool):
                out.exit_code = response[key]
        out.interrupted = response.get("interrupted") is True or response.get("is_error") is True
        if not (out.stdout or out.stderr) and response and not {
                "stdout", "stderr", "output", "aggregated_output"} & set(response):
            out.stdout = json.dumps(response, ensure_ascii=False)[:4000]
    elif response is not None:
        if not isinstance(response, str | list):
            noted.append(f"tool_response is a {type(response).__name__}")
        out.stdout = _text(response)
    elif payload.event == "PostToolUse":
        noted.append("no tool_response")
    return out


def _judged_outcome(output: str, client_failed: bool | None) -> tuple[bool | None, str]:
    """(failed, how) when no exit code was stated: the client's failure event, else a
    runner's summary in the output, else the client's success report, else unknown."""
    from agentstate.integrations import tool_outcome as oc

    # Only the kept, bounded output is examined (signature_verdict reads the tail).
    verdict = oc.signature_verdict(output, strong_only=client_failed is False)
    if client_failed:
        return True, oc.CLIENT_EVENT
    if verdict is not None:
        return verdict, oc.SIGNATURE
    if client_failed is False:
        return False, oc.CLIENT_EVENT
    return None, oc.UNKNOWN


def _input_target(tool_input: Any) -> tuple[str | None, str | None]:
    """(command, file path) named by a tool_input, when it is an object that names them."""
    if not isinstance(tool_input, dict):
        return None, None
    raw_command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(raw_command, list):
        raw_command = " ".join(str(part) for part in raw_command)
    raw_path = tool_input.get("file_path") or tool_input.get("path")
    return (raw_command if isinstance(raw_command, str) else None,
            raw_path if isinstance(raw_path, str) else None)


def _tool_headline(name: str, status: str, failed: bool | None, excerpt_text: str,
                   command: str | None, file_path: str | None) -> str:
    from agentstate.tools.excerpt import redact, telling_line

    shown = None
    if command:
        shown = " ".join(redact(command[:4 * HEADLINE_COMMAND_CHARS]).split())
        if len(shown) > HEADLINE_COMMAND_CHARS:
            shown = shown[: HEADLINE_COMMAND_CHARS - 1] + "…"
    what = f"$ {shown}" if shown else redact(file_path[:1000]) if file_path else None
    if failed:
        # The failure first: resume shows the first ~100 characters of a line.
        reason = telling_line(excerpt_text) if excerpt_text else ""
        return f"{name} {status}" + (f": {reason}" if reason else "") + (
            f" ({what})" if what else "")
    return f"{name}: {what} → {status}" if what else f"{name} → {status}"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content blocks: [{"type": "text", "text": ...}]
        parts = [v.get("text") if isinstance(v, dict) else v for v in value]
        return "\n".join(str(p) for p in parts if p)
    return json.dumps(value, ensure_ascii=False)


def _tool(store: Store, payload: HookPayload, outcome: HookOutcome) -> None:
    from agentstate.runs.log import append_event

    text, source, meta = tool_record(payload, outcome.problems)
    run, _ = _ensure_run(store, payload, None)
    outcome.run = run.ref
    event = append_event(store, run.ref, "tool", text, source=source, meta=meta,
                         allow_system_kinds=True, claimed_by=hook_principal(store))
    outcome.events.append(event.ref)


def _checkpoint(store: Store, payload: HookPayload, outcome: HookOutcome) -> None:
    from agentstate.runs.checkpoint import create_checkpoint, last_checkpoint
    from agentstate.runs.log import run_event_count
    from agentstate.runs.sessions import find_session_run
    from agentstate.runs.worktree import snapshot

    run = find_session_run(store, payload.agent, payload.session_id)
    if run is None:
        outcome.skipped = "no active run"
        return
    outcome.run = run.ref
    outcome.caught_up = _catch_up(store, payload, run.ref, outcome)
    last = last_checkpoint(store, run)
    if last is not None and last.event_seq >= run_event_count(store, run):
        outcome.skipped = f"nothing new since {last.ref}"
        return
    why = payload.data.get("trigger") or payload.data.get("reason")
    note = CHECKPOINT_EVENTS[payload.event] + (f" ({why})" if isinstance(why, str) and why
                                               else "")
    checkpoint = create_checkpoint(store, run.ref, f"{AGENTS[payload.agent]}: {note}",
                                   worktree=snapshot(store.work_tree), source="model",
                                   claimed_by=hook_principal(store))
    outcome.events.append(checkpoint.ref)


def _catch_up(store: Store, payload: HookPayload, run_ref: str,
              outcome: HookOutcome) -> int | None:
    """Import from the agent's transcript what the hooks missed: idempotent (the importers
    key every record by its transcript identity), and what a hook already recorded in its
    own form is skipped (`logged_by_hooks`). Reading starts where the previous catch-up of
    this run from this file stopped, so a Stop hook late in a long session reads only the
    new turns, not the whole transcript again."""
    from agentstate.integrations.transcript_lines import ReadCursor
    from agentstate.runs.log import get_run
    from agentstate.runs.sessions import save_transcript_cursor, transcript_cursor

    try:
        found = confined_transcript(store, payload)
    except TranscriptRefused as exc:
        outcome.problems.append(str(exc))
        return None
    if found is None:
        return None
    path = found
    run = get_run(store, run_ref)
    where = str(path.resolve())
    cursor = ReadCursor.from_dict(transcript_cursor(store, run, where))
    if not cursor.fits(path):
        cursor = ReadCursor()
    already = logged_by_hooks(store, payload.session_id)
    if payload.agent == "claude-code":
        from agentstate.integrations.claude_code import import_claude_code

        result = import_claude_code(store, path, run_ref=run_ref, already_logged=already,
                                    cursor=cursor)
    else:
        from agentstate.integrations.codex import import_codex

        result = import_codex(store, path, run_ref=run_ref, already_logged=already,
                              cursor=cursor)
    save_transcript_cursor(store, run, where, cursor.as_dict())
    return result.result.imported
