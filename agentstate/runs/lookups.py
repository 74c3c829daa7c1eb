"""Read-only lookups on `runs` and `events` that other domains ask for.

Context packs (trajectory, neighbours of search hits, stale evidence), `trace`, memory scopes
and skill acceptance tests need facts about runs and events; they call these functions
instead of naming the tables, so the run log's schema has one owner. Each answers in one
query (or one per chunk of ids, as the callers did) with plain values or `EventLine`s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from agentstate.runs.event_sql import RUN_ROW, event_columns, run_id_of
from agentstate.runs.records import Event, row_to_event

if TYPE_CHECKING:
    from agentstate.store.db import Store

# SQLite binds at most 32766 variables; lists of ids are sent in chunks well below that.
IDS_PER_QUERY = 500
PAIRS_PER_QUERY = 400


class EventLine(NamedTuple):
    """One event as packs show it (no meta, no links). A NamedTuple rather than a dataclass:
    a pack reads thousands of these and a tuple is built several times faster."""

    id: str
    run: str       # the run's id (not its `run:` ref)
    seq: int
    kind: str
    text: str
    source: str
    ts: str


_LINE_COLUMNS = f"id, {run_id_of('events')}, seq, kind, text, source, ts"


def find_event(store: Store, event_id: str) -> Event | None:
    """The event with this id (no `evt:` prefix), or None when there is none (purged, or a
    ref from another store)."""
    row = store.row(f"SELECT {event_columns()} FROM events WHERE id = ?", (event_id,))
    return None if row is None else row_to_event(row)


def event_id_at(store: Store, run_id: str, seq: int) -> str | None:
    """The id of the run's event at `seq` (a `run:ID#N` ref), or None when there is none."""
    return store.value(f"SELECT id FROM events WHERE run = {RUN_ROW} AND seq = ?",
                       (run_id, seq))


def run_exists(store: Store, run_id: str) -> bool:
    return store.value("SELECT 1 FROM runs WHERE id = ?", (run_id,)) is not None


def run_goal(store: Store, run_id: str) -> str | None:
    """The run's goal, or None when there is no such run."""
    return store.value("SELECT goal FROM runs WHERE id = ?", (run_id,))


def run_of_event(store: Store, event_id: str) -> str | None:
    """The id of the run the event belongs to, or None when there is no such event."""
    return store.value(f"SELECT {run_id_of('events')} FROM events WHERE id = ?", (event_id,))


def event_ids_of_run(store: Store, run_id: str) -> list[str]:
    """Every event id of the run, in log order."""
    return [r[0] for r in store.conn.execute(
        f"SELECT id FROM events WHERE run = {RUN_ROW} ORDER BY seq", (run_id,))]


def newest_events(store: Store, run_id: str, window: int) -> tuple[list[EventLine], int]:
    """The run's newest `window` events (newest first) and how many older ones it has."""
    conn = store.conn
    if window <= 0:
        total = conn.execute(f"SELECT count(*) FROM events WHERE run = {RUN_ROW}",
                             (run_id,)).fetchone()[0]
        return [], total
    rows = [EventLine._make(r) for r in conn.execute(
        f"SELECT {_LINE_COLUMNS} FROM events WHERE run = {RUN_ROW} ORDER BY seq DESC LIMIT ?",
        (run_id, window),
    )]
    older = 0
    if len(rows) == window:
        older = conn.execute(f"SELECT count(*) FROM events WHERE run = {RUN_ROW} AND seq < ?",
                             (run_id, rows[-1].seq)).fetchone()[0]
    return rows, older


def event_positions(store: Store, event_ids: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Event id → (run id, seq) for the ids that exist."""
    where: dict[str, tuple[str, int]] = {}
    for start in range(0, len(event_ids), IDS_PER_QUERY):
        part = list(event_ids[start:start + IDS_PER_QUERY])
        marks = ",".join("?" * len(part))
        for eid, run, seq in store.conn.execute(
            f"SELECT id, {run_id_of('events')}, seq FROM events WHERE id IN ({marks})", part
        ):
            where[eid] = (run, seq)
    return where


def events_at(store: Store, positions: Sequence[tuple[str, int]]) -> list[EventLine]:
    """The events at these (run id, seq) positions (positions with no event are skipped)."""
    out: list[EventLine] = []
    for start in range(0, len(positions), PAIRS_PER_QUERY):
        part = positions[start:start + PAIRS_PER_QUERY]
        pairs = ",".join("(?, ?)" for _ in part)
        flat = [v for key in part for v in key]
        out += map(EventLine._make, store.conn.execute(
            f"WITH wanted(run, seq) AS (VALUES {pairs}) "
            "SELECT e.id, w.run, e.seq, e.kind, e.text, e.source, e.ts FROM wanted w "
            "JOIN runs r ON r.id = w.run JOIN events e ON e.run = r.row AND e.seq = w.seq",
            flat,
        ))
    return out


def superseded_among(store: Store, event_ids: Sequence[str]) -> set[str]:
    """The ids among `event_ids` that a later event supersedes (a correction replaced them)."""
    return _pointed_at(store, "supersedes", event_ids)


def resolved_among(store: Store, event_ids: Sequence[str]) -> set[str]:
    """The ids among `event_ids` that a later event resolves (answered, verified, settled)."""
    return _pointed_at(store, "resolves", event_ids)


def _pointed_at(store: Store, link: str, event_ids: Sequence[str]) -> set[str]:
    if not event_ids:
        return set()
    marks = ",".join("?" * len(event_ids))
    return {r[0] for r in store.conn.execute(
        f"SELECT {link} FROM events WHERE {link} IN ({marks})", list(event_ids))}


def first_superseding_event(store: Store, event_id: str) -> str | None:
    """The id of the earliest event that supersedes this one, if any."""
    return store.value(
        "SELECT id FROM events WHERE supersedes = ? ORDER BY ts LIMIT 1", (event_id,))


def resolving_events(store: Store, event_id: str, *, limit: int) -> list[str]:
    """Ids of the events that resolve this one, oldest first, at most `limit`."""
    return [r[0] for r in store.conn.execute(
        "SELECT id FROM events WHERE resolves = ? ORDER BY ts, seq LIMIT ?", (event_id, limit))]


def _meta_key(key: str) -> str:
    """A meta field as m004's indexes compute it: NULL where the stored meta is not valid
    JSON (a NaN written by an older version), so such a row neither breaks a write nor a
    migration, and never matches. Queries must spell it the same way to use the index."""
    return f"(CASE WHEN json_valid(meta) THEN json_extract(meta, '$.{key}') END)"


HOOK_CALL_SQL = (f"SELECT id FROM events WHERE {_meta_key('session')} = ? "
                 f"AND {_meta_key('tool_use_id')} = ? AND {_meta_key('hook')} IS NOT NULL LIMIT 1")
HOOK_PROMPT_SQL = (f"SELECT id FROM events WHERE {_meta_key('session')} = ? "
                   f"AND {_meta_key('prompt_key')} = ? AND {_meta_key('hook')} IS NOT NULL "
                   "LIMIT 1")


def hook_logged_call(store: Store, session: str, call_id: str) -> str | None:
    """The id of the event a hook recorded for this session's tool call, if any (an indexed
    look-up: m004's events_hook_call)."""
    return store.value(HOOK_CALL_SQL, (session, call_id))


def hook_logged_prompt(store: Store, session: str, prompt_key: str) -> str | None:
    """The id of the event a hook recorded for this session's prompt (by its prompt key),
    if any (an indexed look-up: m004's events_hook_prompt)."""
    return store.value(HOOK_PROMPT_SQL, (session, prompt_key))


def active_run_ids(store: Store, limit: int) -> list[str]:
    """Ids of active runs, the most recently updated first (resume names them when there is
    no current run)."""
    return [r["id"] for r in store.rows(
        "SELECT id FROM runs WHERE status = 'active' ORDER BY updated DESC, rowid DESC "
        "LIMIT ?", (limit,))]


def newest_live_events(store: Store, run_id: str, skip_kinds: Sequence[str],
                       window: int) -> list[tuple[str, str, str, str, str | None]]:
    """The run's newest events, newest first, as (id, kind, ts, text, meta) — leaving out
    `skip_kinds`, events whose body `gc` collected and events a later one supersedes (the
    resume pack's "relevant recent events" pick from these)."""
    marks = ",".join("?" * len(skip_kinds))
    return store.conn.execute(
        f"SELECT e.id, e.kind, e.ts, e.text, e.meta FROM events e WHERE e.run = {RUN_ROW} "
        f"AND e.kind NOT IN ({marks}) AND e.collected_at IS NULL AND NOT EXISTS "
        f"(SELECT 1 FROM events s WHERE s.supersedes = e.id) ORDER BY e.seq DESC LIMIT ?",
        (run_id, *skip_kinds, window),
    ).fetchall()
