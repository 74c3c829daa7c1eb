"""Where the room lets dense hits in (context/assemble.py, DENSE_FROM_ROOM), the event
search asks for a wider pool (WIDE_POOL) and neighbour turns holding nothing of the
question are quieted (QUIET_NEIGHBOUR_SHARE); a smaller room keeps both as they were
(the dev split's small budgets)."""

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


def _neighbour_scores(store, budget: int) -> dict[str, float]:
    pack = assemble.build_context(store, query="which cake did Kate bake", budget=budget,
                                  save=False, principal=resolve_principal(store))
    return {e.ref: e.score for e in pack.manifest if "neighbour" in (e.note or "")}


def test_chatter_beside_a_hit_is_quieted_only_in_a_large_room(store, monkeypatch):
    from agentstate.memory import dense

    # Lexical hits only (no model): in a store this small every turn would be a dense hit,
    # and a hit is never a neighbour. The quieting goes with the room, not the model.
    monkeypatch.setattr(dense, "current_model", lambda: None)
    run, _ = start_run(store, "a conversation")
    before = append_event(store, run.ref, "note", "Emi: Good to see you again.")
    append_event(store, run.ref, "note", "Kate: I baked a lemon cake for the fair.")
    append_event(store, run.ref, "note", "Emi: Was the cake a hit with Kate's friends?")
    small, large = _neighbour_scores(store, 1_000), _neighbour_scores(store, 8_000)
    assert small[before.ref] > 0
    assert large[before.ref] == round(small[before.ref] * assemble.QUIET_NEIGHBOUR_SHARE, 4)
