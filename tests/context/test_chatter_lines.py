"""Where no hit is whole (a small room), a weak hit's shorter line does not show an opening
that only its speaker label matched, and the weakest complete items' answer lines are
completed, not filled (issue 23, sixteenth round)."""

from __future__ import annotations

from agentstate.context.compression import (
    SHORT_LINE_CHATTER,
    evidence_line,
    opens_with_chatter,
)
from agentstate.context.event_items import (
    COMPLETE_FILL_SHARE,
    COMPLETE_FLOOR,
    WEAK_HIT_CHARS,
    event_evidence,
    fills_complete_line,
)
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

STEMS = tuple(stem(w) for w in ("melanie", "bowl", "kiln"))
BOWL = "Melanie: Thanks, Caroline! Yeah, I made this bowl in my class. It took some work."
# The label ties with the bowl sentence, but the opening says something: not chatter.
AFTERNOON = "Melanie: We spent the whole afternoon at the studio. I made a bowl there."
GLAZE = ("Nate: I fired a bowl in the kiln yesterday. It came out glossy green. The glaze ran "
         "a little at the rim. I gave it to my sister for her birthday. She loved the colour "
         "and even the cracks.")


def _body(line: str | None) -> str:
    assert line is not None
    return line.split("] ", 1)[1]


def test_an_opening_is_chatter_when_short_unasked_and_labelled():
    assert opens_with_chatter(BOWL, STEMS)
    assert not opens_with_chatter(AFTERNOON, STEMS)  # longer than SHORT_LINE_CHATTER
    long_opening = "Jon: " + "x" * (SHORT_LINE_CHATTER + 1) + "! I made a bowl."
    assert not opens_with_chatter(long_opening, STEMS)
    # "Thanks, Caroline!" is what a question about Caroline's thanks asks for.
    assert not opens_with_chatter(BOWL, (*STEMS, stem("caroline")))
    assert not opens_with_chatter(BOWL.removeprefix("Melanie: "), STEMS)  # no label
    assert not opens_with_chatter("Melanie: Thanks, Caroline!", STEMS)  # one sentence


def _hit(n: int, score: float, text: str) -> EventHit:
    return EventHit(ref=f"evt:h{n:04d}", run="run:r", kind="note", text=text,
                    source="user", ts="2024-01-02T10:00:00Z", score=score)


def _candidates(room: int, *hits: tuple[float, str]) -> list:
    best = _hit(0, 1.0, "Melanie: The kiln at the studio finally works. What did you get?")
    others = [_hit(n, score, text) for n, (score, text) in enumerate(hits, start=1)]
    return event_evidence([best, *others], superseded=set(), stems=STEMS, room=room)[1:]


def test_in_a_small_room_a_weak_hit_shows_the_sentence_past_its_chatter():
    chatter, plain = _candidates(300, (COMPLETE_FLOOR - 0.01, BOWL),
                                 (COMPLETE_FLOOR - 0.02, AFTERNOON))
    line = _body(chatter.short)
    assert line == "Melanie: … Yeah, I made this bowl in my class. …"
    assert len(line) <= WEAK_HIT_CHARS + len("Melanie: … ") + 2
    # An opening that is not chatter is chosen as before (the first on a tie).
    assert _body(plain.short).startswith("Melanie: We spent the whole afternoon")


def test_a_stronger_hit_or_a_large_room_keeps_the_opening():
    (strong,) = _candidates(300, (COMPLETE_FLOOR + 0.05, BOWL))
    assert _body(strong.short) == "Melanie: Thanks, Caroline! …"
    (large,) = _candidates(2_000, (COMPLETE_FLOOR - 0.01, BOWL))
    assert _body(large.short) == "Melanie: Thanks, Caroline! …"


def test_a_complete_line_fills_its_width_only_from_the_fill_share():
    assert not fills_complete_line(0, COMPLETE_FILL_SHARE - 0.01)
    assert fills_complete_line(0, COMPLETE_FILL_SHARE)
    assert not fills_complete_line(3, 1.0)  # hits shown whole: lines are never filled
    below, at = _candidates(300, (COMPLETE_FILL_SHARE - 0.05, GLAZE),
                            (COMPLETE_FILL_SHARE, GLAZE))
    label = "evt:h0001 · 2024-01-02"
    assert below.answer_first and at.answer_first  # both complete items
    assert below.compressed == evidence_line(label, GLAZE, STEMS, 100, 160, "", False)
    assert _body(below.compressed) == ("Nate: I fired a bowl in the kiln yesterday. "
                                       "It came out glossy green.")
    assert _body(at.compressed).startswith(_body(below.compressed) + " The glaze ran")
    # Where hits are whole, neither is filled.
    for cand in _candidates(2_000, (COMPLETE_FILL_SHARE - 0.05, GLAZE),
                            (0.9, GLAZE)):
        assert "The glaze" not in _body(cand.compressed)
