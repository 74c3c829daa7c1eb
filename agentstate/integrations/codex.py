"""Import a Codex CLI rollout file (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`).

Each line is `{"timestamp", "type", "payload"}`. Types: `session_meta` (payload `id`, `cwd`,
`git.branch`, …), `turn_context` (per-turn settings), `response_item` (payload `type`
`message` with `role` and `content` blocks `input_text`/`output_text`, `reasoning`,
`function_call` with `name`, `arguments` and `call_id`, `function_call_output` with `call_id`
and `output`, `custom_tool_call`/`custom_tool_call_output`, `local_shell_call`, …),
`event_msg` (UI events, most of which repeat response items) and `compacted` (payload
`message`: the compaction summary).

Mapping (see docs/integrations.md, "import codex"):
- user messages → `observation` from `user` (environment/instruction blocks skipped; the
  `developer` role is skipped); assistant messages → `observation` from `model`;
- a call and the output with its `call_id` → ONE `tool` event (exit code from the output's
  metadata or its `Exit code: N` line, an excerpt of the output, secrets redacted);
- `compacted` → a checkpoint; reasoning is skipped unless `include_reasoning` (then `note`);
- `event_msg` user/agent messages are used only in files without message response items.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentstate.integrations.transcript_lines import ReadCursor, parsed_lines, read_lines
from agentstate.integrations.transcripts import (
    AlreadyLogged,
    Session,
    TranscriptImport,
    goal_from,
    is_harness_text,
    keep_session,
    kept_session,
    open_transcript,
    record,
    resume_point,
    run_import,
    timestamp,
    tool_record,
    unanswered,
)
from agentstate.runs.importer import ImportLine
from agentstate.store.db import Store

AGENT = "codex"
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def import_codex(
    store: Store,
    path: Path,
    *,
    run_ref: str | None = None,
    goal: str | None = None,
    strict: bool = False,
    include_reasoning: bool = False,
    already_logged: AlreadyLogged | None = None,
    cursor: ReadCursor | None = None,
    make_current: bool = False,
) -> TranscriptImport:
    """Import ONE Codex rollout file into `run_ref`, or the run of its session.

    Same contract as `import_claude_code`: idempotent, the session's run reused, a new run
    named after the first real user request; InvalidInput for a missing file or another
    agent's format; with `strict`, the first malformed line imports nothing; a `cursor` as
    for Claude Code.
    """
    # As for Claude Code: without a cursor of its own, go on where the last import stopped.
    resuming = cursor is None and goal is None and not (strict or include_reasoning)
    path = open_transcript(path, AGENT, cursor)
    kept = kept_session(cursor, AGENT)
    if kept is not None and isinstance(kept[1].get("has_items"), bool):
        session, has_items = kept[0], kept[1]["has_items"]
    else:
        session, has_items = read_session(path)
    if resuming:
        cursor = resume_point(store, path, session, run_ref)
    start_line = cursor.line if cursor is not None else 0
    if has_items:  # complete only then (read_session reads on until it knows)
        keep_session(cursor, session, {"has_items": has_items})
    records = _records(path, include_reasoning, has_items, cursor or ReadCursor())
    return run_import(store, path, session, records,
                      run_ref=run_ref, goal=goal, strict=strict,
                      already_logged=already_logged, make_current=make_current,
                      resumed=(cursor, start_line) if resuming and cursor else None)


def _message_text(payload: dict[str, Any]) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content
                     if isinstance(b, dict) and isinstance(b.get("text"), str)
                     and b.get("type") in ("input_text", "output_text", "text"))


def read_session(path: Path) -> tuple[Session, bool]:
    """The session (id, cwd, branch, first real user request) and whether the file has
    message response items (when it does, the event_msg copies of messages are skipped)."""
    session = Session(AGENT)
    has_items = False
    for _, obj, _error in read_lines(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            continue
        payload = obj["payload"]
        kind = obj.get("type")
        if kind == "session_meta":
            if isinstance(payload.get("id"), str) and session.session is None:
                session.session = payload["id"]
            if isinstance(payload.get("cwd"), str) and session.cwd is None:
                session.cwd = payload["cwd"]
            git = payload.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str):
                session.branch = session.branch or git["branch"]
        elif kind == "turn_context" and session.cwd is None and isinstance(
                payload.get("cwd"), str):
            session.cwd = payload["cwd"]
        text = None
        if kind == "response_item" and payload.get("type") == "message":
            has_items = True
            if payload.get("role") == "user":
                text = _message_text(payload)
        elif kind == "event_msg" and payload.get("type") == "user_message":
            text = payload.get("message") if isinstance(payload.get("message"), str) else None
        if session.goal is None and text and text.strip() and not is_harness_text(text):
            session.goal = goal_from(text)
        if has_items and session.goal and session.session and session.cwd:
            break  # all it needs: a hook's catch-up must not read a long rollout twice
    return session, has_items


def _arguments(payload: dict[str, Any]) -> Any:
    if payload.get("type") == "local_shell_call":
        action = payload.get("action")
        return {"command": action.get("command")} if isinstance(action, dict) else None
    if payload.get("type") == "custom_tool_call":
        return payload.get("input")
    raw = payload.get("arguments")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def parse_output(value: Any) -> tuple[str, int | None, bool]:
    """(output text, exit code, failed) of a call's output in any of its recorded shapes:
    a plain string, a JSON string `{"output", "metadata": {"exit_code"}}`, an object with
    `content`/`success`, or a list of content blocks."""
    success = None
    exit_code = None
    text: Any = ""  # a string, or a list of content blocks until the end of this function
    if isinstance(value, str):
        text = value
        try:
            inner = json.loads(value)
        except json.JSONDecodeError:
            inner = None
        if isinstance(inner, dict) and "output" in inner:
            value = inner
    if isinstance(value, dict):
        text = value.get("output", value.get("content", ""))
        success = value.get("success")
        metadata = value.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
            exit_code = metadata["exit_code"]
    if isinstance(text, list) or isinstance(value, list):
        blocks = text if isinstance(text, list) else value
        text = "\n".join(b.get("text", "") for b in blocks if isinstance(b, dict))
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)
    # Codex's header ("Exit code: 1" / "Chunk ID … Process exited with code 1 … Output:"):
    # the code is taken and the header dropped, so the excerpt starts with the output.
    from agentstate.integrations.tool_outcome import strip_client_wrapper

    text, text_code = strip_client_wrapper(text)
    exit_code = exit_code if exit_code is not None else text_code
    failed = (exit_code is not None and exit_code != 0) or success is False
    return text, exit_code, failed


def _records(path: Path, include_reasoning: bool, has_items: bool, cursor: ReadCursor
             ) -> Iterator[ImportLine]:
    pending: dict[str, Any] = cursor.state.setdefault("pending", {})  # call_id → [line, name, args]
    for number, obj, problem in parsed_lines(path, cursor):
        if problem is not None:
            yield problem
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str) \
                or not isinstance(obj.get("payload"), dict):
            yield ImportLine(number, error="not a rollout record (no type and payload)")
            continue
        kind, payload = obj["type"], obj["payload"]
        ts = timestamp(obj.get("timestamp"))
        at = _At(number, ts, f"line{number}")
        line: ImportLine | None
        if kind in ("session_meta", "turn_context"):
            line = ImportLine(number, skip="session metadata")
        elif kind == "compacted":
            text = payload.get("message")
            if not isinstance(text, str) or not text.strip():
                text = "conversation compacted (no readable summary)"
            line = ImportLine(number, record("checkpoint", text, "model", ts, at.identity,
                                             {"agent": AGENT, "compaction": "compacted"}))
        elif kind == "event_msg":
            line = _event_message(at, payload, has_items)
        elif kind != "response_item":
            line = ImportLine(number, skip=f"{kind} record")
        else:
            line = _response_item(at, payload, include_reasoning, pending)
        if line is not None:
            yield line
    yield from unanswered(pending)


@dataclass(frozen=True)
class _At:
    """Where a record is: its line, its time, and the identity its import key uses."""

    number: int
    ts: str | None
    identity: str


def _event_message(at: _At, payload: dict[str, Any], has_items: bool) -> ImportLine:
    """An `event_msg`: the user's and the agent's messages, for rollouts that have no
    response items; everything else skipped."""
    ptype = payload.get("type")
    if not has_items and ptype in ("user_message", "agent_message") and isinstance(
            payload.get("message"), str) and payload["message"].strip():
        text = payload["message"]
        if ptype == "user_message" and is_harness_text(text):
            return ImportLine(at.number, skip="harness text")
        source = "user" if ptype == "user_message" else "model"
        return ImportLine(at.number, record("observation", text, source, at.ts, at.identity,
                                            {"agent": AGENT}))
    return ImportLine(at.number, skip="event message")


def _response_item(at: _At, payload: dict[str, Any], include_reasoning: bool,
                   pending: dict[str, Any]) -> ImportLine | None:
    """A `response_item`: a message, reasoning, a call (kept in `pending`, None) or its
    output (a tool event with the call's name and arguments)."""
    number, ts, meta = at.number, at.ts, {"agent": AGENT}
    ptype = payload.get("type")
    if ptype == "message":
        role = payload.get("role")
        text = _message_text(payload)
        if role not in ("user", "assistant") or not text.strip():
            return ImportLine(number, skip=f"{role or 'unknown'} message")
        if role == "user" and is_harness_text(text):
            return ImportLine(number, skip="harness text")
        source = "user" if role == "user" else "model"
        return ImportLine(number, record("observation", text, source, ts, at.identity, meta))
    if ptype == "reasoning":
        parts = [b.get("text", "") for key in ("summary", "content")
                 for b in (payload.get(key) or []) if isinstance(b, dict)]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        if include_reasoning and text:
            return ImportLine(number, record("note", text, "model", ts, at.identity,
                                             {**meta, "reasoning": True}))
        return ImportLine(number, skip="reasoning (not stored)")
    if ptype in _CALLS and isinstance(payload.get("call_id"), str):
        name = "shell" if ptype == "local_shell_call" else str(payload.get("name") or "tool")
        pending[payload["call_id"]] = [number, name, _arguments(payload)]
        return None
    if ptype in _OUTPUTS and isinstance(payload.get("call_id"), str):
        call = payload["call_id"]
        _, name, arguments = pending.pop(call, [0, "tool", None])
        output, exit_code, failed = parse_output(payload.get("output"))
        # Codex never marks a failure by itself (True only for `success: false`).
        return ImportLine(number, tool_record(AGENT, name, arguments, output,
                                              error=True if failed else None,
                                              exit_code=exit_code, ts=ts,
                                              identity=f"call:{call}"))
    if ptype in _CALLS | _OUTPUTS:
        return ImportLine(number, error=f"{ptype} without a call_id")
    return ImportLine(number, skip=f"{ptype or 'unknown'} item")
