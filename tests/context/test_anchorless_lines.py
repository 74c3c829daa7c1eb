"""A strong hit sharing no word with the question (found by meaning alone) shows its
longest sentence, not its opening chatter (issue 23, thirteenth round)."""

from __future__ import annotations

from agentstate.context.compression import focus_line
from agentstate.context.event_items import CONFIDENT_SHARE, event_evidence
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

# "What is Tara learning to play?": no word of the turn but its speaker's name is in the
# question; the answer is in the longest sentence, not the opening.
TURN = ("Tara: You'll laugh at this. I signed up for lessons. The cello is so much harder "
        "than it looks on the videos I watched.")
STEMS = tuple(stem(w) for w in ("tara", "learning", "play"))


def test_an_anchorless_line_shows_the_longest_sentence():
    line = focus_line("#4", TURN, STEMS, 140, anchorless=True)
    assert line == ("- [#4] Tara: … The cello is so much harder than it looks on the videos "
                    "I watched.")
    # Without the rule, the opening: the speaker's name in the label is its only match.
    assert focus_line("#4", TURN, STEMS, 140) == "- [#4] Tara: You'll laugh at this. …"


def test_the_longest_sentence_is_cut_to_the_line_s_width():
    line = focus_line("#4", TURN, STEMS, 30, anchorless=True)
    assert line.startswith("- [#4] Tara: … The cello is so") and line.endswith(" …")
    assert len(line.removeprefix("- [#4] Tara: … ")) <= 32


def test_a_sentence_sharing_a_word_is_kept_as_before():
    text = ("Tara: Learning new chords. Long day though. The cello is so much harder than "
            "it looks on the videos I watched.")
    line = focus_line("#4", text, STEMS, 140, anchorless=True)
    assert line == focus_line("#4", text, STEMS, 140) == "- [#4] Tara: Learning new chords. …"


def test_an_opening_that_is_the_longest_sentence_is_the_line():
    text = "Tara: I signed up for cello lessons at the community centre downtown. Fun!"
    assert focus_line("#4", text, STEMS, 140, anchorless=True) == \
        focus_line("#4", text, STEMS, 140)
    one = "Tara: nothing to see here at all"
    assert focus_line("#4", one, STEMS, 140, anchorless=True) == f"- [#4] {one}"


def _hit(n: int, score: float, text: str = TURN) -> EventHit:
    return EventHit(ref=f"evt:h{n:04d}", run="run:r", kind="note", text=text,
                    source="user", ts="2024-01-02T10:00:00Z", score=score)


def test_only_hits_at_the_confident_share_of_the_best_are_anchorless():
    matched = "Tara: I play the cello now."
    at_share = _hit(1, CONFIDENT_SHARE)
    below = _hit(2, CONFIDENT_SHARE - 0.01)
    cands = {c.ref: c for c in event_evidence(
        [_hit(0, 1.0, matched), at_share, below], superseded=set(), stems=STEMS, room=4000)}
    assert cands[at_share.ref].short is not None and "cello" in cands[at_share.ref].short
    assert cands[below.ref].short is not None
    assert cands[below.ref].short.endswith("Tara: You'll laugh at this. …")
    # A neighbour keeps its opening: it is there for the hit next to it, not for its words.
    neighbour = _hit(3, 0.9)
    neighbour.near = at_share.ref  # type: ignore[attr-defined]
    cand = event_evidence([_hit(0, 1.0, matched)], [neighbour], superseded=set(),
                          stems=STEMS, room=4000)[1]
    assert cand.short is not None and "cello" not in cand.short


def test_a_long_speaker_name_does_not_make_the_opening_the_longest():
    text = "Maximiliana-Theodora: Oh wow, so fun. We bought a cello today."
    assert focus_line("#4", text, STEMS, 140, anchorless=True) == \
        "- [#4] Maximiliana-Theodora: … We bought a cello today."
