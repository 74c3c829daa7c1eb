"""What `run list`, `run show` and the web views show beside the runs themselves: how many
events each run has, by run and by kind, and which run is marked current."""

from __future__ import annotations

from agentstate.runs.event_sql import RUN_ROW
from agentstate.runs.log import current_run
from agentstate.runs.records import Run
from agentstate.store.db import Store


def event_counts_by_run(store: Store) -> dict[str, int]:
    """Run id → number of events, for every run that has any."""
    return dict(store.conn.execute(
        "SELECT r.id, count(*) FROM events e JOIN runs r ON r.row = e.run GROUP BY e.run"))


def event_counts_by_kind(store: Store, run: Run) -> dict[str, int]:
    """Event kind → number of events of that kind in `run`, kinds in name order."""
    return dict(store.conn.execute(
        f"SELECT kind, count(*) FROM events WHERE run = {RUN_ROW} GROUP BY kind ORDER BY kind",
        (run.id,)))


def marked_current_run_id(store: Store) -> str | None:
    """The id of the current run (see current_run), or None: what `run list` stars."""
    run = current_run(store)
    return run.id if run else None
