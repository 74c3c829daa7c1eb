"""What the ui keeps between requests (web/previews.py) against a real store: a kept
preview is answered again until anything is committed, by any process, or it is too old."""

from __future__ import annotations

from agentstate.memory.write import remember
from agentstate.runs.log import append_event, start_run
from agentstate.store.db import change_mark
from agentstate.store.principals import resolve_principal
from agentstate.web.previews import Previews


def test_kept_until_the_store_changes_or_the_preview_is_too_old(store, cli):
    run, _ = start_run(store, "fix the parser")
    now = [100.0]
    previews = Previews(store.db_path, ttl=60, clock=lambda: now[0])
    built: list[int] = []

    def build():
        built.append(1)
        return len(built)

    assert previews.get(("pack", run.ref, "8000", ""), build) == 1
    assert previews.get(("pack", run.ref, "8000", ""), build) == 1  # kept
    assert previews.get(("pack", run.ref, "4000", ""), build) == 2  # another key
    append_event(store, run.ref, "note", "a new event")  # a commit on this connection
    assert previews.get(("pack", run.ref, "8000", ""), build) == 3
    cli.ok("log", "note", "written by another process's command")  # another connection
    assert previews.get(("pack", run.ref, "8000", ""), build) == 4
    remember(store, "CI runs with LANG=C.UTF-8", kind="fact",
             principal=resolve_principal(store))
    assert previews.get(("pack", run.ref, "8000", ""), build) == 5
    now[0] += 61  # nothing committed, but older than the TTL
    assert previews.get(("pack", run.ref, "8000", ""), build) == 6
    assert previews.get(("pack", run.ref, "8000", ""), build) == 6
    assert (previews.hits, previews.misses) == (2, 6)


def test_the_mark_ignores_readers_and_follows_every_commit(store):
    run, _ = start_run(store, "fix the parser")
    before = change_mark(store.db_path)
    store.rows("SELECT count(*) AS n FROM events")
    assert change_mark(store.db_path) == before
    append_event(store, run.ref, "note", "one more")
    assert change_mark(store.db_path) != before
