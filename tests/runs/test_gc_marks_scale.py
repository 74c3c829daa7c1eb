"""gc's marks cost in proportion to the rows they look at, not to their product.

Since m063 an event's rowid is its INTEGER PRIMARY KEY, which the index on `id` carries as its
last column; a condition `e.id = ? AND e.rowid IN (the marks)` then let SQLite take the marks
as a second key of that index and probe (id, rowid) once per mark for every row it drove
from: a `gc --dry-run` on the 100,000-event bench store took 69 s (kept ids x marks). Counted
here in SQLite's own virtual-machine steps (a progress handler), which do not depend on the
machine's load: doubling every table must about double the work of marking."""

from __future__ import annotations

from agentstate.maintenance.init import init_store
from agentstate.runs.retention import drop_marks, mark_retention
from agentstate.store.db import open_store
from tests.conftest import git

CUTOFF = "2026-01-10T00:00:00.000000Z"
STEP = 100  # the progress handler is called every STEP virtual-machine instructions


def _fill(store, events: int) -> list[str]:
    """`events` old events of a finished run, every tenth cited by a tool call; the refs of
    every fifth (a memory's or a pack's citations), half of which resolve the event before
    them (which then stays too: a staying event's links stay)."""
    conn = store.conn
    with store.transaction():
        conn.execute("INSERT INTO runs (id, goal, status, created, updated, ended, "
                     "dirty_files) VALUES ('oldrun', 'old work', 'done', ?, ?, ?, '[]')",
                     (CUTOFF[:10] + "T00:00:00Z",) * 3)
        conn.executemany(
            "INSERT INTO events (id, run, seq, kind, text, source, ts, resolves) "
            "VALUES (?, (SELECT row FROM runs WHERE id = 'oldrun'), ?, 'observation', ?, 'user', "
            "'2026-01-01T00:00:00Z', ?)",
            [(f"e{n:07d}", n, f"old note {n}", f"e{n - 1:07d}" if n % 10 == 3 else None)
             for n in range(1, events + 1)])
        conn.executemany(
            "INSERT INTO tool_calls (id, event, run, command, program, allowed, ts) "
            "VALUES (?, ?, 'oldrun', '[]', 'true', 1, '2026-01-01T00:00:00Z')",
            [(f"t{n:07d}", f"e{n:07d}") for n in range(10, events + 1, 10)])
    return [f"evt:e{n:07d}" for n in range(3, events + 1, 5)]


def _steps_of_marking(store, keep: list[str]) -> tuple[int, tuple[int, int, int]]:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    store.conn.set_progress_handler(count, STEP)
    try:
        with store.transaction():
            counts = mark_retention(store.conn, CUTOFF, keep)
            drop_marks(store.conn)
    finally:
        store.conn.set_progress_handler(None, 0)
    return steps, (counts.candidates, counts.removed, counts.collected)


def _tool_calls_ok(store) -> bool:
    columns = {r[1] for r in store.conn.execute("PRAGMA table_info(tool_calls)")}
    return {"id", "event", "run", "command", "program", "allowed", "ts"} <= columns


def test_marking_grows_with_the_rows_not_with_kept_ids_times_marks(tmp_path):
    work = []
    for events in (1_500, 3_000):
        repo = tmp_path / f"s{events}"
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        init_store(target=repo)
        store = open_store(start=repo)
        assert _tool_calls_ok(store)
        keep = _fill(store, events)
        steps, (candidates, removed, collected) = _steps_of_marking(store, keep)
        store.close()
        # What the marks say is right, so the count below is of real work: every event is a
        # candidate; the cited ones, the tool calls' and the resolved ones stay, collected.
        cited = {int(ref[5:]) for ref in keep}
        staying = (cited | set(range(10, events + 1, 10))
                   | {n - 1 for n in range(3, events + 1, 10)})
        assert (candidates, collected, removed) == (events, len(staying), events - len(staying))
        work.append(steps)
    # Linear work doubles (about 2x, with the fixed cost of the statements); the product of
    # kept ids and marks quadruples. 2.6 lies between with room on both sides.
    assert work[1] < 2.6 * work[0], work
