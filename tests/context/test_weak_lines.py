"""Where no hit is whole (a small room), the pack's weakest one-line items cost less and
show more (issue 23, fifteenth round): a reply or a weak hit whose shorter line would show
its opening chatter shows the sentence after it; other neighbours and weak hits are cut
shorter; and answer lines are given room at SMALL_ROOM_ANSWER_SHARE of their item's score."""

from __future__ import annotations

from agentstate.config import TokenSettings
from agentstate.context.budgeter import allocate
from agentstate.context.candidates import Candidate
from agentstate.context.compression import SHORT_LINE_CHATTER, short_past_chatter
from agentstate.context.event_items import (
    COMPLETE_FLOOR,
    NEIGHBOUR_CHARS,
    NEXT_WEIGHT,
    REPLY_WEIGHT,
    SMALL_ROOM_ANSWER_SHARE,
    WEAK_HIT_CHARS,
    event_evidence,
)
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem
from agentstate.tokens import counter_for

THANKS = ("Caroline: Thanks, Melanie! This necklace is a gift from my grandma in my home "
          "country, Sweden. It stands for love.")
LONG = ("Gina: Our whole team kept dancing at the festival after midnight, out on the street "
        "with the drums and the lights!")
STEMS = tuple(stem(w) for w in ("necklace", "grandma", "kiln"))


def _body(line: str | None) -> str:
    assert line is not None
    return line.split("] ", 1)[1]


def test_a_short_chatter_opening_is_skipped_in_a_shorter_line():
    line = short_past_chatter("#4", THANKS, (stem("sweden"),), 100)
    assert line == ("- [#4] Caroline: … This necklace is a gift from my grandma in my home "
                    "country, Sweden. …")
    # Two sentences are enough (an answer line skips only in turns of three or more).
    two = "Joanna: Thanks! It's dairy-free vanilla with coconut cream frosting."
    assert "coconut" in _body(short_past_chatter("#4", two, (), 100))


def test_an_opening_is_not_chatter_when_long_asked_about_or_unlabelled():
    long_opening = "Jon: " + "x" * (SHORT_LINE_CHATTER + 1) + "! The shop opens today."
    assert short_past_chatter("#4", long_opening, (), 100) is None
    # "Thanks, Melanie!" is what a question about Melanie's thanks asks for.
    assert short_past_chatter("#4", THANKS, (stem("melanie"),), 100) is None
    assert short_past_chatter("#4", THANKS.removeprefix("Caroline: "), (), 100) is None
    assert short_past_chatter("#4", "Nate: Yep!", (), 100) is None  # one sentence


def _hit(n: int, score: float, text: str, near: str | None = None,
         weight: float | None = None) -> EventHit:
    hit = EventHit(ref=f"evt:h{n:04d}", run="run:r", kind="note", text=text, source="user",
                   ts="2024-01-02T10:00:00Z", score=score)
    if near:
        hit.near = near  # type: ignore[attr-defined]
        hit.weight = weight  # type: ignore[attr-defined]
    return hit


def _shorter(room: int) -> dict[str, Candidate]:
    best = _hit(0, 1.0, "Melanie: The kiln at the studio finally works. What did you get?")
    weak_blind = _hit(1, COMPLETE_FLOOR - 0.01, "Maria: Thanks, John! It had salads, "
                      "sandwiches and homemade desserts for the whole street.")
    weak_matched = _hit(2, COMPLETE_FLOOR - 0.01, "Nate: I fired a bowl in the kiln "
                        "yesterday and it came out glossy green with a few cracks.")
    reply = _hit(3, REPLY_WEIGHT, THANKS, near=best.ref, weight=REPLY_WEIGHT)
    other = _hit(4, NEXT_WEIGHT, LONG, near=best.ref, weight=NEXT_WEIGHT)
    cands = event_evidence([best, weak_blind, weak_matched], [reply, other], superseded=set(),
                           stems=STEMS, room=room)
    return {c.ref: c for c in cands}


def test_in_a_small_room_weak_lines_skip_chatter_or_are_cut_shorter():
    cands = _shorter(300)
    assert _body(cands["evt:h0003"].short).startswith("Caroline: … This necklace")
    assert _body(cands["evt:h0001"].short).startswith("Maria: … It had salads")
    # Cut shorter: the turn's first words (a weak hit's window around its match).
    other = _body(cands["evt:h0004"].short).removesuffix(" …")
    assert len(other) <= NEIGHBOUR_CHARS and LONG.startswith(other)
    weak = _body(cands["evt:h0002"].short).removesuffix(" …")
    assert len(weak) <= WEAK_HIT_CHARS and "kiln" in weak
    assert {c.answer_share for c in cands.values()} == {SMALL_ROOM_ANSWER_SHARE}


def test_in_a_large_room_weak_lines_are_as_before():
    cands = _shorter(2_000)
    assert _body(cands["evt:h0003"].short) == "Caroline: Thanks, Melanie! …"
    assert _body(cands["evt:h0001"].short) == "Maria: Thanks, John! …"
    assert _body(cands["evt:h0004"].short) == LONG
    assert {c.answer_share for c in cands.values()} == {None}


def _pair(share: float | None, extra: str = " kiln glaze cracks green" * 3
          ) -> list[Candidate]:
    """A strong item with a long answer line (`extra` on its shorter one) and one scoring
    0.45 of it."""
    out = []
    for n, (score, more) in enumerate(((1.0, extra), (0.45, ""))):
        short = f"- [#{n}] Nate: the bowl came out of the kiln today …"
        out.append(Candidate(ref=f"evt:{n:06d}", cls="evidence", section="evidence",
                             score=score, full=None, compressed=short[:-2] + more if more
                             else short, short=short if more else None,
                             pointer=f"- evt:{n:06d}", order=(-score, f"evt:{n:06d}"),
                             answer_share=share))
    return out


def test_an_answer_line_comes_before_items_below_its_share():
    count = counter_for(TokenSettings()).count
    # Room for both shorter lines and not the answer line too.
    budget = allocate(_pair(None, ""), 2_000, count).tokens
    usual = _pair(None)  # at 0.4 of 1.0 the answer line comes after the 0.45 item
    allocate(usual, budget + 2, count)
    assert usual[1].decision == "compressed" and usual[0].form == usual[0].short
    small = _pair(SMALL_ROOM_ANSWER_SHARE)  # at 0.5, before it: the item gives way
    allocate(small, budget + 2, count)
    assert small[0].form == small[0].compressed and small[1].decision != "compressed"
