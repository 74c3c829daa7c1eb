"""What an agent's hook says on stdin, and which of the files it names a hook may read.

A hook's payload is the agent's word: `parse_payload` checks its shape, `payload_meta` is the
part of it every event a hook writes keeps, and `confined_transcript` reads its
`transcript_path` only inside this project's transcript folders. The events each hook
writes are decided in hooks.py; a tool call's record in hook_tool.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.store.db import Store

AGENTS = {"claude-code": "Claude Code", "codex": "Codex"}


@dataclass
class HookPayload:
    agent: str
    event: str
    session_id: str
    cwd: Path | None
    transcript_path: str | None
    data: dict[str, Any] = field(default_factory=dict)


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


def shown(text: str, limit: int = 200) -> str:
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
        f"transcript_path {shown(payload.transcript_path)} is not a regular file under "
        f"{' or '.join(str(r) for r in transcript_roots(payload.agent, store))}: not read")


class TranscriptRefused(Exception):
    """A transcript_path outside this project's transcripts (noted, never read)."""


def payload_meta(payload: HookPayload, **extra: Any) -> dict[str, Any]:
    meta = {"agent": payload.agent, "hook": payload.event, "session": payload.session_id}
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta
