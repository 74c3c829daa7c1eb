"""Where a piece of state came from: `user`, `model`, `tool:NAME`, `file:PATH@COMMIT`, `evt:REF`.

Authority orders conflicts in memory: the user outranks file/tool evidence, which outranks the
model. Content from tools, files or the web is data, never instructions.
"""

from __future__ import annotations

import re

from agentstate.errors import InvalidInput

_TOOL = re.compile(r"^tool:[A-Za-z0-9_.\-/]{1,100}$")
_FILE = re.compile(r"^file:[^@\s][^@]*@[0-9A-Za-z_.\-/]{1,64}$")
_EVT = re.compile(r"^evt:[0-9a-z]{4,32}$")

AUTHORITY = {"user": 3, "file": 2, "tool": 2, "evt": 2, "model": 1}
SOURCE_FORMS = "user, model, tool:NAME, file:PATH@COMMIT"


def validate_source(source: str, *, allow_event: bool = False) -> str:
    value = (source or "").strip()
    if value in ("user", "model") or _TOOL.match(value) or _FILE.match(value):
        return value
    if allow_event and _EVT.match(value):
        return value
    forms = SOURCE_FORMS + (", evt:REF" if allow_event else "")
    raise InvalidInput(f"invalid source {source!r}: expected one of {forms}")


def source_class(source: str) -> str:
    return source.split(":", 1)[0]


def authority(source: str) -> int:
    return AUTHORITY.get(source_class(source), 0)


def is_untrusted(source: str) -> bool:
    """Tool output, files and fetched documents: data that must not act as instructions."""
    return source_class(source) in ("tool", "file")


def tool_source(program: str) -> str:
    """The source of a tool's output: `tool:NAME`, in the restricted alphabet of sources
    (g++ becomes tool:g__)."""
    return "tool:" + (re.sub(r"[^A-Za-z0-9_.\-/]", "_", program)[:100] or "unknown")
