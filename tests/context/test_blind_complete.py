"""Complete items found by meaning alone, in the widened pool of a large room (issue 23,
fourteenth round): below a share of the best they are not complete; above it their answer
line fills its width past an opening that is chatter."""

from __future__ import annotations

from agentstate.context.compression import anchorless, evidence_line, past_opening
from agentstate.context.event_items import BLIND_COMPLETE_SHARE, event_evidence
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

# "What similar sports collectible does Tim own?": no word of the turn but its speaker's
# name is in the question; the answer is three sentences on.
TURN = ("Tim: Wow, what a feeling! You really showed determination and perseverance out "
        "there. Do you have any photos from the game? I'd love to see them. By the way, my "
        "prized possession is a basketball signed by my favourite player.")
STEMS = tuple(stem(w) for w in ("tim", "sports", "collectible", "own"))
MATCHED = "Tim: My sports collectible is on the shelf."


def test_a_turn_matching_only_by_its_speaker_label_is_anchorless():
    assert anchorless(TURN, STEMS)
    assert not anchorless(MATCHED, STEMS)
    # A name inside the turn is a word of it, not its label.
    assert not anchorless("Ann: Thanks, Tim! See you.", STEMS)
    # No stems: nothing anchors, and nothing is called blind.
    assert not anchorless(TURN, ())


def test_a_short_opening_is_chatter_and_is_skipped():
    assert past_opening(TURN).startswith("Tim: You really showed determination")
    # Two sentences: the opening is half the turn, kept.
    two = "Tim: Wow, what a feeling! The basketball is signed."
    assert past_opening(two) == two
    # A long opening says something, kept; so is a turn without a speaker label.
    long_opening = ("Tim: I went to the game with my whole family last weekend in town. "
                    "It was loud. We loved it.")
    assert past_opening(long_opening) == long_opening
    unlabelled = "Wow, what a feeling! It was loud. We loved it."
    assert past_opening(unlabelled) == unlabelled


def test_an_answer_line_past_the_chatter_marks_the_cut():
    line = evidence_line("#4", TURN, STEMS, 140, 160, "", False, past_chatter=True)
    assert line.startswith("- [#4] Tim: … You really showed determination")
    assert "Wow" not in line
    assert evidence_line("#4", TURN, STEMS, 140, 160, "", False).startswith(
        "- [#4] Tim: Wow, what a feeling!")


def _hit(n: int, score: float, text: str = TURN) -> EventHit:
    return EventHit(ref=f"evt:h{n:04d}", run="run:r", kind="note", text=text,
                    source="user", ts="2024-01-02T10:00:00Z", score=score)


def _evidence(*hits: EventHit, widened: bool = True) -> dict[str, object]:
    return {c.ref: c for c in event_evidence(list(hits), superseded=set(), stems=STEMS,
                                             room=8000, widened=widened)}


def test_a_blind_complete_item_shows_its_answer_far_on():
    best, blind = _hit(0, 1.0, MATCHED), _hit(1, BLIND_COMPLETE_SHARE)
    cand = _evidence(best, blind)[blind.ref]
    assert cand.answer_first  # type: ignore[attr-defined]
    line = cand.compressed  # type: ignore[attr-defined]
    assert line.startswith("- [evt:h0001 · 2024-01-02] Tim: … You really showed")
    assert "basketball signed" in line


def test_a_weak_blind_hit_is_not_complete_a_weak_matched_one_is():
    weak = BLIND_COMPLETE_SHARE - 0.01
    best = _hit(0, 1.0, MATCHED)
    blind, matched = _hit(1, weak), _hit(2, weak, MATCHED + " Fun.")
    cands = _evidence(best, blind, matched)
    assert not cands[blind.ref].answer_first  # type: ignore[attr-defined]
    assert cands[matched.ref].answer_first  # type: ignore[attr-defined]
    # Its answer line, given later in room left over, is the usual one: from the opening.
    assert "Wow" in cands[blind.ref].compressed  # type: ignore[attr-defined]


def test_outside_the_widened_pool_a_blind_hit_is_complete_by_its_rank_as_before():
    best, blind = _hit(0, 1.0, MATCHED), _hit(1, BLIND_COMPLETE_SHARE - 0.01)
    cand = _evidence(best, blind, widened=False)[blind.ref]
    assert cand.answer_first  # type: ignore[attr-defined]
    # Its answer line as before: from the opening, one sentence of completion.
    assert cand.compressed.startswith(  # type: ignore[attr-defined]
        "- [evt:h0001 · 2024-01-02] Tim: Wow, what a feeling!")
    assert "basketball" not in cand.compressed  # type: ignore[attr-defined]
