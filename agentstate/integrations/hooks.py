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

from agentstate.errors import InvalidInput
from agentstate.integrations.hook_keys import logged_by_hooks, prompt_key
from agentstate.integrations.hook_payload import (
    AGENTS,
    HookPayload,
    TranscriptRefused,
    confined_transcript,
    payload_meta,
    shown,
)
from agentstate.integrations.hook_tool import tool_record
from agentstate.runs.records import Run
from agentstate.store.db import Store
from agentstate.store.principals import Principal

# The SessionStart pack's budget in tokens (a candidate `[hooks] resume_budget` config key).
RESUME_BUDGET_TOKENS = 2000
# Hooks wait at most this long for a store another process holds locked.
HOOK_BUSY_TIMEOUT_MS = 2000
PROMPT_CHARS = 8000  # a pasted log in a prompt is kept to its head
GOAL_CHARS = 200
HOOK_PRINCIPAL = "agent"
CHECKPOINT_EVENTS = {"PreCompact": "before compaction", "Stop": "end of turn",
                     "SessionEnd": "session ended"}
TOOL_EVENTS = ("PostToolUse", "PostToolUseFailure")


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
            f"cwd {shown(str(payload.cwd))} is outside this repository; recorded in "
            f"{store.work_tree}'s store only")


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
                         meta=payload_meta(payload, prompt_key=key))
    outcome.events.append(event.ref)


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
