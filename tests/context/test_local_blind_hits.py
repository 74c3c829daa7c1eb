"""Hits found by meaning alone a few turns from a strong matched hit (issue 23, fifteenth
round): in the widened pool of a large room they are complete items, whatever their share,
their answer line past an opening that is chatter and not filled."""

from __future__ import annotations

from agentstate.context.event_items import BLIND_COMPLETE_SHARE, event_evidence
from agentstate.context.locality import LOCAL_ANCHORS, LOCAL_REACH, beside_anchors
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

# "What did Maria donate to the shelter?": the turn answering it shares no word with the
# question past its speaker's name; the answer is in its second sentence, and a fourth
# sentence is there for a filled line to take.
BLIND = ("Maria: Hey John, long time! Yesterday I gave my old car away to the people I "
         "volunteer with downtown. They were so happy about it, and so were we. How's the "
         "campaign going? I'm keen to hear about it, truly, every last bit of it.")
MATCHED = "Maria: The shelter asked for donations this winter."
STEMS = tuple(stem(w) for w in ("maria", "donate", "shelter"))
WEAK = BLIND_COMPLETE_SHARE - 0.1


def _hit(n: int, score: float, text: str = BLIND, run: str = "run:r") -> EventHit:
    return EventHit(ref=f"evt:h{n:04d}", run=run, kind="note", text=text, source="user",
                    ts="2024-01-02T10:00:00Z", score=score)


def test_a_blind_hit_within_reach_of_an_anchor_is_local():
    anchor, near, far = _hit(0, 1.0, MATCHED), _hit(1, WEAK), _hit(2, WEAK)
    other_run = _hit(3, WEAK, run="run:s")
    seqs = {anchor.ref: 40, near.ref: 40 + LOCAL_REACH, far.ref: 40 + LOCAL_REACH + 1,
            other_run.ref: 41}
    local = beside_anchors([anchor, near, far, other_run], seqs, STEMS)
    assert near.ref in local
    assert far.ref not in local
    assert other_run.ref not in local  # the same place in another run is elsewhere


def test_only_the_first_matched_hits_anchor():
    matched = [_hit(n, 1.0 - n / 100, MATCHED) for n in range(LOCAL_ANCHORS + 1)]
    blind = _hit(50, WEAK)
    # Each matched hit a conversation apart; the blind hit beside the one past the anchors.
    seqs = {h.ref: 100 * n for n, h in enumerate(matched)}
    seqs[blind.ref] = 100 * LOCAL_ANCHORS + 1
    assert blind.ref not in beside_anchors([*matched, blind], seqs, STEMS)
    # Blind hits ranked above them take no anchor's place.
    seqs[blind.ref] = 100 * (LOCAL_ANCHORS - 1) + 1
    blind_first = [_hit(60 + n, 1.0) for n in range(LOCAL_ANCHORS)]
    seqs.update({h.ref: 1_000 + 100 * n for n, h in enumerate(blind_first)})
    assert blind.ref in beside_anchors([*blind_first, *matched, blind], seqs, STEMS)


def test_nothing_is_local_without_stems_or_places():
    anchor, blind = _hit(0, 1.0, MATCHED), _hit(1, WEAK)
    assert beside_anchors([anchor, blind], {anchor.ref: 1, blind.ref: 2}, ()) == frozenset()
    # A hit whose place in its run is unknown is never local.
    assert blind.ref not in beside_anchors([anchor, blind], {anchor.ref: 1}, STEMS)


def _evidence(*hits: EventHit, seqs: dict[str, int], widened: bool = True
              ) -> dict[str, object]:
    return {c.ref: c for c in event_evidence(list(hits), superseded=set(), stems=STEMS,
                                             room=8000, widened=widened, seqs=seqs)}


def test_a_weak_local_blind_hit_is_complete_with_its_answer_past_the_chatter():
    anchor, blind = _hit(0, 1.0, MATCHED), _hit(1, WEAK)
    cand = _evidence(anchor, blind, seqs={anchor.ref: 7, blind.ref: 9})[blind.ref]
    assert cand.answer_first  # type: ignore[attr-defined]
    line = cand.compressed  # type: ignore[attr-defined]
    assert line.startswith("- [#9 · 2024-01-02] Maria: … Yesterday I gave my old car")
    assert "Hey John" not in line
    # Not filled: the sentence past the chatter and its completion, not the one after.
    assert "keen to hear" not in line


def test_a_weak_blind_hit_far_from_the_anchors_is_not_complete():
    anchor, blind = _hit(0, 1.0, MATCHED), _hit(1, WEAK)
    cand = _evidence(anchor, blind, seqs={anchor.ref: 7, blind.ref: 7 + 40})[blind.ref]
    assert not cand.answer_first  # type: ignore[attr-defined]


def test_outside_the_widened_pool_locality_changes_nothing():
    anchor, blind = _hit(0, 1.0, MATCHED), _hit(1, WEAK)
    seqs = {anchor.ref: 7, blind.ref: 9}
    cand = _evidence(anchor, blind, seqs=seqs, widened=False)[blind.ref]
    # Complete by its rank as before, its answer line from the opening.
    assert cand.answer_first  # type: ignore[attr-defined]
    assert "Hey John" in cand.compressed  # type: ignore[attr-defined]
