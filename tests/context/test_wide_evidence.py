"""Where the room lets dense hits in (context/assemble.py, DENSE_FROM_ROOM), the event
search asks for a wider pool (WIDE_POOL); a smaller room keeps the pool as it was (the dev
split's small budgets)."""

from __future__ import annotations

from agentstate.context import assemble
from agentstate.memory import search
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal


def _asked(store, monkeypatch, budget: int, dense: bool = True) -> list[int]:
    limits: list[int] = []
    real = search.ranked_events

    def spy(store_, query, *, limit, **kw):
        limits.append(limit)
        return real(store_, query, limit=limit, **kw)

    with monkeypatch.context() as patched:
        patched.setattr(search, "ranked_events", spy)
        assemble.build_context(store, query="which cake did Kate bake", budget=budget,
                               save=False, principal=resolve_principal(store), dense=dense)
    return limits


def test_a_large_room_asks_for_a_wider_pool(store, monkeypatch):
    run, _ = start_run(store, "a conversation")
    append_event(store, run.ref, "note", "Kate: I baked a lemon cake.")
    # A small room: the pool as before, dense or not.
    assert _asked(store, monkeypatch, 2_000) == _asked(store, monkeypatch, 2_000, dense=False)
    wide = _asked(store, monkeypatch, 8_000)[0]
    narrow = _asked(store, monkeypatch, 8_000, dense=False)[0]
    assert wide == min(assemble.EVENT_POOL_MAX, narrow * assemble.WIDE_POOL) > narrow

