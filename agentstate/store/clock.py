"""The one clock and the one id source.

Both are objects handed to the Store, so the Python API can inject them directly; the CLI
builds them from the environment so subprocess tests can fix them too:
  AGENTSTATE_NOW=2026-01-01T00:00:00Z   freeze the clock at that instant
  AGENTSTATE_ID_SEED=42                  make ids deterministic
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput

if TYPE_CHECKING:
    import random

# Crockford-style base32 without ambiguous letters: easy to read aloud and type.
_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
ID_LENGTH = 10


def format_ts(moment: datetime) -> str:
    """Stored timestamps: UTC, ISO 8601, microseconds, 'Z' suffix; they sort as text."""
    utc = moment.astimezone(UTC)
    if utc.year < 1000:  # strftime writes such a year unpadded; kept as it always was
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # The same text as strftime's, in about half the time: an import formats each line's.
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"


def parse_ts(text: str) -> datetime:
    """Accepts stored timestamps and user input (date, or date-time with offset or Z)."""
    raw = text.strip()
    if raw.endswith("Z"):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise InvalidInput(f"not an ISO 8601 date or time: {text!r}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


@dataclass
class Clock:
    """Wall clock, or a frozen/stepping one for tests (`fixed`, advanced by `advance`)."""

    fixed: datetime | None = None

    def now(self) -> datetime:
        return self.fixed if self.fixed is not None else datetime.now(UTC)

    def now_ts(self) -> str:
        return format_ts(self.now())

    def advance(self, delta: timedelta) -> None:
        if self.fixed is None:
            raise RuntimeError("only a fixed clock can be advanced")
        self.fixed = self.fixed + delta


@dataclass
class IdSource:
    """Random short ids; seeded for tests."""

    seed: int | None = None
    _rng: random.Random | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.seed is not None:
            import random  # only for seeded ids (tests): every hook opens a store with ids

            self._rng = random.Random(self.seed)

    def new(self) -> str:
        if self._rng is not None:
            return "".join(self._rng.choice(_ALPHABET) for _ in range(ID_LENGTH))
        # One urandom call per id (not one per character): bulk imports create thousands.
        # 32 divides 256, so `byte & 31` is uniform over the alphabet. os.urandom is what
        # secrets.token_bytes calls; importing `secrets` (hmac, hashlib) cost every hook.
        # Each byte mapped by one translate (a third of a join over the bytes: a first sync
        # import draws an id a chain, issue 24).
        return os.urandom(ID_LENGTH).translate(_BY_BYTE).decode("ascii")


# Byte b → `_ALPHABET[b & 31]`, as a table for bytes.translate.
_BY_BYTE = bytes(ord(_ALPHABET[b & 31]) for b in range(256))


def clock_from_env() -> Clock:
    value = os.environ.get("AGENTSTATE_NOW")
    if not value:
        return Clock()
    try:
        return Clock(parse_ts(value))
    except InvalidInput as exc:  # say where the bad time came from
        raise InvalidInput(f"AGENTSTATE_NOW: {exc.message}") from exc


def ids_from_env() -> IdSource:
    value = os.environ.get("AGENTSTATE_ID_SEED")
    if value is None:
        return IdSource()
    try:
        return IdSource(int(value))
    except ValueError as exc:
        raise InvalidInput(f"AGENTSTATE_ID_SEED must be an integer, got {value!r}") from exc
