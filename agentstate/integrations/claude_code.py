"""Import a Claude Code session transcript (`~/.claude/projects/<project>/<session>.jsonl`).

Each line is one JSON record with a `type`: `user` and `assistant` records carry
`message.content` (a string, or blocks `text`, `thinking`, `tool_use`, `tool_result`, `image`)
with `uuid`, `parentUuid`, `sessionId`, `cwd`, `gitBranch`, `isSidechain` and `timestamp`;
`summary` records carry a `summary` and a `leafUuid`; `system` records include the
`compact_boundary` marker written when a conversation is compacted, and the compaction's
summary follows as a `user` record marked `isCompactSummary`.

Mapping (see docs/integrations.md, "import claude-code"):
- user text → `observation` from `user`; command/caveat wrappers and `isMeta` records are
  skipped; assistant text → `observation` from `model`;
- a `tool_use` and the `tool_result` with its id → ONE `tool` event (tool name, input
  summary, error flag from `is_error`, an excerpt of the output; secrets redacted);
- `summary` records and `isCompactSummary` messages → checkpoints;
- thinking blocks are skipped unless `include_thinking` (then `note` events from `model`);
- sidechain (subagent) records are imported with `sidechain: true` in their meta.
"""

from __future__ import annotations

from collections.abc import Iterator
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

AGENT = "claude-code"


def import_claude_code(
    store: Store,
    path: Path,
    *,
    run_ref: str | None = None,
    goal: str | None = None,
    strict: bool = False,
    include_thinking: bool = False,
    already_logged: AlreadyLogged | None = None,
    cursor: ReadCursor | None = None,
    make_current: bool = False,
) -> TranscriptImport:
    """Import ONE Claude Code transcript file into `run_ref`, or the run of its session.

    Idempotent: records already imported into the run are counted as duplicates. Without
    `run_ref` or `goal`, the run an earlier import of the same session created is reused;
    else a new run is named after the session's first real user request. Raises InvalidInput
    for a missing file or a file in another agent's format; with `strict`, for the first
    malformed line (Refused for a secret), importing nothing. A `cursor` (see ReadCursor)
    starts the reading where an earlier import stopped and is moved to where this one did.
    """
    # Without a cursor of its own (and with nothing asked that the earlier read did not do),
    # the import goes on where the last one of this file into the same run stopped.
    resuming = cursor is None and goal is None and not (strict or include_thinking)
    path = open_transcript(path, AGENT, cursor)
    kept = kept_session(cursor, AGENT)
    session = kept[0] if kept else read_session(path)
    if resuming:
        cursor = resume_point(store, path, session, run_ref)
    start_line = cursor.line if cursor is not None else 0
    keep_session(cursor, session)
    records = _records(path, include_thinking, session.first_ts, cursor or ReadCursor())
    return run_import(store, path, session, records,
                      run_ref=run_ref, goal=goal, strict=strict,
                      already_logged=already_logged, make_current=make_current,
                      resumed=(cursor, start_line) if resuming and cursor else None)


def _text_of(content: Any) -> str:
    """The typed text of a message: a string, or its `text` blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text"
                         and isinstance(b.get("text"), str))
    return ""


def read_session(path: Path) -> Session:
    """Session id, cwd, branch and the first real user request (the run's goal)."""
    session = Session(AGENT)
    for _, obj, _error in read_lines(path):
        if not isinstance(obj, dict):
            continue
        if session.first_ts is None:
            session.first_ts = timestamp(obj.get("timestamp"))
        for attr, key in (("session", "sessionId"), ("cwd", "cwd"), ("branch", "gitBranch")):
            value = obj.get(key)
            if getattr(session, attr) is None and isinstance(value, str) and value:
                setattr(session, attr, value)
        if (session.goal is None and obj.get("type") == "user" and not obj.get("isSidechain")
                and not obj.get("isMeta") and not obj.get("isCompactSummary")
                and isinstance(obj.get("message"), dict)):
            text = _text_of(obj["message"].get("content"))
            if text.strip() and not is_harness_text(text):
                session.goal = goal_from(text)
        if session.goal and session.session and session.cwd:
            break
    return session


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b["text"] for b in content
                         if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _records(path: Path, include_thinking: bool, first_ts: str | None, cursor: ReadCursor
             ) -> Iterator[ImportLine]:
    state = cursor.state
    pending: dict[str, Any] = state.setdefault("pending", {})  # tool_use id → [line, name, input]
    compaction: dict[str, Any] = state.get("compaction") or {}  # the last compact_boundary's
    last_ts = state.get("last_ts") or first_ts
    for number, obj, problem in parsed_lines(path, cursor):
        if problem is not None:
            yield problem
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            yield ImportLine(number, error="not a transcript record (no type)")
            continue
        kind = obj["type"]
        ts = timestamp(obj.get("timestamp"))
        last_ts = ts or last_ts
        meta = _record_meta(obj)
        uuid = obj.get("uuid") or f"line{number}"
        if kind == "summary":
            yield _summary(number, obj, meta, last_ts)
            continue
        if kind == "system":
            if obj.get("subtype") == "compact_boundary":
                found = obj.get("compactMetadata")
                compaction = found if isinstance(found, dict) else {}
                yield ImportLine(number, skip="compaction marker")
            else:
                yield ImportLine(number, skip="system message")
            continue
        if kind not in ("user", "assistant"):
            yield ImportLine(number, skip=f"{kind} record")
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            yield ImportLine(number, error=f"{kind} record without a message")
            continue
        content = message.get("content")
        if obj.get("isCompactSummary"):
            text = _text_of(content)
            if not text.strip():
                yield ImportLine(number, error="compaction summary without text")
                continue
            extra: dict[str, Any] = {k: compaction[k] for k in ("trigger", "preTokens")
                                     if k in compaction}
            yield ImportLine(number, record("checkpoint", text, "model", ts, f"{uuid}:summary",
                                            {**meta, "compaction": "summary", **extra}))
            compaction = {}
            continue
        if obj.get("isMeta"):
            yield ImportLine(number, skip="harness message")
            continue
        blocks = _blocks(content)
        if blocks is None:
            yield ImportLine(number, error=f"{kind} message without content")
            continue
        for index, block in enumerate(blocks):
            line = _block(number, kind, block, f"{uuid}:{index}", ts, meta, include_thinking,
                          pending)
            if line is not None:
                yield line
    state.update(compaction=compaction, last_ts=last_ts)
    yield from unanswered(pending)


def _record_meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"agent": AGENT}
    if isinstance(obj.get("uuid"), str):
        meta["uuid"] = obj["uuid"]
    if obj.get("isSidechain"):
        meta["sidechain"] = True
    return meta


def _blocks(content: Any) -> list[Any] | None:
    """A message's content blocks (a plain string is one text block); None if neither."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    return None


def _summary(number: int, obj: dict[str, Any], meta: dict[str, Any], last_ts: str | None
             ) -> ImportLine:
    """A `summary` record: a checkpoint where the session was at that line."""
    text = obj.get("summary")
    if not isinstance(text, str) or not text.strip():
        return ImportLine(number, error="summary record without a summary")
    leaf = obj.get("leafUuid")
    # Summary records carry no time: they sit where the session was at that line.
    return ImportLine(number, record(
        "checkpoint", text, "model", last_ts, f"summary:{leaf or number}",
        {**meta, "compaction": "summary", **({"leaf": leaf} if leaf else {})}))


def _block(number: int, kind: str, block: Any, identity: str, ts: str | None,
           meta: dict[str, Any], include_thinking: bool, pending: dict[str, Any]
           ) -> ImportLine | None:
    """One content block of a user or assistant message: a record, a skip or an error;
    None for an empty text and for a tool call (kept in `pending` until its result)."""
    btype = block.get("type") if isinstance(block, dict) else None
    if btype == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text.strip():
            return None
        if kind == "user" and is_harness_text(text):
            return ImportLine(number, skip="harness text")
        source = "user" if kind == "user" else "model"
        return ImportLine(number, record("observation", text, source, ts, identity, meta))
    if btype == "thinking":
        thought = block.get("thinking")
        if include_thinking and isinstance(thought, str) and thought.strip():
            return ImportLine(number, record("note", thought, "model", ts, identity,
                                             {**meta, "thinking": True}))
        return ImportLine(number, skip="thinking (not stored)")
    if btype == "tool_use" and isinstance(block.get("id"), str):
        pending[block["id"]] = [number, str(block.get("name") or "tool"), block.get("input")]
        return None
    if btype == "tool_result" and isinstance(block.get("tool_use_id"), str):
        return ImportLine(number, _tool(block, pending, ts, meta))
    if btype == "tool_result":
        return ImportLine(number, error="tool_result without a tool_use_id")
    return ImportLine(number, skip=f"{btype or 'unknown'} block")


def _tool(block: dict[str, Any], pending: dict[str, Any], ts: str | None,
          meta: dict[str, Any]) -> dict[str, Any]:
    call = block["tool_use_id"]
    # A result whose call is not in the file (the transcript starts mid-session) is still
    # a tool event, of an unnamed tool.
    _, name, tool_input = pending.pop(call, [0, "tool", None])
    output = _result_text(block.get("content"))
    # Claude Code marks every failed result `is_error` (its text starts "Exit code N", which
    # tool_record takes as the code): a result without the mark is the client's success.
    error = bool(block.get("is_error"))
    extra = {k: v for k, v in meta.items() if k != "agent"}
    return tool_record(AGENT, name, tool_input, output, error=error, exit_code=None,
                       ts=ts, identity=f"tool:{call}", extra=extra)

