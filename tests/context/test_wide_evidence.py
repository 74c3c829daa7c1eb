"""From WIDE_FROM_ROOM tokens of room (context/evidence_search.py) the event search asks for
WIDE_POOL times the pool; a smaller room keeps the pool as it was (the dev split lost 0.015
at 4,000 tokens with it)."""

from __future__ import annotations

from agentstate.context import assemble, evidence_search
from agentstate.memory import search
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal


def _asked(store, monkeypatch, budget: int, dense: bool = True) -> list[int]:
    """The pool (`limit`) each event search of a pack asked for."""
    return [limit for limit, _ in _calls(store, monkeypatch, budget, dense)]


def _calls(store, monkeypatch, budget: int, dense: bool = True
           ) -> list[tuple[int, int | None]]:
    """(limit, empty_limit) of each event search of a pack."""
    calls: list[tuple[int, int | None]] = []
    real = search.ranked_events

    def spy(store_, query, *, limit, empty_limit=None, **kw):
        calls.append((limit, empty_limit))
        return real(store_, query, limit=limit, empty_limit=empty_limit, **kw)

    with monkeypatch.context() as patched:
        patched.setattr(search, "ranked_events", spy)
        assemble.build_context(store, query="which cake did Kate bake", budget=budget,
                               save=False, principal=resolve_principal(store), dense=dense)
    return calls


def test_a_large_room_asks_for_a_wider_pool(store, monkeypatch):
    run, _ = start_run(store, "a conversation")
    append_event(store, run.ref, "note", "Kate: I baked a lemon cake.")
    # A small room: the pool as before, dense or not.
    assert _asked(store, monkeypatch, 2_000) == _asked(store, monkeypatch, 2_000, dense=False)
    # A room past WIDE_FROM_ROOM: WIDE_POOL times the pool.
    wide = _asked(store, monkeypatch, 20_000)[0]
    narrow = _asked(store, monkeypatch, 20_000, dense=False)[0]
    wide_pool = narrow * evidence_search.WIDE_POOL
    assert wide == min(evidence_search.EVENT_POOL_MAX, wide_pool) > narrow
    # Below WIDE_FROM_ROOM (a 4,000-token pack), as before.
    assert _asked(store, monkeypatch, 4_000) == _asked(store, monkeypatch, 4_000, dense=False)


def test_a_question_the_lexical_hits_hold_nothing_of_may_go_deeper(store, monkeypatch):
    # The search is offered EMPTY_LEXICAL_POOL times the room's pool for a question none
    # of whose content words the best lexical hits hold (memory/search.py decides that).
    run, _ = start_run(store, "a conversation")
    append_event(store, run.ref, "note", "Kate: I baked a lemon cake.")
    for budget in (4_000, 10_000):  # 10,000: below EVENT_POOL_MAX either way
        narrow = _asked(store, monkeypatch, budget, dense=False)[0]
        assert [empty for _, empty in _calls(store, monkeypatch, budget)] == [
            min(evidence_search.EVENT_POOL_MAX, narrow * evidence_search.EMPTY_LEXICAL_POOL)]
