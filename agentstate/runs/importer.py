"""Bulk import of events: the one import path (`import_events`), for JSONL files and
agent transcripts alike.

The generic JSONL format and `import jsonl` are in runs/jsonl_import.py; the checks of one
record in runs/import_record.py.

Idempotence: each record gets an import key = hash of its normalised content (canonical
JSON) and its identity (the `id` field if present, else its line number). Importing the
same file twice adds nothing; a record already imported into the run is counted as a
duplicate. Agent-transcript importers (agentstate/integrations/) build records and call
`import_events` directly: they may also pass lines they chose to skip (counted by reason) and
`checkpoint` records (a compaction summary), which become real checkpoints.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from agentstate.errors import AgentStateError, InvalidInput, Refused
from agentstate.runs.event_sql import RUN_ROW
from agentstate.runs.import_record import _check_record, _links
from agentstate.runs.log import events_batch, get_run, insert_event, start_run, touch
from agentstate.runs.records import Run
from agentstate.runs.status import RunStatus
from agentstate.runs.worktree import WorkTree
from agentstate.store.db import Store
from agentstate.store.limits import compact_meta
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref

BATCH_SIZE = 500


@dataclass
class ImportLine:
    """One record with its identity (a line number or the source's own id)."""

    position: int | str
    data: Any = None
    error: str | None = None  # set by a reader for a line it could not parse
    skip: str | None = None  # set by a reader for a line it understood but does not import


@dataclass
class Rejected:
    position: int | str
    reason: str
    refused: bool = False  # a secret: counted apart from malformed lines


@dataclass
class ImportResult:
    run: str | None
    created_run: bool = False
    imported: int = 0
    duplicates: int = 0
    malformed: int = 0
    refused: int = 0
    skipped: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # refs of the new events
    kinds: dict[str, int] = field(default_factory=dict)  # new events by kind
    skipped_reasons: dict[str, int] = field(default_factory=dict)
    # Records whose source the importing principal may not claim, recorded as `model`.
    downgraded: int = 0

    @property
    def total(self) -> int:
        return self.imported + self.duplicates + self.malformed + self.refused + self.skipped

    @property
    def nothing_accepted(self) -> bool:
        """Records were offered and every one was rejected (none imported, none a duplicate)."""
        return not (self.imported or self.duplicates) and bool(self.malformed or self.refused)


def import_key(position: int | str, data: dict[str, Any]) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hashlib.sha256(f"{position}\0{canonical}".encode()).hexdigest()
    return digest[:32]


def import_events(
    store: Store,
    records: Iterable[ImportLine | dict[str, Any]],
    *,
    run_ref: str | None = None,
    goal: str | None = None,
    origin: str | None = None,
    strict: bool = False,
    batch_size: int = BATCH_SIZE,
    worktree: WorkTree | None = None,
    on_record: Callable[[], None] | None = None,
    label: str = "record",
    default_goal: str | None = None,
    extra_kinds: frozenset[str] = frozenset(),
    bind_origin: bool = False,
    claimed_by: Principal | None = None,
    relay_user_as: str | None = None,
    make_current: bool = True,
) -> ImportResult:
    """Import records into a run. The one import path: agent-transcript importers call it.

    Which run: `run_ref` if given; otherwise the run an earlier import of the same `origin`
    (e.g. the file's absolute path) created — with `goal`, only if that run has this goal —
    so re-importing a file stays idempotent; otherwise a new run with `goal` (else
    `default_goal`, else "imported from <origin>"), created only when the first record is
    stored. `default_goal` names a new run without restricting which earlier run is reused.
    With `bind_origin`, a run named by `run_ref` is also remembered as the origin's run (a
    transcript imported into a chosen run keeps going there). Plain dicts are records whose
    identity is their position. `label` names a record in messages ("line" for files).
    `extra_kinds` admits more kinds than the generic format: `checkpoint` (its text is the
    note) becomes a real checkpoint whose work-tree version carries the run's recorded one
    forward, since a transcript does not say which commit it was written at.
    With `claimed_by`, a record whose source that principal may not claim (an agent's file
    saying `"source": "user"`) is recorded as `model`, its claim kept in meta
    `claimed_source`: a file is the importer's word, not the user's. With `relay_user_as`
    (`prompt:AGENT`), records saying `user` are recorded as that source: a transcript read
    on the agent's behalf relays the user's words unverified. A new run becomes the
    current run unless `make_current` is False.

    A record's import key is looked up before the record is checked: a record the run
    already holds costs one indexed look-up, never a secret scan.

    Writes are committed in batches of `batch_size` (one transaction each). With
    `strict`, the whole import is one transaction and the first malformed or refused record
    aborts it: nothing is imported and the error names the record.
    """
    if run_ref and goal:
        raise InvalidInput("pass either a run ref or a goal, not both")
    run: Run | None = get_run(store, run_ref) if run_ref else None
    if run is not None and run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} has ended ({run.status}); import into an active run")
    origin_key = _origin_key(origin) if origin else None
    if run is None and origin_key:
        run = _earlier_run(store, origin_key, goal)
    title = goal or default_goal or f"imported from {origin or 'records'}"
    job = _Import(store, run, _ImportOptions(
        goal=goal, origin_key=origin_key, title=title, strict=strict, worktree=worktree,
        label=label, extra_kinds=extra_kinds, bind_origin=bind_origin, claimed_by=claimed_by,
        relay_user_as=relay_user_as, make_current=make_current))
    try:
        # --strict: everything in one transaction, so the first bad record undoes it all.
        with store.transaction() if strict else nullcontext():
            job.run_batches(records, batch_size, on_record)
    except _Abort as exc:
        raise exc.error from None
    job.result.run = job.run.ref if job.run is not None else None
    return job.result


@dataclass(frozen=True)
class _ImportOptions:
    """What import_events was asked, as its steps need it (see import_events)."""

    goal: str | None
    origin_key: str | None  # the kv key naming the run this origin imports into
    title: str  # the goal of a run the import creates
    strict: bool
    worktree: WorkTree | None
    label: str
    extra_kinds: frozenset[str]
    bind_origin: bool
    claimed_by: Principal | None
    relay_user_as: str | None
    make_current: bool


# One record after the checks that run outside the write transaction: (position, data,
# checked record or None, the error it raised or None, why it was skipped or None, the id
# of the event it duplicates or None, its import key or None).
_Prepared = tuple[int | str, Any, dict[str, Any] | None, AgentStateError | None, str | None,
                  Any, str | None]


class _Import:
    """One import's state: the target run (created on the first stored record), the ids of
    the records stored so far (for links to them) and the counts."""

    def __init__(self, store: Store, run: Run | None, options: _ImportOptions) -> None:
        self.store = store
        self.run = run
        self.o = options
        self.result = ImportResult(run=None)
        self.id_map: dict[str, str] = {}
        self.bound = False
        self.touched = False  # events were added in this batch: the run's time is updated

    def run_batches(self, records: Iterable[ImportLine | dict[str, Any]], batch_size: int,
                    on_record: Callable[[], None] | None) -> None:
        # Short locks: each batch is read, parsed and checked (secret scan included) before
        # its write transaction opens, so other writers wait for inserts only.
        iterator = iter(records)
        ordinal = 0
        while True:
            batch = []
            for item in itertools.islice(iterator, batch_size):
                ordinal += 1
                batch.append(self.prepare(item, ordinal))
            if not batch:
                return
            # More than one new record: their search index is written once, at the end.
            many = sum(1 for prepared in batch if prepared[2] is not None) > 1
            with self.store.transaction(), events_batch(self.store) if many else nullcontext():
                if self.run is not None:
                    # Read again under the write lock: the run may have ended since.
                    self.run = get_run(self.store, self.run.ref)
                for prepared in batch:
                    self.write(prepared)
                    if on_record:
                        on_record()
                if self.touched and self.run is not None:
                    touch(self.store, self.run)  # once a batch, not once an event
                    self.touched = False

    def prepare(self, item: ImportLine | dict[str, Any], ordinal: int) -> _Prepared:
        """Parse and check one record outside the write transaction."""
        if isinstance(item, ImportLine):
            if item.skip is not None:
                return item.position, None, None, None, item.skip, None, None
            position, data, error = item.position, item.data, item.error
        else:
            position, data, error = ordinal, item, None
        key = None
        if error is None and isinstance(data, dict):
            # The key once a record, here: the look-up below and the write both use it.
            try:
                key = import_key(data.get("id", position), data)
            except (TypeError, ValueError, RecursionError):
                pass  # not canonical JSON: _check_record names the problem
            # The key first: what the run already holds is not scanned again. A run this
            # import created holds only what it wrote itself (a record given twice is
            # caught by the unique index), so nothing is looked up there.
            if key is not None and self.run is not None and not self.result.created_run:
                found = self.store.value(
                    f"SELECT id FROM events WHERE run = {RUN_ROW} AND import_key = ?",
                    (self.run.id, key))
                if found:
                    return position, data, None, None, None, found, key
        try:
            if error is not None:
                raise InvalidInput(error)
            return position, data, _check_record(data, kinds=self.o.extra_kinds), None, None, \
                None, key
        except AgentStateError as exc:
            return position, data, None, exc, None, None, key

    def write(self, prepared: _Prepared) -> None:
        """One prepared record, inside the batch's transaction."""
        position, data, record, error, skip, duplicate, key = prepared
        result = self.result
        if duplicate is not None:
            result.duplicates += 1
            if "id" in data:
                self.id_map[str(data["id"])] = make_ref("evt", duplicate)
        elif skip is not None:
            result.skipped += 1
            result.skipped_reasons[skip] = result.skipped_reasons.get(skip, 0) + 1
        elif error is not None:
            self.reject(position, error)
        else:
            # Prepared without error, skip or duplicate: checked, so its key was computed.
            assert record is not None and key is not None
            try:
                # append_event is atomic on its own (a savepoint).
                self.store_record(data, record, key)
            except AgentStateError as exc:
                self.reject(position, exc)

    def ensure_run(self) -> Run:
        store, o = self.store, self.o
        if self.run is None and o.origin_key:
            # Asked again inside the write transaction: a simultaneous import of the same
            # file may have created the run since the look-up before the import.
            self.run = _earlier_run(store, o.origin_key, o.goal)
        if self.run is None:
            self.run, _ = start_run(store, o.title, worktree=o.worktree,
                                    make_current=o.make_current)
            self.result.created_run = True
            if o.origin_key:
                store.conn.execute(
                    "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                    "SET value = excluded.value", (o.origin_key, self.run.id),
                )
        elif o.bind_origin and o.origin_key and not self.bound:
            self.bound = True
            store.conn.execute("INSERT OR IGNORE INTO kv (key, value) VALUES (?, ?)",
                               (o.origin_key, self.run.id))
        return self.run

    def _attributed(self, data: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
        """The record with its links resolved and its source as this importer may record it."""
        record = {**record, **_links(data, self.id_map)}
        if self.o.relay_user_as is not None and record["source"] == "user":
            record["source"] = self.o.relay_user_as
        claimed_by = self.o.claimed_by
        if claimed_by is not None and not claimed_by.can_claim(record["source"]):
            record["meta"] = {**(record["meta"] or {}), "claimed_source": record["source"]}
            record["meta_json"] = compact_meta(record["meta"])  # the meta as now stored
            record["source"] = "model"
            self.result.downgraded += 1
        return record

    def store_record(self, data: dict[str, Any], record: dict[str, Any], key: str) -> None:
        record = self._attributed(data, record)
        target = self.ensure_run()
        # A checkpoint's key is looked up here; an event's is kept unique by the index on
        # (run, import_key), which insert_event leans on (prepare looked it up already).
        existing = self.store.conn.execute(
            f"SELECT id FROM events WHERE run = {RUN_ROW} AND import_key = ?", (target.id, key)
        ).fetchone() if record["kind"] == "checkpoint" else None
        if not existing and target.status != RunStatus.ACTIVE:
            raise _Abort(InvalidInput(
                f"{target.ref} (from an earlier import of this file) has ended; import the new "
                f"records with --run REF or --goal TEXT"))
        if existing:
            self.result.duplicates += 1
            event_ref = make_ref("evt", existing[0])
        else:
            event_ref = self._append(target, record, key)
        if "id" in data:
            self.id_map[str(data["id"])] = event_ref

    def _append(self, target: Run, record: dict[str, Any], key: str) -> str:
        """Store a new record as an event (a checkpoint for `checkpoint`); its ref."""
        store = self.store
        if record["kind"] == "checkpoint":
            from agentstate.runs.checkpoint import create_checkpoint, recorded_version

            checkpoint = create_checkpoint(
                store, target.ref, record["text"], source=record["source"], ts=record["ts"],
                meta=record["meta"], import_key=key,
                worktree=recorded_version(store, target)[0],
            )
            kind, ref = "checkpoint", checkpoint.ref
        else:
            # The run is known and nothing needs the stored row back: a new record costs
            # its key's look-up (prepare), the next seq and the insert.
            event_id, created = insert_event(
                store, target, record["kind"], record["text"], source=record["source"],
                meta=record["meta"], meta_json=record["meta_json"], resolves=record["resolves"],
                supersedes=record["supersedes"], ts=record["ts"], import_key=key,
                allow_system_kinds=record["kind"] == "tool", scanned=True,
                key_by_index=True, touch_run=False,
            )
            ref = make_ref("evt", event_id)
            if not created:  # the same record earlier in this import, or a parallel one
                self.result.duplicates += 1
                return ref
            self.touched = True
            kind = record["kind"]
        self.result.imported += 1
        self.result.kinds[kind] = self.result.kinds.get(kind, 0) + 1
        self.result.events.append(ref)
        return ref

    def reject(self, position: int | str, exc: AgentStateError) -> None:
        result, label = self.result, self.o.label
        if isinstance(exc, Refused):
            if self.o.strict:
                raise Refused(f"{label} {position}: {exc.message}; nothing imported") from exc
            result.refused += 1
            result.rejected.append(Rejected(position, exc.message, refused=True))
            return
        if self.o.strict:
            raise InvalidInput(f"{label} {position}: {exc.message}; nothing imported "
                               f"(--strict)") from exc
        result.malformed += 1
        result.rejected.append(Rejected(position, exc.message))


def _origin_key(origin: str) -> str:
    return f"import_run:{hashlib.sha256(origin.encode()).hexdigest()[:24]}"


def origin_run(store: Store, origin: str) -> Run | None:
    """The run an earlier import of `origin` created or was bound to, if any (the run an
    import of it without a run or goal goes on in)."""
    return _earlier_run(store, _origin_key(origin), None)


def _earlier_run(store: Store, origin_key: str, goal: str | None) -> Run | None:
    """The run an earlier import of the same origin created, if it still applies."""
    run_id = store.value("SELECT value FROM kv WHERE key = ?", (origin_key,))
    if not run_id:
        return None
    earlier = get_run(store, make_ref("run", run_id))
    # With a goal, the earlier run counts only if it has that goal: the same command run
    # twice adds nothing, while another goal asks for another run on purpose.
    return earlier if not goal or earlier.goal == goal else None


class _Abort(Exception):
    """Stops the whole import (not just one record) with the wrapped error."""

    def __init__(self, error: AgentStateError) -> None:
        super().__init__(error.message)
        self.error = error


# Where imported runs came from (agent, session id, cwd, branch, file): one kv entry per run,
# a JSON list, since several sessions may be imported into one run with --run.
SOURCE_KEY = "run_sources:"


@dataclass(frozen=True)
class RunSource:
    """One session imported into a run: which agent, which session, from where."""

    agent: str
    session: str | None
    cwd: str | None
    branch: str | None
    file: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"agent": self.agent, "session": self.session, "cwd": self.cwd,
                "branch": self.branch, "file": self.file}

    @property
    def identity(self) -> tuple[str, str | None]:
        return self.agent, self.session or self.file


def remember_run_source(store: Store, run_ref: str, source: RunSource) -> None:
    """Record one imported session of a run (once per agent and session)."""
    run = get_run(store, run_ref)
    with store.transaction() as conn:
        sources = run_sources(store, run.ref)
        if any(s.identity == source.identity for s in sources):
            return
        sources.append(source)
        conn.execute(
            "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
            "SET value = excluded.value",
            (SOURCE_KEY + run.id, json.dumps([s.as_dict() for s in sources])))


def run_sources(store: Store, run_ref: str) -> list[RunSource]:
    """The sessions imported into a run, in the order they were first imported."""
    run = get_run(store, run_ref)
    value = store.value("SELECT value FROM kv WHERE key = ?", (SOURCE_KEY + run.id,))
    stored = json.loads(value) if value else []
    return [RunSource(agent=s.get("agent"), session=s.get("session"), cwd=s.get("cwd"),
                      branch=s.get("branch"), file=s.get("file")) for s in stored]
