"""`list_memories` in pages (the ui's memory page): every page read on the index alone and
merged across statuses gives the same rows, in the same order, as the whole list."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentstate.errors import InvalidInput
from agentstate.memory.forget import forget
from agentstate.memory.model import list_memories
from agentstate.memory.write import remember
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal


@pytest.fixture
def mixed(store):
    """Active, contested, candidate, expired and forgotten versions, interleaved in time;
    some written in one clock tick (ties broken by row), the rest minutes apart."""
    run, _ = start_run(store, "fix the cache")
    who = resolve_principal(store)
    for n in range(14):
        if n % 4 == 3:  # a value observed, then contradicted by the model with evidence
            seen = append_event(store, run.ref, "observation", f"slot {n} holds blue")
            remember(store, f"slot {n} holds blue", kind="fact", key=f"slot-{n}",
                     source=seen.ref, principal=who)
            store.clock.advance(timedelta(minutes=2))
            said = append_event(store, run.ref, "observation", f"slot {n} holds red")
            remember(store, f"slot {n} holds red", kind="fact", key=f"slot-{n}",
                     source="model", evidence=[said.ref], principal=who)
        kwargs = {"source": "model"} if n % 4 == 1 else {}
        if n % 5 == 2:
            kwargs["ttl"] = "1h"
        done = remember(store, f"fact number {n}: the cache key uses field {n}", kind="fact",
                        principal=who, **kwargs)
        if n % 6 == 5:
            forget(store, done.ref, reason="wrong", principal=who)
        if n % 3:
            store.clock.advance(timedelta(minutes=n))
    store.clock.advance(timedelta(hours=3))  # the 1h ones have expired
    return store


@pytest.mark.parametrize("status", [None, "all", "active", "contested", "candidate",
                                    "expired", "forgotten"])
def test_pages_put_together_are_the_whole_list(mixed, status):
    who = resolve_principal(mixed)
    whole = list_memories(mixed, status=status, principal=who)
    assert whole, status
    assert [(m.created, m.row) for m in whole] == sorted(
        ((m.created, m.row) for m in whole), reverse=True)
    for size in (1, 2, 3, 5):
        pages, offset = [], 0
        while page := list_memories(mixed, status=status, limit=size, offset=offset,
                                   principal=who):
            assert len(page) <= size
            pages += page
            offset += size
        assert [m.ref for m in pages] == [m.ref for m in whole], (status, size)


def test_a_negative_offset_is_refused(store):
    with pytest.raises(InvalidInput):
        list_memories(store, limit=5, offset=-1, principal=resolve_principal(store))
