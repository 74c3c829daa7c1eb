"""What a bulk import costs in SQL: three statements a new record (its key, the next seq, the
insert), the run's time once a batch, and nothing read back. Counted with SQLite's own trace
of a real store, not timed."""

from __future__ import annotations

from agentstate.runs.importer import import_events
from agentstate.runs.log import get_run, list_events

RECORDS = 120


def _records(n: int) -> list[dict]:
    return [{"kind": "note", "text": f"step {i}: rebuilt the parser cache", "id": f"r{i}"}
            for i in range(n)]


def _traced(store, records: list[dict], **kwargs):
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        result = import_events(store, records, origin="bench:statements", **kwargs)
    finally:
        store.conn.set_trace_callback(None)
    # Statements the import ran itself (a trigger's own statements show as `-- TRIGGER`).
    return result, [s for s in statements if not s.lstrip().startswith("--")]


def test_a_new_record_costs_three_statements_and_the_run_is_touched_once_a_batch(store):
    first, _ = _traced(store, _records(1), goal="count statements")  # creates the run
    result, statements = _traced(store, _records(RECORDS + 1)[1:], batch_size=50)
    assert result.imported == RECORDS
    # SQLite's trace repeats an INSERT's text for each trigger it fires: counted once.
    on_events = [s for s in statements if s.startswith("SELECT") and "FROM events " in s]
    inserts = {s for s in statements if s.startswith("INSERT INTO events ")}
    assert len(inserts) == RECORDS
    assert len(on_events) + len(inserts) <= 3 * RECORDS, on_events[:4]
    touches = [s for s in statements if s.startswith("UPDATE runs")]
    assert len(touches) == 3  # 120 records in batches of 50
    assert not any(s.startswith("SELECT * FROM events WHERE id") for s in statements)
    # The run's time is the time of its last event; nothing was stored twice.
    run = get_run(store, first.run)
    events = list_events(store, first.run)
    assert len(events) == RECORDS + 1 and run.updated >= events[-1].ts
    again, _ = _traced(store, _records(RECORDS + 1))
    assert again.imported == 0 and again.duplicates == RECORDS + 1


def test_a_run_the_import_creates_is_not_asked_for_keys(store):
    # It holds only what this import wrote: a record given twice is refused by the unique
    # index, so each new record costs the next seq and the insert, no key look-up.
    result, statements = _traced(store, _records(RECORDS), goal="a new run", batch_size=50)
    assert result.created_run and result.imported == RECORDS
    assert not [s for s in statements if "import_key = " in s], statements[:6]
