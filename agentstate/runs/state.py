"""The working state of a run, derived from its events: the one place that decides what is
still open.

`resume`, `checkpoint` and `context` all need the same answers — which questions are still
open, which verifications are still pending, which diagnoses stand — so the derivation lives
here once. Events are append-only; state is computed from the links between them:

- an event named by a later event's `supersedes` is out (replaced);
- a `question` is open until an `answer` (or a `diagnosis`) resolves it;
- a `verify` is pending until a `verified` or `failed` resolves it (a `failed` one is listed
  separately: the verification ran and did not pass);
- a `hypothesis` resolved by a `diagnosis` is no longer a guess; an unresolved one stays an
  unconfirmed hypothesis, never a fact.

Resolutions may come from any run (a later run can answer an earlier run's question).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from agentstate.runs.log import Run, get_run
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

# Kinds that make up the working state (the rest is trajectory).
STATE_KINDS = ("constraint", "diagnosis", "hypothesis", "question", "verify", "decision")


@dataclass
class StateItem:
    ref: str
    kind: str
    text: str
    source: str
    ts: str
    seq: int
    resolved_by: str | None = None  # evt:… that settled it (failed verifications)


@dataclass
class WorkingState:
    run: str
    goal: str
    status: str
    constraints: list[StateItem] = field(default_factory=list)
    diagnoses: list[StateItem] = field(default_factory=list)
    hypotheses: list[StateItem] = field(default_factory=list)
    open_questions: list[StateItem] = field(default_factory=list)
    pending_verifications: list[StateItem] = field(default_factory=list)
    failed_verifications: list[StateItem] = field(default_factory=list)
    decisions: list[StateItem] = field(default_factory=list)
    last_checkpoint: dict | None = None  # {id, note, created, event_seq}
    # The last work-tree version recorded for the run (latest checkpoint, else run start).
    worktree: dict = field(default_factory=dict)
    last_seq: int = 0


def derive_state(store: Store, run: Run | str) -> WorkingState:
    """Compute the working state of `run` (a Run or a run ref) from its events."""
    if isinstance(run, str):
        run = get_run(store, run)
    conn = store.conn
    placeholders = ", ".join("?" for _ in STATE_KINDS)
    rows = conn.execute(
        f"SELECT id, kind, text, source, ts, seq FROM events WHERE run = ? "
        f"AND kind IN ({placeholders}) ORDER BY seq",
        (run.id, *STATE_KINDS),
    ).fetchall()
    # Links pointing INTO this run's state events, from any run (indexed on resolves and
    # supersedes, so this stays proportional to the state events, not to the whole log).
    ids = [r[0] for r in rows]
    superseded: set[str] = set()
    resolution: dict[str, tuple[str, str]] = {}  # target id -> (kind, resolver id)
    for chunk_start in range(0, len(ids), 500):
        chunk = ids[chunk_start:chunk_start + 500]
        marks = ", ".join("?" for _ in chunk)
        for target, in conn.execute(
            f"SELECT supersedes FROM events WHERE supersedes IN ({marks})", chunk
        ):
            superseded.add(target)
        for target, kind, resolver in conn.execute(
            f"SELECT resolves, kind, id FROM events WHERE resolves IN ({marks}) "
            f"ORDER BY ts, seq", chunk,
        ):
            resolution[target] = (kind, resolver)  # the latest resolution wins
    state = WorkingState(run=run.ref, goal=run.goal, status=run.status)
    for event_id, kind, text, source, ts, seq in rows:
        if event_id in superseded:
            continue
        item = StateItem(make_ref("evt", event_id), kind, text, source, ts, seq)
        settled = resolution.get(event_id)
        if kind == "constraint":
            state.constraints.append(item)
        elif kind == "diagnosis":
            state.diagnoses.append(item)
        elif kind == "decision":
            state.decisions.append(item)
        elif kind == "hypothesis":
            if settled is None:
                state.hypotheses.append(item)
        elif kind == "question":
            if settled is None:
                state.open_questions.append(item)
        elif kind == "verify":
            if settled is None:
                state.pending_verifications.append(item)
            elif settled[0] == "failed":
                item.resolved_by = make_ref("evt", settled[1])
                state.failed_verifications.append(item)
    last = conn.execute("SELECT MAX(seq) FROM events WHERE run = ?", (run.id,)).fetchone()
    state.last_seq = last[0] or 0
    state.worktree = {
        "branch": run.branch, "head": run.head,
        "dirty_fingerprint": run.dirty_fingerprint, "dirty_files": list(run.dirty_files),
    }
    checkpoint = conn.execute(
        "SELECT id, note, created, event_seq, branch, head, dirty_fingerprint, dirty_files "
        "FROM checkpoints WHERE run = ? ORDER BY event_seq DESC, created DESC, rowid DESC "
        "LIMIT 1",
        (run.id,),
    ).fetchone()
    if checkpoint:
        cp_id, note, created, event_seq, branch, head, fingerprint, files = checkpoint
        state.last_checkpoint = {"id": cp_id, "note": note, "created": created,
                                 "event_seq": event_seq}
        if head or branch or fingerprint:
            state.worktree = {"branch": branch, "head": head, "dirty_fingerprint": fingerprint,
                              "dirty_files": json.loads(files or "[]")}
    return state
