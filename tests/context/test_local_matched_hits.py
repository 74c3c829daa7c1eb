"""Weak hits that share a word with the question, a few turns from a strong matched hit
(issue 23, sixteenth round): in the widened pool of a large room they are complete items
past the complete count, placed as their matched sentence and its completion; elsewhere,
and far from the anchors, they keep their shorter line first."""

from __future__ import annotations

from typing import Any

from agentstate.context.event_items import COMPLETE_PER, event_evidence
from agentstate.context.locality import LOCAL_REACH
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem
from agentstate.runs.log import append_event, start_run
from agentstate.runs.lookups import event_positions

ROOM = 8_000
COUNT = ROOM // COMPLETE_PER  # hits ranked past this many are not complete by their rank
STEMS = tuple(stem(w) for w in ("maria", "plan", "shelter", "fundraiser"))
ANCHOR = "Maria: The shelter fundraiser is on Saturday, and I plan the whole day."
# Two more strong matched hits, far from the weak one: the first three anchor.
OTHER_ANCHOR = "Maria: I plan to visit the shelter again next month."
# "What is Maria planning for the shelter fundraiser?": its shorter line is the opening
# (the speaker's name counts there as much as "shelter" in the next sentence), the answer
# is the sentence after the matched one, and a fourth sentence is there for a filled line.
LOCAL = ("Maria: Thanks, John! Appreciate your help with the shelter. We need to get the "
         "word out about the chili cook-off and the ring toss. Here's the poster we made "
         "last night, with the date and the place on it in big letters.")
FILLER = "John: Wow, that sounds like a lot of fun, honestly."


def _conversation(store: Any, local_at: int) -> tuple[list[EventHit], dict[str, int]]:
    """A run of one conversation in a real store: the anchors at turns 10, 60 and 80, the
    weak matched hit at `local_at`, the ranking's filler far away (turns 100 on); hits in
    rank order — the anchors, fillers down to the complete count, then the weak hit — and
    each hit's place in the run."""
    run, _ = start_run(store, "a conversation between Maria and John")
    texts = {10: ANCHOR, 60: OTHER_ANCHOR, 80: OTHER_ANCHOR, local_at: LOCAL}
    ids: dict[int, str] = {}
    for turn in range(1, 100 + COUNT):
        event = append_event(store, run.ref, "note", texts.get(turn, FILLER))
        ids[turn] = event.ref.removeprefix("evt:")
    where = event_positions(store, list(ids.values()))
    seqs = {f"evt:{eid}": seq for eid, (_, seq) in where.items()}
    by_turn = {turn: f"evt:{eid}" for turn, eid in ids.items()}

    def hit(turn: int, score: float) -> EventHit:
        return EventHit(ref=by_turn[turn], run=run.ref, kind="note",
                        text=texts.get(turn, FILLER), source="user",
                        ts="2024-01-02T10:00:00Z", score=score)

    hits = [hit(10, 1.0), hit(60, 0.9), hit(80, 0.8),
            *(hit(100 + n, 0.3) for n in range(COUNT - 3)), hit(local_at, 0.2)]
    return hits, seqs


def _weak(store: Any, local_at: int, widened: bool = True) -> Any:
    hits, seqs = _conversation(store, local_at)
    assert len(hits) == COUNT + 1  # the weak hit is ranked just past the count
    cands = event_evidence(hits, superseded=set(), stems=STEMS, room=ROOM, seqs=seqs,
                           widened=widened)
    return next(c for c in cands if c.ref == hits[-1].ref)


def test_a_weak_matched_hit_beside_an_anchor_is_complete(store):
    cand = _weak(store, 10 + LOCAL_REACH)
    assert cand.answer_first
    # Placed first as its answer line: the matched sentence and its completion ...
    assert "chili cook-off and the ring toss" in cand.compressed
    assert "chili" not in cand.short  # the shorter line shows the opening
    # ... not filled, and not cut past the opening as a blind hit's line is.
    assert "poster" not in cand.compressed
    assert cand.compressed.startswith(f"- [#{10 + LOCAL_REACH} · 2024-01-02] Maria: … Appreciate")


def test_a_weak_matched_hit_past_the_reach_is_not_complete(store):
    cand = _weak(store, 10 + LOCAL_REACH + 1)
    assert not cand.answer_first
    assert "Thanks, John!" in cand.short  # its shorter line first, as before


def test_outside_the_widened_pool_a_weak_matched_hit_is_not_complete(store):
    assert not _weak(store, 10 + LOCAL_REACH, widened=False).answer_first
