"""Reading agent transcripts: lines streamed with bounded memory, resumed where the last
complete read stopped (ReadCursor), and the formats told apart from their first lines."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agentstate.errors import InvalidInput
from agentstate.runs.importer import ImportLine
from agentstate.store.limits import parse_json

T = TypeVar("T")  # what _first passes through

AGENT_LABELS = {"claude-code": "a Claude Code session transcript",
                "codex": "a Codex CLI rollout file"}
CLAUDE_TYPES = {"user", "assistant", "summary", "system", "file-history-snapshot",
                "queue-operation", "progress", "attachment"}
CODEX_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
SNIFF_LINES = 20



@dataclass
class ReadCursor:
    """Where the last complete read of a transcript stopped, and the reader's state there.

    Transcripts only grow, so a hook's catch-up can start where the previous one stopped
    instead of re-reading (and re-checking for secrets) every line of a long session. The
    cursor is an optimisation only: imports stay idempotent, and a file that does not end
    the way the cursor remembers (rewritten, truncated, replaced) is read from the start.
    `state` is the format reader's own (calls awaiting their result, the last timestamp…),
    JSON-shaped so it can be stored."""

    offset: int = 0  # bytes of complete lines already read
    line: int = 0  # their count, so line numbers (and identities made of them) stay absolute
    tail: str = ""  # digest of the bytes just before `offset`
    state: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "line": self.line, "tail": self.tail,
                "state": self.state}

    @classmethod
    def from_dict(cls, data: Any) -> ReadCursor:
        if (not isinstance(data, dict) or not isinstance(data.get("offset"), int)
                or not isinstance(data.get("line"), int) or not isinstance(data.get("tail"), str)
                or not isinstance(data.get("state"), dict)):
            return cls()
        return cls(data["offset"], data["line"], data["tail"], data["state"])

    def fits(self, path: Path) -> bool:
        """Whether the file still starts with what the cursor read (cheap: its size and the
        bytes just before the offset)."""
        if self.offset == 0:
            return True
        try:
            with path.open("rb") as handle:
                if handle.seek(0, 2) < self.offset:
                    return False
                return _tail_digest(handle, self.offset) == self.tail
        except OSError:
            return False


TAIL_BYTES = 256


def _tail_digest(handle: Any, offset: int) -> str:
    start = max(0, offset - TAIL_BYTES)
    handle.seek(start)
    return hashlib.sha256(handle.read(offset - start)).hexdigest()


def read_lines(path: Path, cursor: ReadCursor | None = None
               ) -> Iterator[tuple[int, Any, str | None]]:
    """(line number, parsed object or None, error) for each non-blank line.

    Lines are read under the one rule for input (store/limits.parse_json): bytes that are
    not UTF-8, NaN, nesting or integers past the limits reject that line, never the file. A
    last line without its newline that does not parse is reported as `partial`: the agent
    is still writing it, and the next import will read it whole.

    With a cursor, reading starts at its offset and the cursor follows every complete line
    (one that ends with a newline), so afterwards it points past everything read for good.
    """
    with path.open("rb") as handle:
        number = cursor.line if cursor else 0
        if cursor and cursor.offset:
            handle.seek(cursor.offset)
        for raw, size in _bounded_lines(handle):
            number += 1
            complete = raw.endswith(b"\n") or size > len(raw)
            if cursor is not None and complete:
                cursor.offset += size
                cursor.line = number
            if size > len(raw):
                # Longer than any record we keep: skipped unread, memory stays bounded.
                yield number, None, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB (skipped)"
                continue
            if not raw.strip():
                continue
            try:
                yield number, parse_json(raw, "the line"), None
            except InvalidInput as exc:
                if not raw.endswith(b"\n") and "is not JSON" in exc.message:
                    yield number, None, "partial"
                else:
                    yield number, None, exc.message.removeprefix("the line is ")
        if cursor is not None:
            cursor.tail = _tail_digest(handle, cursor.offset)


# A transcript line is one record; one past this is not read into memory at all (a 200 MB
# one-line file costs a pass over its bytes in 1 MB reads, never 200 MB of memory).
MAX_LINE_BYTES = 8 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


def _bounded_lines(handle: Any) -> Iterator[tuple[bytes, int]]:
    """(line, its size in the file) for each line; a line longer than MAX_LINE_BYTES comes
    back as its first bytes with its full size (the rest is skipped unread into memory)."""
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        while True:
            chunk = handle.readline(_SKIP_CHUNK)
            size += len(chunk)
            if not chunk or chunk.endswith(b"\n"):
                break
        yield raw[:64], size


def parsed_lines(path: Path, cursor: ReadCursor | None = None
                 ) -> Iterator[tuple[int, Any, ImportLine | None]]:
    """(line number, object, None), or (line number, None, the ImportLine that reports the
    line: malformed, or skipped as still being written)."""
    for number, obj, error in read_lines(path, cursor):
        if error == "partial":
            yield number, None, ImportLine(number, skip="incomplete last line")
        elif error is not None:
            yield number, None, ImportLine(number, error=error)
        else:
            yield number, obj, None


def sniff(path: Path) -> str | None:
    """`claude-code`, `codex` or None (not a transcript we know) from the first lines."""
    votes = {"claude-code": 0, "codex": 0, "generic": 0}
    try:
        for _, obj, _error in _first(read_lines(path), SNIFF_LINES):
            if not isinstance(obj, dict):
                continue
            kind = obj.get("type")
            if "kind" in obj and "text" in obj:
                votes["generic"] += 1
            elif kind in CODEX_TYPES and "payload" in obj:
                votes["codex"] += 1
            elif kind in CLAUDE_TYPES and ({"sessionId", "message", "leafUuid", "uuid"} & set(obj)):
                votes["claude-code"] += 1
    except OSError:
        return None
    if votes["generic"]:
        return None
    best = max(("claude-code", "codex"), key=lambda a: votes[a])
    return best if votes[best] else None


def _first(items: Iterator[T], n: int) -> Iterator[T]:
    for count, item in enumerate(items):
        if count >= n:
            return
        yield item


def check_format(path: Path, expected: str) -> None:
    """Refuse a file that is clearly another agent's transcript, naming the right command."""
    found = sniff(path)
    if found and found != expected:
        raise InvalidInput(
            f"{path} looks like {AGENT_LABELS[found]}, not {AGENT_LABELS[expected]}; "
            f"import it with `agentstate import {found} {path}`")


CWD_LINES = 50  # the session's cwd is in its first records (Claude Code: every record)


def session_cwd(path: Path) -> str | None:
    """The working directory a transcript's session ran in, from its first lines only (a
    folder of thousands of other projects' sessions is sorted quickly)."""
    for _, obj, _error in _first(read_lines(path), CWD_LINES):
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("cwd"), str) and obj["cwd"]:
            return obj["cwd"]
        payload = obj.get("payload")
        if obj.get("type") in ("session_meta", "turn_context") and isinstance(payload, dict) \
                and isinstance(payload.get("cwd"), str) and payload["cwd"]:
            return payload["cwd"]
    return None


def transcript_files(path: Path) -> list[Path]:
    """The file itself, or every *.jsonl under a folder (sorted by path)."""
    if path.is_dir():
        return sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    return [path]
