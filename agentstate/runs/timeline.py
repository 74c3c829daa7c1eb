"""A run's timeline one page at a time (`agentstate ui`'s Runs page).

`list_events` returns a whole run or its newest N; a page of a 100,000-event run must cost the
same as a page of a ten-event one. Pages are keyed by `seq` (newest first): `before=SEQ`
reads the next older page through the (run, kind, seq) index, never an OFFSET that walks
every row before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentstate.errors import InvalidInput
from agentstate.runs.event_sql import RUN_ROW, event_columns
from agentstate.runs.log import get_run
from agentstate.runs.records import EVENT_KINDS, Event, row_to_event
from agentstate.store.db import Store

PAGE_SIZE = 100
MAX_PAGE = 500
# The session filter offers the sessions seen among this many newest events: listing every
# distinct session of a long run would parse every event's meta on each page view.
SESSIONS_SCANNED = 2_000
# The same expression as the events_hook_* indexes (meta that is not valid JSON has none).
_SESSION = "(CASE WHEN json_valid(meta) THEN json_extract(meta, '$.session') END)"


@dataclass
class EventPage:
    run: str
    events: list[Event]             # newest first
    older: int | None               # `before` for the next older page, None at the start
    newer: int | None               # `before` for the next newer page (0: the newest page)
    sessions: list[str] = field(default_factory=list)


def event_page(store: Store, run_ref: str, *, kind: str | None = None,
               session: str | None = None, before: int | None = None,
               limit: int = PAGE_SIZE) -> EventPage:
    """Up to `limit` events of a run with seq below `before` (all when None), newest first,
    optionally of one kind and/or one agent session (meta `session`)."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"a page holds 1 to {MAX_PAGE} events, not {limit}")
    if kind and kind not in EVENT_KINDS:
        raise InvalidInput(f"unknown event kind {kind!r}")
    run = get_run(store, run_ref)
    where = [f"run = {RUN_ROW}"]
    params: list[str | int] = [run.id]
    if kind:
        where.append("kind = ?")
        params.append(kind)
    if session:
        where.append(f"{_SESSION} = ?")
        params.append(session)
    cond = " AND ".join(where)
    page_where = cond + (" AND seq < ?" if before else "")
    rows = store.rows(f"SELECT {event_columns()} FROM events WHERE {page_where} "
                      "ORDER BY seq DESC LIMIT ?",
                      [*params, *([before] if before else []), limit + 1])
    events = [row_to_event(r) for r in rows[:limit]]
    older = events[-1].seq if len(rows) > limit and events else None
    newer = None
    if before and events:
        # The page above this one is the `limit` matching events just above it: it reads
        # below the highest of them plus one (none that high: it is the newest page).
        above = store.conn.execute(
            f"SELECT seq FROM events WHERE {cond} AND seq > ? ORDER BY seq ASC LIMIT 1 "
            f"OFFSET ?", [*params, events[0].seq, limit - 1]).fetchone()
        newer = above[0] + 1 if above else 0
    sessions = [r[0] for r in store.conn.execute(
        f"SELECT DISTINCT s FROM (SELECT {_SESSION} AS s FROM events WHERE run = {RUN_ROW} "
        f"ORDER BY seq DESC LIMIT ?) WHERE s IS NOT NULL ORDER BY s", (run.id, SESSIONS_SCANNED))]
    return EventPage(run=run.ref, events=events, older=older, newer=newer, sessions=sessions)
