"""Which run an agent's session writes to: a small map kept in the run log's `kv` table.

An agent session (Claude Code, Codex) has its own id. Its hooks must all land on one run: the
run the session was bound to when it started, as long as that run is still active. A new
session continues the current run (that is what `resume` is for); only when there is none
does a session get a run of its own. The same table keeps, per run and transcript file, where
the hooks' last catch-up from the transcript stopped.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agentstate.runs.log import current_run, get_run, start_run
from agentstate.runs.records import Run
from agentstate.runs.status import RunStatus
from agentstate.runs.worktree import WorkTree
from agentstate.store.db import Store
from agentstate.store.refs import make_ref


def _key(agent: str, session_id: str) -> str:
    # Hashed: session ids are agent-defined strings of any length and alphabet.
    digest = hashlib.sha256(f"{agent}\0{session_id}".encode()).hexdigest()[:24]
    return f"session_run:{digest}"


def session_run(store: Store, agent: str, session_id: str) -> Run | None:
    """The active run this session is bound to, if any."""
    run_id = store.value("SELECT value FROM kv WHERE key = ?", (_key(agent, session_id),))
    if not run_id:
        return None
    run = get_run(store, make_ref("run", run_id))
    return run if run.status == RunStatus.ACTIVE else None


def bind_session(store: Store, agent: str, session_id: str, run: Run) -> None:
    store.conn.execute(
        "INSERT INTO kv (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (_key(agent, session_id), run.id),
    )


def find_session_run(store: Store, agent: str, session_id: str) -> Run | None:
    """The session's own run, else the current run (which the session then adopts)."""
    run = session_run(store, agent, session_id)
    if run is None:
        run = current_run(store)
        if run is not None:
            bind_session(store, agent, session_id, run)
    return run


def start_session_run(store: Store, agent: str, session_id: str, goal: str, *,
                      worktree: WorkTree | None = None, source: str = "user") -> Run:
    """Start a run for a session that has none and bind the session to it (one transaction)."""
    with store.transaction():
        run, _ = start_run(store, goal, worktree=worktree, source=source)
        bind_session(store, agent, session_id, run)
    return run


def _cursor_key(run: Run, path: str) -> str:
    digest = hashlib.sha256(f"{run.id}\0{path}".encode()).hexdigest()[:24]
    return f"transcript_cursor:{digest}"


def transcript_cursor(store: Store, run: Run, path: str) -> dict[str, Any] | None:
    """Where the last catch-up of this run from this transcript file stopped (the reader's
    own JSON), or None."""
    stored = store.value("SELECT value FROM kv WHERE key = ?", (_cursor_key(run, path),))
    if not stored:
        return None
    try:
        found = json.loads(stored)
    except ValueError:
        return None  # only an optimisation: a damaged entry means reading from the start
    return found if isinstance(found, dict) else None


def save_transcript_cursor(store: Store, run: Run, path: str, cursor: dict[str, Any]) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO kv (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (_cursor_key(run, path), json.dumps(cursor, ensure_ascii=False)),
        )
