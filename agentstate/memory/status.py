"""Memory statuses: the one definition of their names and of which of them are current.

`expired` is not here: it is derived at read time from `valid_until`, never stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Literal, TypeAlias


class MemoryStatus(StrEnum):
    """The stored status of a memory version (see `agentstate.memory.model`)."""

    ACTIVE = "active"
    CONTESTED = "contested"
    CANDIDATE = "candidate"
    QUARANTINED = "quarantined"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"


# A status as readers see it: the stored one, or `expired` when a current version's
# valid_until has passed. Never stored, so not a member: a value of this type that is not
# EXPIRED is a MemoryStatus member (a StrEnum, so it compares, hashes and prints as its
# string) — one column of values in the database, one spelling in --json.
EXPIRED: Literal["expired"] = "expired"
ShownStatus: TypeAlias = MemoryStatus | Literal["expired"]

STATUSES: tuple[MemoryStatus, ...] = tuple(MemoryStatus)
# The default read set: the current value of a chain and the rivals shown flagged beside it.
CURRENT_STATUSES: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE, MemoryStatus.CONTESTED)


def status_in(statuses: Iterable[str] = CURRENT_STATUSES, column: str = "status") -> str:
    """The SQL condition `status IN ('active', 'contested')` for `statuses`.

    The values are written into the SQL, so each must be a MemoryStatus (a ValueError
    otherwise): only these constants, never input, end up in a query this way."""
    values = ", ".join(f"'{MemoryStatus(s).value}'" for s in statuses)
    return f"{column} IN ({values})"
