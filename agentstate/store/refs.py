"""Typed refs: `run:…`, `evt:…`, `mem:…[@vN]`, `pack:…`, `skill:name[@vN]`.

A ref is what a person types and what every output prints. Parsing is strict so a typo is
reported as a malformed ref rather than as "not found".
"""

from __future__ import annotations

from dataclasses import dataclass

from agentstate.errors import InvalidInput, a_or_an
from agentstate.lazy_re import LazyPattern

KINDS = ("run", "evt", "mem", "pack", "skill")

_ID = r"[0-9a-z]{4,32}"
_SKILL = r"[a-z0-9]+(?:-[a-z0-9]+)*"
_PATTERNS = {
    "run": LazyPattern(rf"^run:({_ID})$"),
    "evt": LazyPattern(rf"^evt:({_ID})$"),
    "mem": LazyPattern(rf"^mem:({_ID})(?:@v([1-9][0-9]*))?$"),
    "pack": LazyPattern(rf"^pack:({_ID})$"),
    "skill": LazyPattern(rf"^skill:({_SKILL})(?:@v([1-9][0-9]*))?$"),
}


@dataclass(frozen=True)
class Ref:
    kind: str
    id: str
    version: int | None = None

    def __str__(self) -> str:
        base = f"{self.kind}:{self.id}"
        return f"{base}@v{self.version}" if self.version is not None else base


def parse_ref(text: str, *, expect: str | tuple[str, ...] | None = None) -> Ref:
    """Parse a ref, optionally requiring one of the given kinds."""
    raw = (text or "").strip()
    kind = raw.split(":", 1)[0] if ":" in raw else ""
    allowed = (expect,) if isinstance(expect, str) else expect
    if kind not in _PATTERNS:
        wanted = " or ".join(f"{k}:…" for k in (allowed or KINDS))
        raise InvalidInput(f"malformed ref {text!r}: expected {wanted}")
    if allowed and kind not in allowed:
        wanted = " or ".join(f"{k}:…" for k in allowed)
        raise InvalidInput(f"ref {text!r} is {a_or_an(kind)} ref; expected {wanted}")
    match = _PATTERNS[kind].match(raw)
    if not match:
        raise InvalidInput(f"malformed ref {text!r}")
    version = match.group(2) if match.lastindex and match.lastindex >= 2 else None
    return Ref(kind, match.group(1), int(version) if version else None)


# An event by its place in its run: `run:ID#N` is the run's Nth event (its seq). A pack's
# evidence labels an event `#N` under its run's group header: ~5 tokens against ~12 for
# `evt:ID`, and as exact — a run's seq never changes and names one event.
_POSITION = LazyPattern(rf"^run:({_ID})#([0-9]{{1,9}})$")


def parse_position(text: str) -> tuple[str, int] | None:
    """(run id, seq) of a `run:ID#N` ref, or None when `text` is not one."""
    match = _POSITION.match((text or "").strip())
    return None if match is None else (match.group(1), int(match.group(2)))


def make_ref(kind: str, ident: str, version: int | None = None) -> str:
    return str(Ref(kind, ident, version))
