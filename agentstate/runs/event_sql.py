"""How `events` names its run: by the run's integer `row` (m067), never by its TEXT id, which
is what callers pass and readers get (`Event.run`, `run:ID`). Every query that filters
events by a run or reads an event's run spells the conversion with these fragments."""

from __future__ import annotations

# A run's TEXT id, given as a parameter, as the integer `events.run` holds. Uncorrelated, so
# SQLite computes it once and looks the run up by `(run, seq)` or `events_run_kind_seq`.
RUN_ROW = "(SELECT row FROM runs WHERE id = ?)"


def run_id_of(alias: str) -> str:
    """The TEXT id of the run of the event row `alias` (a look-up on `runs_row`)."""
    return f"(SELECT run_.id FROM runs run_ WHERE run_.row = {alias}.run)"


def event_columns(alias: str = "events") -> str:
    """Every column of `events` as a reader sees it (`run` as the run's TEXT id): what
    `SELECT *` gave before m067, for `row_to_event`."""
    return (f"{alias}.id, {run_id_of(alias)} AS run, {alias}.seq, {alias}.kind, {alias}.text, "
            f"{alias}.source, {alias}.ts, {alias}.meta, {alias}.resolves, {alias}.supersedes, "
            f"{alias}.import_key, {alias}.collected_at, {alias}.body_hash, {alias}.row")
