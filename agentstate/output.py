"""One result envelope for every command.

Human output goes through rich (colour off with NO_COLOR or when piped); `--json` prints exactly
one object: {"ok": true, "command": ..., "data": ...} or
{"ok": false, "command": ..., "error": {"code": ..., "message": ...}}.
Diagnostics (warnings, progress) always go to stderr so stdout stays parseable.

rich is imported only when a rich console is asked for: importing it costs ~25 ms, a tenth of
the context command's whole budget, and plain lines (errors, `info`) do not need it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.lazy_re import LazyPattern

if TYPE_CHECKING:
    from rich.console import Console

ENVELOPE_VERSION = 1


# Characters that must never reach a terminal as they are: C0 controls except newline and
# tab (ESC starts colour, cursor and title sequences; NUL, BEL, backspace and a lone carriage
# return rewrite what the reader sees), DEL, C1 controls (0x9b is a one-byte CSI on some
# terminals), the bidirectional overrides and isolates (they reorder the text around them),
# line/paragraph separators, and lone surrogates (undecodable bytes; they cannot be encoded).
_INVISIBLE = re.compile(
    "\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029"
    "\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """Stored text made safe to show: every control character and escape-sequence byte is
    written out as `\\xNN` (or `\\uNNNN`), so `\\e[2J` is displayed as the six characters
    `\\x1b[2J` instead of clearing the screen. Newlines, tabs and CR LF are kept.

    The one rule for human output (every renderer's console applies it, and the context and
    resume packs are built with it); --json prints stored values exactly."""
    if not text or text.replace("\n", "").replace("\t", "").isprintable():
        # Every character the pattern escapes is unprintable to Python (a test checks all
        # code points), so a text with only printable characters, newlines and tabs has none:
        # checked in C, where the pattern's scan cost ~10 µs per pack candidate.
        return text
    return _INVISIBLE.sub(_escape, text)


def _safe_console(**options: Any) -> Console:
    """A rich console that shows stored text through `visible`: strings are escaped before
    rich measures them, and every segment once more on the way out (rich's own styling is
    applied after that, so colours still work)."""
    from rich.console import Console

    class SafeConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:
            return super().render_str(visible(text), **kwargs)

        def _render_buffer(self, buffer: Any) -> str:
            from rich.segment import Segment

            return super()._render_buffer(
                segment if segment.control else Segment(visible(segment.text), segment.style)
                for segment in buffer
            )

    return SafeConsole(**options)


# Markup is off: what we print is mostly stored user text (goals, memories, commands), and a
# "[/]" or "[bold]" in it must be shown as typed, not interpreted (or crash the renderer).
def stdout_console() -> Console:
    return _safe_console(soft_wrap=True, highlight=False, markup=False)


def stderr_console() -> Console:
    return _safe_console(stderr=True, soft_wrap=True, highlight=False, markup=False)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, paths and datetimes become plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        # Imports refuse NaN/Infinity now; a value stored before that is shown as text so
        # that --json output stays JSON.
        return str(value)
    return value


def envelope_ok(command: str, data: Any) -> dict[str, Any]:
    return {"ok": True, "version": ENVELOPE_VERSION, "command": command, "data": to_jsonable(data)}


def envelope_error(command: str, code: str, message: str,
                   details: dict[str, Any] | None = None) -> dict[str, Any]:
    error = {"code": code, "message": message}
    if details:
        error["details"] = to_jsonable(details)
    return {"ok": False, "version": ENVELOPE_VERSION, "command": command, "error": error}


# What JSON leaves raw but a terminal acts on: DEL, C1 controls (U+009B is a one-byte CSI),
# the bidi controls, line/paragraph separators, lone surrogates. Written as `\uNNNN`
# escapes, so a reader of the document still gets the stored value exactly. (C0 controls are
# escaped by json.dumps itself.) Compiled on first use: most commands print no JSON.
_JSON_RAW = LazyPattern("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")


def json_text(obj: Any, **options: Any) -> str:
    """`obj` as JSON text with no raw control character in it (see _JSON_RAW)."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, **options)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def print_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json_text(obj, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()


def shorten(text: str | None, width: int = 80) -> str:
    """One line of at most `width` characters: whitespace collapsed, an ellipsis if cut."""
    line = " ".join((text or "").split())
    return line if len(line) <= width else line[: width - 1] + "…"


def warn(message: str) -> None:
    from rich.text import Text

    stderr_console().print(Text.assemble(("warning:", "yellow"), " ", message))


def info(message: str) -> None:
    """A diagnostic line for humans; stderr so scripts reading stdout are not disturbed.

    Written without rich, through `visible`: the text is often stored user text."""
    sys.stderr.write(visible(message) + "\n")
    sys.stderr.flush()
