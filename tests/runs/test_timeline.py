"""A run's timeline a page at a time (the ui's Runs page), and the review queue that
`resume` names."""

from __future__ import annotations

import pytest

from agentstate.context.resume import build_pack
from agentstate.errors import InvalidInput, NotFound
from agentstate.memory.review import review_queue_counts
from agentstate.runs.log import append_event, list_events, start_run
from agentstate.runs.timeline import event_page


def test_pages_cover_the_run_once_newest_first_with_filters(store):
    run, _ = start_run(store, "goal")
    other, _ = start_run(store, "other", make_current=False)
    for n in range(23):
        append_event(store, run.ref, "note" if n % 3 else "observation", f"event {n}",
                     meta={"session": "a" if n < 10 else "b"})
    append_event(store, other.ref, "note", "not this run")
    everything = [e.ref for e in reversed(list_events(store, run.ref))]

    seen, before, pages = [], None, 0
    while True:
        page = event_page(store, run.ref, before=before, limit=5)
        seen += [e.ref for e in page.events]
        pages += 1
        if page.older is None:
            break
        # Going back up from this page lands on the page before it.
        if before is not None:
            up = event_page(store, run.ref, before=page.newer or None, limit=5)
            assert [e.ref for e in up.events] == seen[-10:-5]
        before = page.older
    assert seen == everything and pages == 5

    notes = event_page(store, run.ref, kind="note", limit=100)
    assert [e.ref for e in notes.events] == [
        e.ref for e in reversed(list_events(store, run.ref, kind="note"))]
    only_a = event_page(store, run.ref, session="a", limit=100)
    assert {e.meta["session"] for e in only_a.events} == {"a"} and len(only_a.events) == 10
    assert notes.sessions == ["a", "b"]


def test_bad_page_arguments_are_refused(store):
    run, _ = start_run(store, "goal")
    with pytest.raises(InvalidInput):
        event_page(store, run.ref, kind="nonsense")
    with pytest.raises(InvalidInput):
        event_page(store, run.ref, limit=0)
    with pytest.raises(NotFound):
        event_page(store, "run:nosuchrun")


def test_resume_names_the_review_queue_only_when_something_waits(store):
    from agentstate.memory.write import remember

    run, _ = start_run(store, "Fix the parser")
    assert review_queue_counts(store, "owner") == {}
    assert "review queue" not in build_pack(store, run.ref, principal="owner").text
    remember(store, "The parser is slow on long dates", kind="fact", source="model",
             principal="owner")
    assert review_queue_counts(store, "owner") == {"candidate": 1}
    pack = build_pack(store, run.ref, principal="owner")
    assert "> memory review queue: 1 candidate" in pack.text
    assert pack.review_queue == {"candidate": 1}
    # A principal that may not read the scope is not told about it.
    remember(store, "My editor is vim", kind="fact", source="model", scope="user",
             principal="owner")
    assert review_queue_counts(store, "owner") == {"candidate": 2}


def test_a_session_start_pack_names_the_review_queue(initialised, cli):
    """The pack a Claude Code session starts with (the real hook command, stdin in)."""
    from tests.integrations.test_hooks_handler import context_of, hook, payload

    cli.ok("run", "start", "Fix the parser")
    start = payload("claude-code", "session_start_startup", initialised)
    assert "review queue" not in context_of(hook("claude-code", start, initialised))
    cli.ok("remember", "The parser is slow on long dates", "--kind", "fact",
           "--source", "model")
    said = context_of(hook("claude-code", start, initialised))
    assert "> memory review queue: 1 candidate waiting for the user's word" in said
