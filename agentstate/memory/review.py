"""The review queue: memory versions that wait for the user's word.

A candidate (a claim without evidence) and a contested version (a rival value beside the
current one) are out of the default read set until someone confirms, rejects or forgets
them. Nothing else tells the user they are waiting, so `resume` (and the SessionStart pack
built from it) and `agentstate ui` ask this module how many there are.
"""

from __future__ import annotations

from agentstate.memory.status import MemoryStatus, status_in
from agentstate.store.db import Store
from agentstate.store.principals import Principal, acting

# In the order a person would deal with them: rivals of a fact in use first.
QUEUE_STATUSES: tuple[MemoryStatus, ...] = (MemoryStatus.CONTESTED, MemoryStatus.CANDIDATE)


def review_queue_counts(store: Store, principal: Principal | str
                        ) -> dict[str, int]:
    """Status → number of versions waiting, among the scopes `principal` may read (only
    statuses with at least one). One grouped query on the status column: cheap enough for
    every resume, which runs on every session start."""
    who = acting(store, principal)
    counts: dict[str, int] = {}
    for status, scope, n in store.conn.execute(
        f"SELECT status, scope, count(*) FROM memories WHERE {status_in(QUEUE_STATUSES)} "
        "GROUP BY status, scope"
    ):
        if who.can_read(scope):
            counts[status] = counts.get(status, 0) + n
    return {str(s): counts[s] for s in QUEUE_STATUSES if counts.get(s)}


def queue_mention(counts: dict[str, int]) -> str:
    """One line for a person: what waits and where to review it ('' when nothing does)."""
    if not counts:
        return ""
    parts = ", ".join(f"{n} {status}" for status, n in counts.items())
    return (f"memory review queue: {parts} waiting for the user's word "
            "(`agentstate ui` or `agentstate memory list --status candidate`)")
