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
import sys
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

ENVELOPE_VERSION = 1


# Markup is off: what we print is mostly stored user text (goals, memories, commands), and a
# "[/]" or "[bold]" in it must be shown as typed, not interpreted (or crash the renderer).
def stdout_console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=True, highlight=False, markup=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False, markup=False)


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
    return value


def envelope_ok(command: str, data: Any) -> dict:
    return {"ok": True, "version": ENVELOPE_VERSION, "command": command, "data": to_jsonable(data)}


def envelope_error(command: str, code: str, message: str, details: dict | None = None) -> dict:
    error = {"code": code, "message": message}
    if details:
        error["details"] = to_jsonable(details)
    return {"ok": False, "version": ENVELOPE_VERSION, "command": command, "error": error}


def print_json(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n")
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

    Written as is (no rich): the text is often stored user text, shown exactly as typed."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
