"""The derived working state of a run, and checkpoints that store it with pointers.

Working state is *derived* from the append-only log, never edited by hand:
- constraints, confirmed diagnoses and unconfirmed hypotheses that nothing superseded;
- open questions: questions that no (non-superseded) answer or diagnosis resolves;
- pending verifications: `verify` events that no verified/failed resolves;
- failed verifications: verifies whose latest result is `failed`;
- a superseded event is replaced by its superseder (which appears under its own kind).

A checkpoint freezes that state as refs (not copies of the text), the last event seq it
covers, a note, and the work-tree snapshot at that moment. It is logged as a `checkpoint`
event too, so the checkpoint's ref is that event's `evt:` ref and it sits in the timeline.
The latest checkpoint's snapshot becomes the run's "last recorded version" that resume
measures drift against.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.runs.event_sql import RUN_ROW
from agentstate.runs.log import append_event, get_run, resolve_run
from agentstate.runs.records import Run
from agentstate.runs.status import RunStatus
from agentstate.runs.worktree import WorkTree
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref


@dataclass
class StateItem:
    """One event as it appears in working state (text kept; ref is what points back)."""

    ref: str
    kind: str
    text: str
    source: str
    ts: str
    seq: int
    replaces: str | None = None  # the evt: ref this one superseded, if any
    about: str | None = None  # for a failed verification: the verify it settled


@dataclass
class WorkingState:
    run: Run
    constraints: list[StateItem] = field(default_factory=list)
    diagnoses: list[StateItem] = field(default_factory=list)
    hypotheses: list[StateItem] = field(default_factory=list)  # unconfirmed, never facts
    open_questions: list[StateItem] = field(default_factory=list)
    pending_verifications: list[StateItem] = field(default_factory=list)
    failed_verifications: list[StateItem] = field(default_factory=list)
    last_seq: int = 0
    event_count: int = 0
    # Under a per-group bound: how many older items each group left out (at most MORE_CAP).
    more: dict[str, int] = field(default_factory=dict)

    def pointers(self) -> dict[str, Any]:
        """The state as refs only: what a checkpoint stores."""
        return {
            "goal": self.run.goal,
            "constraints": [i.ref for i in self.constraints],
            "diagnoses": [i.ref for i in self.diagnoses],
            "hypotheses": [i.ref for i in self.hypotheses],
            "open_questions": [i.ref for i in self.open_questions],
            "pending_verifications": [i.ref for i in self.pending_verifications],
            "failed_verifications": [i.ref for i in self.failed_verifications],
            "last_event_seq": self.last_seq,
        }


@dataclass
class Checkpoint:
    ref: str  # the evt: ref of its checkpoint event
    run: str
    event_seq: int
    note: str | None
    created: str
    state: dict[str, Any]
    worktree: WorkTree


def _item(row: dict[str, Any]) -> StateItem:
    return StateItem(
        ref=make_ref("evt", row["id"]),
        kind=row["kind"],
        text=row["text"],
        source=row["source"],
        ts=row["ts"],
        seq=row["seq"],
        replaces=make_ref("evt", row["supersedes"]) if row["supersedes"] else None,
    )


def working_state(store: Store, run: Run, per_group: int | None = None) -> WorkingState:
    """Derive the run's working state from the log.

    With `per_group`, each group but the constraints (pinned: a pack shows them all) holds
    only its newest `per_group` items, chosen in SQL, so the cost does not grow with the
    run; `more` counts what was left out per group. Checkpoints pass None: they store every
    open item's ref.
    """
    conn = store.conn
    count, last = conn.execute(
        f"SELECT count(*), COALESCE(MAX(seq), 0) FROM events WHERE run = {RUN_ROW}", (run.id,)
    ).fetchone()
    state = WorkingState(run=run, event_count=count, last_seq=last)
    for group, condition in _GROUPS.items():
        items = _group_rows(conn, run.id, group, condition,
                            None if group == "constraints" else per_group)
        if per_group is not None and group != "constraints" and len(items) > per_group:
            items = items[:per_group]
            state.more[group] = _group_count(conn, run.id, group, condition,
                                             per_group + MORE_CAP) - per_group
        items.reverse()  # oldest first, as the log reads
        setattr(state, group, items)
    return state


def _live(alias: str) -> str:
    """SQL: the event `alias` is not superseded by another event."""
    return f"NOT EXISTS (SELECT 1 FROM events s WHERE s.supersedes = {alias}.id)"


def _settled_by(kinds: str) -> str:
    """SQL: some live event of `kinds` resolves the event `e` (from any run)."""
    return (f"EXISTS (SELECT 1 FROM events x WHERE x.resolves = e.id AND x.kind IN ({kinds}) "
            f"AND {_live('x')})")


# The newest live result (verified/failed) of the verify `e`.
_LATEST_RESULT = (
    "(SELECT x.id FROM events x WHERE x.resolves = e.id AND x.kind IN ('verified', 'failed') "
    f"AND {_live('x')} ORDER BY x.ts DESC, x.seq DESC LIMIT 1)"
)

# Per group: the event kind and the condition that puts a live event of it in the group.
_GROUPS = {
    "constraints": ("constraint", "1"),
    "diagnoses": ("diagnosis", "1"),
    # A diagnosis that resolves a hypothesis confirms it: the diagnosis is shown instead.
    "hypotheses": ("hypothesis", "NOT " + _settled_by("'diagnosis'")),
    "open_questions": ("question", "NOT " + _settled_by("'answer', 'diagnosis'")),
    "pending_verifications": ("verify", "NOT " + _settled_by("'verified', 'failed'")),
    "failed_verifications": ("verify", f"(SELECT kind FROM events r WHERE r.id = "
                                       f"{_LATEST_RESULT}) = 'failed'"),
}
_COLUMNS = "e.id, e.kind, e.text, e.source, e.ts, e.seq, e.supersedes"


def _group_rows(conn: Any, run_id: str, group: str, condition: tuple[str, str],
                limit: int | None) -> list[StateItem]:
    """The group's items, newest first; at most limit + 1 (one more says "there are more")."""
    kind, where = condition
    sql = (f"SELECT {_COLUMNS}, {_LATEST_RESULT if group == 'failed_verifications' else 'NULL'}"
           f" FROM events e WHERE e.run = {RUN_ROW} AND e.kind = ? AND {_live('e')} AND {where} "
           f"ORDER BY e.seq DESC")
    params: tuple[Any, ...] = (run_id, kind)
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit + 1,)
    items = []
    for row in conn.execute(sql, params).fetchall():
        item = _item(dict(zip(("id", "kind", "text", "source", "ts", "seq", "supersedes"),
                              row[:7], strict=True)))
        if group == "failed_verifications":
            # Shown as the `failed` result, with the verify it settles.
            res = conn.execute("SELECT id, kind, text, source, ts, seq, supersedes FROM events "
                               "WHERE id = ?", (row[7],)).fetchone()
            result = _item(dict(zip(("id", "kind", "text", "source", "ts", "seq", "supersedes"),
                                    res, strict=True)))
            result.about = item.ref
            item = result
        items.append(item)
    return items


def _group_count(conn: Any, run_id: str, group: str, condition: tuple[str, str],
                 cap: int) -> int:
    """How many items the group has, counting at most `cap` (bounded like the rows)."""
    kind, where = condition
    return conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM events e WHERE e.run = {RUN_ROW} AND e.kind = ? AND "
        f"{_live('e')} AND {where} LIMIT ?)", (run_id, kind, cap)).fetchone()[0]


# Older items past the per-group bound are counted up to this many ("100+ older …").
MORE_CAP = 100


def more_label(n: int) -> str:
    """A `WorkingState.more` count in words: exact below the cap, "N+" at it."""
    return f"{n}+" if n >= MORE_CAP else str(n)


# ---------------------------------------------------------------- checkpoints


def _row_to_checkpoint(row: dict[str, Any]) -> Checkpoint:
    return Checkpoint(
        ref=make_ref("evt", row["id"]),
        run=make_ref("run", row["run"]),
        event_seq=row["event_seq"],
        note=row["note"],
        created=row["created"],
        state=json.loads(row["state"] or "{}"),
        worktree=WorkTree(row["branch"], row["head"], row["dirty_fingerprint"],
                          tuple(json.loads(row["dirty_files"] or "[]"))),
    )


def create_checkpoint(
    store: Store,
    run_ref: str | None = None,
    note: str | None = None,
    *,
    worktree: WorkTree | None = None,
    source: str = "user",
    claimed_by: Principal | None = None,
    ts: str | None = None,
    meta: dict[str, Any] | None = None,
    import_key: str | None = None,
) -> Checkpoint:
    """Store the derived working state with pointers and the work-tree snapshot.

    One transaction: the `checkpoint` event and the checkpoints row appear together or not
    at all. `worktree` is a `worktree.snapshot()` (taken by the caller, so tests and
    the Python API can pass their own). Importers pass the checkpoint's own time `ts`, extra
    event `meta` and an `import_key` (a checkpoint already imported under it is returned).
    """
    note = note.strip() if note is not None else None
    if note is not None and not note:
        raise InvalidInput("the checkpoint note is empty")
    if note:
        from agentstate.safety import refuse_secrets
        from agentstate.store.limits import MAX_NOTE_CHARS, check_length, check_text

        check_length(note, MAX_NOTE_CHARS, "the checkpoint note")
        check_text(note, "the checkpoint note")
        refuse_secrets(note, "the checkpoint note")
    run = resolve_run(store, run_ref)
    if run.status != RunStatus.ACTIVE:
        raise InvalidInput(f"{run.ref} has ended ({run.status}); checkpoints need an active run")
    tree = worktree or WorkTree()
    if import_key is not None:
        row = store.conn.execute(
            "SELECT c.id FROM checkpoints c JOIN events e ON e.id = c.id "
            f"WHERE e.run = {RUN_ROW} AND e.import_key = ?", (run.id, import_key)).fetchone()
        if row:
            return _checkpoint_by_id(store, row[0])
    with store.transaction() as conn:
        state = working_state(store, run)
        pointers = state.pointers()
        # Without a snapshot the pointers say so with an empty object (as they always have).
        pointers["worktree"] = worktree.as_dict() if worktree is not None else {}
        event = append_event(
            store, run.ref, "checkpoint", note or "checkpoint", source=source,
            claimed_by=claimed_by,
            meta={
                **(meta or {}),
                "open_questions": len(state.open_questions),
                "pending_verifications": len(state.pending_verifications),
                "head": tree.head,
            },
            allow_system_kinds=True, ts=ts, import_key=import_key,
        )
        conn.execute(
            "INSERT INTO checkpoints (id, run, event_seq, note, state, created, branch, head,"
            " dirty_fingerprint, dirty_files) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.id, run.id, event.seq, note, json.dumps(pointers, sort_keys=True),
                event.ts, tree.branch, tree.head, tree.dirty_fingerprint,
                json.dumps(list(tree.dirty_files)),
            ),
        )
    return _checkpoint_by_id(store, event.id)


def _checkpoint_by_id(store: Store, checkpoint_id: str) -> Checkpoint:
    row = store.row("SELECT * FROM checkpoints WHERE id = ?", (checkpoint_id,))
    assert row is not None  # written in the same transaction
    return _row_to_checkpoint(row)


def last_checkpoint(store: Store, run: Run) -> Checkpoint | None:
    row = store.row(
        "SELECT * FROM checkpoints WHERE run = ? ORDER BY event_seq DESC LIMIT 1", (run.id,))
    return None if row is None else _row_to_checkpoint(row)


def events_since(store: Store, checkpoint: Checkpoint) -> int:
    """How many of the run's events `agentstate events` lists after the checkpoint.

    In the same order as that listing (time, then seq), not by seq alone: an imported
    record keeps its own time, so an event stored before the checkpoint can be listed
    after it, and the count a user checks against the listing must agree with it."""
    row = store.conn.execute(
        "SELECT count(*) FROM events e JOIN events c ON c.id = ? "
        "WHERE e.run = c.run AND (e.ts > c.ts OR (e.ts = c.ts AND e.seq > c.seq))",
        (checkpoint.ref.removeprefix("evt:"),)).fetchone()
    return int(row[0])


def list_checkpoints(store: Store, run_ref: str | None = None) -> list[Checkpoint]:
    run = resolve_run(store, run_ref)
    return [
        _row_to_checkpoint(r)
        for r in store.rows(
            "SELECT * FROM checkpoints WHERE run = ? ORDER BY event_seq", (run.id,)
        )
    ]


def recorded_version(store: Store, run: Run) -> tuple[WorkTree, str]:
    """The run's last recorded work-tree version and where it came from.

    The latest checkpoint's snapshot if there is one, else the version `run start` saw.
    Context assembly uses this too, so drift means the same thing everywhere.
    """
    checkpoint = last_checkpoint(store, run)
    if checkpoint is not None:
        return checkpoint.worktree, f"checkpoint {checkpoint.ref}"
    return (WorkTree(run.branch, run.head, run.dirty_fingerprint, tuple(run.dirty_files)),
            f"run start ({run.created})")


def state_for(store: Store, run_ref: str | None) -> WorkingState:
    """Working state of the named run (or the current one)."""
    run = get_run(store, run_ref) if run_ref else resolve_run(store, None)
    return working_state(store, run)
