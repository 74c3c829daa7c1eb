"""`agentstate gc` at its edges: checkpoints of collected runs still resolve, and a retention
period longer than the calendar is a period that removes nothing (not an internal error)."""

from __future__ import annotations

from datetime import timedelta

from agentstate.context.trace import trace
from agentstate.maintenance.gc import gc
from agentstate.runs.checkpoint import create_checkpoint, last_checkpoint
from agentstate.runs.log import append_event, end_run, start_run
from agentstate.store.principals import resolve_principal
from tests.conftest import configure


def test_a_checkpoint_of_an_old_run_keeps_its_event_so_its_ref_resolves(store):
    run, _ = start_run(store, "old work")
    append_event(store, run.ref, "observation", "alpha plain note")
    point = create_checkpoint(store, run.ref, "halfway there")
    end_run(store, run.ref, "done")
    store.clock.advance(timedelta(days=40))
    configure(store, "retention", keep_events_days=30)
    result = gc(store, principal=resolve_principal(store))
    assert result.removed == 1 and result.collected == 1
    latest = last_checkpoint(store, run)
    assert latest is not None and latest.ref == point.ref
    node = trace(store, point.ref,
                 principal=resolve_principal(store))  # `run show` prints this ref: it must resolve
    assert "body collected by gc" in node.summary


def test_a_period_longer_than_the_calendar_removes_nothing(initialised, cli):
    config = initialised / ".agentstate" / "config.toml"
    cli.ok("run", "start", "short lived")
    cli.ok("log", "observation", "november old note")
    cli.ok("run", "end", "--status", "done")
    text = config.read_text()
    for days in (3_000_000, 99_999_999_999):
        config.write_text(text.replace("# keep_events_days = 0", f"keep_events_days = {days}"))
        got = cli("gc", "--json")
        assert got.exit_code == 0, got.output
        assert '"removed": 0' in got.stdout and '"candidates": 0' in got.stdout
    assert "november old note" in cli.ok("events").stdout


def test_after_gc_events_says_a_body_was_collected_and_resume_leaves_it_out(initialised, cli):
    config = initialised / ".agentstate" / "config.toml"
    run = cli.json("run", "start", "old work")["run"]["ref"]
    cited = cli.json("log", "observation", "oscar the port is 8080")["ref"]
    cli.ok("remember", "the port is 8080", "--kind", "fact", "--evidence", cited)
    cli.ok("run", "end", "--status", "done")
    config.write_text(config.read_text().replace("# keep_events_days = 0",
                                                 "keep_events_days = 7"))
    later = {"AGENTSTATE_NOW": "2099-01-01T00:00:00Z"}
    assert cli.json("gc", env=later)["collected"] == 1
    listed = cli.ok("events", "--run", run, env=later).stdout
    assert f"{cited} " in listed and "(body collected by gc at 2099-01-01T00:00:00)" in listed
    resumed = cli.ok("resume", run, env=later).stdout
    assert cited not in resumed.split("## Relevant recent events")[-1]
