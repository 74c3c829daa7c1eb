"""The user's pinned preferences, ranked in SQL and read only as far as a reader needs.

`list_user_preferences` (memory.model) returns every live preference a principal reads, as
full records; with hundreds pinned, building and ranking them all cost every pack ~0.1 s
(issue 24). `ranked_user_preferences` answers the same question in the order the essentials
show it — the most specific scope first, then the newest (a later statement is the user's
current wish) — as light lines read lazily from one partial index (m042), with the total
from a count per scope, so a reader with a ceiling stops at what it can show and still
knows how many it left out. The full records are loaded for the chosen rows only.

Which scopes apply, and how specifically, is decided in Python once per distinct scope (a
principal's read patterns and a scope's match are fnmatch rules SQLite does not have); a
store has few distinct scopes however many preferences it holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from agentstate.memory.model import Memory, memories_from_rows
from agentstate.memory.scopes import scope_applies
from agentstate.memory.stored import select_versions
from agentstate.store.principals import Principal, acting
from agentstate.store.refs import make_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store

# The rows list_user_preferences keeps: stated by the user, active and not expired (an
# expiry passed is `expired`, derived, memory.model.effective_status: a non-empty
# valid_until at or before now). The first three terms are the partial index's (m042),
# named in each query: without statistics the planner takes the (status, created) index,
# which also reads in created order but walks every active memory (21 ms instead of 1.3 ms
# beside 9,000 facts); every store has the index, migrations run when a store is opened.
_FROM = "memories INDEXED BY memories_user_preferences"
_LIVE = ("kind = 'preference' AND source = 'user' AND status = 'active' "
         "AND (valid_until IS NULL OR valid_until = '' OR valid_until > ?)")


class PreferenceLine(NamedTuple):
    """What a preference's pinned line is made of, read without building its record."""

    row: int
    id: str
    version: int
    scope: str
    text: str

    @property
    def ref(self) -> str:
        return make_ref("mem", self.id, self.version)


@dataclass
class RankedPreferences:
    """The live preferences `principal` reads in a context: how many, and a lazy read of
    them in rank order."""

    store: Store
    levels: list[tuple[float, list[str]]]  # specificity, most specific first → its scopes
    total: int
    now: str

    def lines(self) -> Iterator[PreferenceLine]:
        """Every line in rank order, read from the index as the caller asks for more; a
        caller that stops early reads no further rows."""
        for _weight, scopes in self.levels:
            cursor = self.store.conn.execute(
                f"SELECT row, id, version, scope, text FROM {_FROM} WHERE {_LIVE} "
                "AND scope IN (SELECT value FROM json_each(?)) ORDER BY created DESC, row DESC",
                (self.now, json.dumps(scopes)))
            try:
                for values in cursor:
                    yield PreferenceLine(*values)
            finally:
                cursor.close()

    def memories(self, rows: list[int]) -> list[Memory]:
        """The full records of `rows`, in that order (evidence loaded, status derived)."""
        if not rows:
            return []
        found = {m.row: m for m in memories_from_rows(self.store, select_versions(
            self.store, "WHERE row IN (SELECT value FROM json_each(?))", (json.dumps(rows),)))}
        return [found[r] for r in rows]


def ranked_user_preferences(store: Store, principal: Principal | str,
                            context: dict[str, Any] | None = None) -> RankedPreferences:
    """The preferences `list_user_preferences` returns, ranked: the most specific scope for
    `context` first, then the newest (created, then row, descending)."""
    who = acting(store, principal)
    now = store.now()
    by_weight: dict[float, list[str]] = {}
    total = 0
    for scope, n in store.conn.execute(
            f"SELECT scope, COUNT(*) FROM {_FROM} WHERE {_LIVE} GROUP BY scope", (now,)):
        if not who.can_read(scope):
            continue
        weight = scope_applies(scope, context)
        if weight is None:
            continue
        by_weight.setdefault(weight, []).append(scope)
        total += n
    levels = sorted(by_weight.items(), key=lambda level: -level[0])
    return RankedPreferences(store, levels, total, now)


def next_expiry(store: Store, now: str) -> str | None:
    """The earliest expiry after `now` among the live preferences: until then, which
    preferences are live changes only with a write (what a process keeps of them holds
    until this time, or until a memory changes). None when none expires."""
    until: str | None = store.conn.execute(
        f"SELECT min(valid_until) FROM {_FROM} WHERE {_LIVE} AND valid_until > ?",
        (now, now)).fetchone()[0]
    return until
