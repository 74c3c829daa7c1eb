"""Where no hit is shown whole (a small room), the room complete items take goes to the
strongest (issue 23, fourteenth round): a complete item scoring FULL_LINE_SHARE of the best
fills its answer line both ways — after its completion, then before the matched sentence,
passing questions over — and a hit below COMPLETE_FLOOR of the best is not complete."""

from __future__ import annotations

from agentstate.context.compression import ANSWER_WIDTH, evidence_line
from agentstate.context.event_items import (
    COMPLETE_FLOOR,
    FULL_LINE_SHARE,
    event_evidence,
)
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

# The answer opens the turn; the question's words are two sentences on.
PIZZA = ("John: We made pizza! We had so much fun making them together. It was great "
         "picking out toppings and sharing a tasty meal with family. Have you made anything "
         "lately?")
# The matched sentence points back (completed by the one before); the answer follows it.
FRIENDS = ("Caroline: Thanks, Melanie. It's definitely changed them. Some close friends kept "
           "supporting me, but a few weren't able to handle it.")


def _stems(*words: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


def _line(text: str, stems: tuple[str, ...], around: bool) -> str:
    return evidence_line("#4", text, stems, 100, 0, "", True, around)


def test_a_line_filled_around_shows_the_sentences_before_the_matched_one():
    stems = _stems("meal", "family")
    assert "pizza" not in _line(PIZZA, stems, False)
    line = _line(PIZZA, stems, True)
    assert line == ("- [#4] John: We made pizza! We had so much fun making them together. "
                    "It was great picking out toppings and sharing a tasty meal with family.")


def test_a_line_completed_by_the_sentence_before_is_filled_after_it():
    stems = _stems("changed")
    assert "friends" not in _line(FRIENDS, stems, False)
    assert _line(FRIENDS, stems, True).endswith(
        "It's definitely changed them. Some close friends kept supporting me, but a few "
        "weren't able to handle it.")


def test_a_question_is_passed_over_and_marked():
    text = ("Maria: I went to the shelter today. It was busy all morning. Do you remember "
            "the one on Elm Street? I cooked soup for forty people there.")
    line = _line(text, _stems("shelter"), True)
    assert line == ("- [#4] Maria: I went to the shelter today. It was busy all morning. … "
                    "I cooked soup for forty people there.")


def test_a_line_filled_around_stays_within_its_width():
    text = " ".join(f"Sentence {i} about the harbour pilots and their long day?" if i % 3
                    else f"Sentence {i} says the pilot came home late." for i in range(30))
    line = _line(text.replace("Sentence 15", "Kate met the pilot"), _stems("kate"), True)
    body = line.removeprefix("- [#4] ")
    assert len(body) <= ANSWER_WIDTH * 100 + 100 // 2 + 12, len(body)
    # Whole sentences after it first, up to the width; a question only as the completion.
    assert "Sentence 18 says" in body and "Sentence 27" not in body
    assert body.count("?") == 1 and "Sentence 16 about" in body


def _hits(scores: list[float]) -> list[EventHit]:
    return [EventHit(ref=f"evt:h{i:04d}", run="run:r", kind="note", text=PIZZA, source="user",
                     ts="2024-01-02T10:00:00Z", score=score)
            for i, score in enumerate(scores)]


def test_only_the_strongest_complete_items_fill_around_and_weak_ones_are_not_complete():
    scores = [1.0, FULL_LINE_SHARE, FULL_LINE_SHARE - 0.01, COMPLETE_FLOOR,
              COMPLETE_FLOOR - 0.01]
    # 300 tokens of room: no hit whole, six complete items by count — all five here.
    cands = event_evidence(_hits(scores), superseded=set(), stems=_stems("meal", "family"),
                           room=300)
    by_ref = {c.ref: c for c in cands}
    first, share, below, floor, weak = (by_ref[f"evt:h{i:04d}"] for i in range(5))
    assert all(c.compressed and "pizza" in c.compressed for c in (first, share))
    assert below.compressed and "pizza" not in below.compressed
    assert [c.answer_first for c in (first, share, below, floor, weak)] == \
        [True, True, True, True, False]
    # 2,000 tokens of room (hits whole): every hit of the count complete, none filled.
    cands = event_evidence(_hits(scores), superseded=set(), stems=_stems("meal", "family"),
                           room=2000)
    assert all(c.answer_first for c in cands[3:])
    assert not any(c.compressed and "pizza" in c.compressed for c in cands[3:])
