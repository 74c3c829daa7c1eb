"""Runs and their append-only events: the core of the run log.

Events are never updated in place. Resolution (an answer to a question, a verified/failed to
a verify) and correction (`supersedes`) are new events that point at old ones.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentstate.errors import InvalidInput, NotFound, a_or_an
from agentstate.runs.event_sql import RUN_ROW, event_columns
from agentstate.runs.records import (
    EVENT_KINDS,
    MAX_EVENT_CHARS,
    RESOLVES,
    USER_KINDS,
    Event,
    Run,
    row_to_event,
    row_to_run,
)
from agentstate.runs.status import END_STATUSES, RUN_STATUSES, RunStatus
from agentstate.runs.worktree import WorkTree
from agentstate.store.db import Store
from agentstate.store.limits import (
    MAX_CONSTRAINT_CHARS,
    MAX_GOAL_CHARS,
    MAX_NAME_CHARS,
    check_length,
    check_text,
    compact_meta,
)
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref, parse_ref
from agentstate.store.sources import validate_source

# ---------------------------------------------------------------- runs


def get_run(store: Store, ref: str) -> Run:
    parsed = parse_ref(ref, expect="run")
    row = store.row("SELECT * FROM runs WHERE id = ?", (parsed.id,))
    if row is None:
        raise NotFound(f"no run {ref}")
    return row_to_run(row)


def current_run(store: Store) -> Run | None:
    """The run commands use without --run: the run last made current, while it is active.

    One rule for every command (CLI, hooks, imports, MCP, git hooks): `run start` (and an
    import or a session hook that starts a run) makes a run current; it stays current until
    it ends, and then there is no current run until the next start. Another active run never
    takes over by itself: a second `run end` (or a `log`) must not land on a run the user did
    not name. Only a store where no run was ever made current falls back to the newest active
    run (a store whose runs all came from before the marker existed).
    """
    row = store.row("SELECT value FROM kv WHERE key = 'current_run'")
    if row is not None:
        # NULL: older versions cleared the marker when its run ended; that is "ended" too.
        if not row["value"]:
            return None
        run = store.row("SELECT * FROM runs WHERE id = ? AND status = 'active'", (row["value"],))
        return row_to_run(run) if run else None
    run = store.row(
        "SELECT * FROM runs WHERE status = 'active' ORDER BY updated DESC, rowid DESC LIMIT 1")
    return row_to_run(run) if run else None


def resolve_run(store: Store, ref: str | None) -> Run:
    """The named run, or the current one; a clear error when there is none."""
    if ref:
        return get_run(store, ref)
    run = current_run(store)
    if run is None:
        last = store.row("SELECT id, status FROM runs ORDER BY updated DESC, rowid DESC "
                           "LIMIT 1")
        ended = f" (the most recent, {make_ref('run', last['id'])}, is {last['status']})" \
            if last else ""
        active = [make_ref("run", r["id"]) for r in store.rows(
            "SELECT id FROM runs WHERE status = 'active' ORDER BY updated DESC, rowid DESC "
            "LIMIT 4")]
        others = ""
        if active:
            shown = ", ".join(active[:3]) + (", …" if len(active) > 3 else "")
            others = f"; still active, not current: {shown}"
        raise NotFound(f"no active run{ended}{others}; start one with `agentstate run start "
                       f"GOAL` or pass the run's ref")
    return run


def run_to_read(store: Store, ref: str | None) -> tuple[Run, bool]:
    """The run a read command shows: the named one, else the current one, else the most
    recently updated run of any status. The flag says the last case happened (the caller
    says so: after `run end` there is no current run, but its events are still wanted)."""
    if ref or current_run(store) is not None:
        return resolve_run(store, ref), False
    row = store.row("SELECT * FROM runs ORDER BY updated DESC, rowid DESC LIMIT 1")
    if row is None:
        raise NotFound("no runs yet; start one with `agentstate run start GOAL`")
    return row_to_run(row), True


def start_run(
    store: Store,
    goal: str,
    constraints: list[str] | None = None,
    *,
    worktree: WorkTree | None = None,
    source: str = "user",
    claimed_by: Principal | None = None,
    make_current: bool = True,
) -> tuple[Run, list[Event]]:
    """Create a run (and its constraint events) in one transaction; make it current (unless
    `make_current` is False: a transcript import must not move the run the user works in).

    With `claimed_by`, the principal must be allowed to claim `source` (an agent's principal
    cannot record constraints with the user's authority).
    """
    if claimed_by is not None:
        claimed_by.check_claim(validate_source(source))
    goal = (goal or "").strip()
    if not goal:
        raise InvalidInput("the goal is empty")
    check_length(goal, MAX_GOAL_CHARS, "the goal")
    check_text(goal, "the goal")
    from agentstate.safety import refuse_secrets  # here: its patterns compile slowly

    refuse_secrets(goal, "the goal")
    constraint_texts = [c.strip() for c in constraints or []]
    if any(not c for c in constraint_texts):
        raise InvalidInput("a constraint is empty")
    for text in constraint_texts:
        check_length(text, MAX_CONSTRAINT_CHARS, "a constraint")
    for text in constraint_texts:
        refuse_secrets(text, "a constraint")
    tree = worktree or WorkTree()
    run_id = store.new_id()
    now = store.now()
    with store.transaction():
        store.insert(
            "runs",
            {
                "id": run_id,
                "goal": goal,
                "status": RunStatus.ACTIVE.value,
                "created": now,
                "updated": now,
                "ended": None,
                "branch": tree.branch,
                "head": tree.head,
                "dirty_fingerprint": tree.dirty_fingerprint,
                "dirty_files": json.dumps(list(tree.dirty_files)),
            }
        )
        if make_current:
            _set_current(store, run_id)
        events = [
            append_event(store, make_ref("run", run_id), "constraint", text, source=source)
            for text in constraint_texts
        ]
    return get_run(store, make_ref("run", run_id)), events


def set_current_run(store: Store, ref: str) -> Run:
    """Make an active run the current one (what commands use without --run)."""
    run = get_run(store, ref)
    if run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} has ended ({run.status}); only an active run can be current")
    with store.transaction():
        _set_current(store, run.id)
    return run


def _set_current(store: Store, run_id: str | None) -> None:
    store.conn.execute(
        "INSERT INTO kv (key, value) VALUES ('current_run', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (run_id,),
    )


def end_run(store: Store, ref: str, status: str) -> Run:
    if status not in END_STATUSES:
        raise InvalidInput(f"invalid status {status!r}: expected done or abandoned")
    run = get_run(store, ref)
    if run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} already ended ({run.status} at {run.ended})")
    now = store.now()
    with store.transaction() as conn:
        # The current-run marker keeps naming the ended run: "there is no current run" until
        # the next start (see current_run), rather than another active run taking over.
        conn.execute(
            "UPDATE runs SET status = ?, ended = ?, updated = ? WHERE id = ?",
            (status, now, now, run.id),
        )
    return get_run(store, run.ref)


# SQLite integers are 64-bit; a larger --limit means "no limit", not an OverflowError.
SQLITE_MAX_INT = 2**63 - 1


def list_runs(store: Store, status: str | None = None, limit: int | None = None) -> list[Run]:
    sql = "SELECT * FROM runs"
    params: list[Any] = []
    if status:
        if status not in RUN_STATUSES:
            raise InvalidInput(f"invalid status {status!r}: expected {', '.join(RUN_STATUSES)}")
        sql += " WHERE status = ?"
        params.append(status)
    sql += " ORDER BY created DESC, rowid DESC"
    if limit:
        sql += " LIMIT ?"
        params.append(min(limit, SQLITE_MAX_INT))
    return [row_to_run(r) for r in store.rows(sql, params)]


def update_run_worktree(store: Store, run: Run, worktree: WorkTree) -> None:
    store.conn.execute(
        "UPDATE runs SET branch = ?, head = ?, dirty_fingerprint = ?, dirty_files = ? "
        "WHERE id = ?",
        (
            worktree.branch,
            worktree.head,
            worktree.dirty_fingerprint,
            json.dumps(list(worktree.dirty_files)),
            run.id,
        ),
    )


# ---------------------------------------------------------------- events


def get_event(store: Store, ref: str) -> Event:
    parsed = parse_ref(ref, expect="evt")
    row = store.row(f"SELECT {event_columns()} FROM events WHERE id = ?", (parsed.id,))
    if row is None:
        raise NotFound(f"no event {ref}")
    return row_to_event(row)


def event_exists(store: Store, ref: str) -> bool:
    parsed = parse_ref(ref, expect="evt")
    return store.row("SELECT 1 AS x FROM events WHERE id = ?", (parsed.id,)) is not None


def validate_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise InvalidInput("meta must be an object of keys and values")
    return meta


def append_event(
    store: Store,
    run_ref: str | None,
    kind: str,
    text: str,
    *,
    source: str = "user",
    meta: dict[str, Any] | None = None,
    resolves: str | None = None,
    supersedes: str | None = None,
    ts: str | None = None,
    import_key: str | None = None,
    allow_system_kinds: bool = False,
    claimed_by: Principal | None = None,
    scanned: bool = False,
) -> Event:
    """Validate and append one event to a run (the current run when run_ref is None).

    Returns the stored event. With `import_key`, an event already imported under that key is
    returned unchanged instead of being added twice. With `claimed_by`, the principal must be
    allowed to claim `source` (Refused otherwise). `scanned`: the caller has already run the
    secret scanner on this text and meta (imports scan outside their write transaction).
    """
    with store.transaction():
        event_id, _ = insert_event(
            store, run_ref, kind, text, source=source, meta=meta, resolves=resolves,
            supersedes=supersedes, ts=ts, import_key=import_key,
            allow_system_kinds=allow_system_kinds, claimed_by=claimed_by, scanned=scanned)
    return get_event(store, make_ref("evt", event_id))


def insert_event(
    store: Store,
    run: Run | str | None,
    kind: str,
    text: str,
    *,
    source: str = "user",
    meta: dict[str, Any] | None = None,
    resolves: str | None = None,
    supersedes: str | None = None,
    ts: str | None = None,
    import_key: str | None = None,
    allow_system_kinds: bool = False,
    claimed_by: Principal | None = None,
    scanned: bool = False,
    key_by_index: bool = False,
    touch_run: bool = True,
    meta_json: str | None = None,
) -> tuple[str, bool]:
    """append_event's checks and write inside the caller's write transaction, for a run
    already read (or its ref, None for the current run, read after the checks); the event's
    id, and whether it is new (an event already imported under `import_key` keeps its id).

    For a bulk import, which writes many events in one transaction: `key_by_index`, no look-up
    of the import key before the insert (the caller did one before the transaction): the
    unique index on (run, import_key) refuses a second one, and only then is it looked up;
    `touch_run` False, the caller updates the run's time once for all of them. An import's
    record then costs three statements (the key, the next seq, the insert) instead of ten.
    `meta_json`: `meta` as compact_meta made it from the record the caller checked, so the
    meta is neither walked nor serialised again."""
    allowed = EVENT_KINDS if allow_system_kinds else set(USER_KINDS)
    if kind not in allowed:
        expected = ", ".join(sorted(allowed))
        raise InvalidInput(f"unknown event kind {kind!r}: expected one of {expected}")
    text = (text or "").strip()
    if not text:
        raise InvalidInput("the event text is empty")
    check_length(text, MAX_CONSTRAINT_CHARS if kind == "constraint" else MAX_EVENT_CHARS,
                 f"the {kind} text")
    check_text(text, "the event text")
    source = validate_source(check_length(source, MAX_NAME_CHARS, "the source"))
    if claimed_by is not None:
        claimed_by.check_claim(source)
    if meta_json is None:
        meta = validate_meta(meta)
        meta_json = compact_meta(meta, "the event meta")
    if not scanned:
        # here: its patterns compile slowly
        from agentstate.safety import refuse_secrets, refuse_secrets_in_meta

        refuse_secrets(text, "the event text")
        refuse_secrets_in_meta(meta or {}, meta_json, "the event meta")
    if not isinstance(run, Run):
        run = resolve_run(store, run)
    if run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} has ended ({run.status}); start or name an active run")
    resolves_id = _check_link(store, run, kind, resolves, "resolves")
    supersedes_id = _check_link(store, run, kind, supersedes, "supersedes")
    conn = store.conn
    if import_key is not None and not key_by_index:
        existing = _imported(store, run, import_key)
        if existing:
            return existing, False
    seq_row = conn.execute(
        f"SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE run = {RUN_ROW}", (run.id,)
    ).fetchone()
    event_id = store.new_id()
    now = store.now()
    try:
        conn.execute(
            "INSERT INTO events (id, run, seq, kind, text, source, ts, meta, resolves,"
            f" supersedes, import_key) VALUES (?, {RUN_ROW}, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event_id, run.id, seq_row[0], kind, text, source, ts or now, meta_json,
             resolves_id, supersedes_id, import_key),
        )
    except sqlite3.IntegrityError:
        # Only the (run, import_key) index can refuse it (seq is read under the write lock);
        # the failed statement left nothing behind.
        existing = _imported(store, run, import_key) if import_key is not None else None
        if existing is None:
            raise
        return existing, False
    if touch_run:
        touch(store, run)
    return event_id, True


@contextmanager
def events_batch(store: Store) -> Iterator[None]:
    """Inside a write transaction: the events inserted in the block are indexed for search
    when it ends, in three statements for all of them instead of three per event (m056's
    marker, m057's triggers). Nothing in the block may search for them. An exception
    leaves the marker to the rollback that undoes the block's writes with it."""
    conn = store.conn
    conn.execute("INSERT INTO events_batch (id, events_before) "
                 "SELECT 1, COALESCE(MAX(rowid), 0) FROM events")
    yield
    conn.execute("DELETE FROM events_batch")


def _imported(store: Store, run: Run, import_key: str) -> str | None:
    found = store.value(f"SELECT id FROM events WHERE run = {RUN_ROW} AND import_key = ?",
                        (run.id, import_key))
    return str(found) if found else None


def touch(store: Store, run: Run) -> None:
    """The run's `updated` time: now (it has a new event)."""
    store.conn.execute("UPDATE runs SET updated = ? WHERE id = ?", (store.now(), run.id))


def _check_link(store: Store, run: Run, kind: str, ref: str | None, how: str) -> str | None:
    if not ref:
        if how == "resolves" and kind in ("answer", "verified", "failed"):
            raise InvalidInput(f"{a_or_an(kind)} event needs --resolves pointing at the event "
                               f"it resolves")
        return None
    target = get_event(store, ref)
    if target.run != run.ref:
        # Working state is derived per run: a link into another run would close that run's
        # question or verification while the answer shows up only here.
        raise InvalidInput(
            f"{target.ref} belongs to {target.run}, not {run.ref}; an event can only {how[:-1]} "
            f"events of its own run (pass --run {target.run})"
        )
    if how == "resolves":
        wanted = RESOLVES.get(kind)
        if wanted is None:
            raise InvalidInput(f"{a_or_an(kind)} event cannot resolve another event")
        if target.kind not in wanted:
            raise InvalidInput(
                f"{kind} cannot resolve {target.ref}: it is {a_or_an(target.kind)}, "
                f"expected {' or '.join(sorted(wanted))}"
            )
    return target.id


def list_events(
    store: Store,
    run_ref: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    *,
    newest_first: bool = False,
) -> list[Event]:
    """Events of one run (or of all runs when run_ref is None), oldest first by default."""
    sql = f"SELECT {event_columns()} FROM events"
    where: list[str] = []
    params: list[str | int] = []
    if run_ref:
        where.append(f"run = {RUN_ROW}")
        params.append(get_run(store, run_ref).id)
    if kind:
        if kind not in EVENT_KINDS:
            raise InvalidInput(f"unknown event kind {kind!r}")
        if not run_ref:  # by run, on events_run_kind_seq: no index has the kind first (m063)
            where.append("run IN (SELECT row FROM runs)")
        where.append("kind = ?")
        params.append(kind)
    if where:
        sql += " WHERE " + " AND ".join(where)
    order = "DESC" if newest_first or limit else "ASC"
    sql += f" ORDER BY ts {order}, seq {order}"
    if limit is not None:
        if limit < 1:
            raise InvalidInput("--limit must be at least 1")
        sql += " LIMIT ?"
        params.append(min(limit, SQLITE_MAX_INT))
    events = [row_to_event(r) for r in store.rows(sql, params)]
    if limit and not newest_first:
        events.reverse()  # the newest N, shown oldest first
    return events


def readable_events(store: Store, events: list[Event], principal: Principal | str,
                    run_ref: str | None) -> list[Event]:
    """The read gate for the run log: an event is readable when its run's scope is
    (`run:ID`); naming a run the principal may not read is refused."""
    from agentstate.errors import Refused
    from agentstate.store.principals import acting

    who = acting(store, principal)
    if run_ref is not None and not who.can_read(run_ref):
        raise Refused(f"principal {who.name!r} may not read scope {run_ref!r}")
    return [e for e in events if who.can_read(e.run)]


def run_event_count(store: Store, run: Run) -> int:
    row = store.row(f"SELECT count(*) AS n FROM events WHERE run = {RUN_ROW}", (run.id,))
    return row["n"] if row else 0


def kv_value(store: Store, key: str) -> str | None:
    """A value kept under `key` in the store's small key-value table (runs owns it)."""
    return store.value("SELECT value FROM kv WHERE key = ?", (key,))


def set_kv_value(store: Store, key: str, value: str) -> None:
    with store.transaction():
        store.conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO "
                           "UPDATE SET value = excluded.value", (key, value))
