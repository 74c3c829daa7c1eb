"""An answer line whose matched sentence opens with a word pointing back ("It", "They",
"This" …) is completed by the sentence before it — what the pronoun stands for — not the
one after (issue 23, eleventh round)."""

from __future__ import annotations

import pytest

from agentstate.context.compression import evidence_line, question_kind
from agentstate.memory.terms import stem


def _stems(*words: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


# (turn, the question's words, the question, the words its answer needs): the question's
# words are in a sentence opening with a pronoun; what it stands for is the sentence
# before; the sentence after is chatter.
REFERS_BACK = [
    ("Priya: Work has been hectic this month. I started volunteering at the animal "
     "shelter on Sundays. It keeps me sane when the office gets too much. Anyway, how "
     "was your week?",
     ("keep", "sane", "office"), "What keeps Priya sane when the office is too much?",
     ("volunteering", "shelter")),
    ("Leo: We finally repainted the kitchen. The colours we picked were sage green and "
     "cream. They make the room feel twice as big. Can't wait for you to come over!",
     ("make", "kitchen", "feel", "bigger"), "What makes Leo's kitchen feel bigger?",
     ("sage", "green", "cream")),
    ("Omar: Guess what, I signed up for a pottery class downtown. This was my sister's "
     "idea for my birthday present. Hope I don't break everything, haha.",
     ("birthday", "present", "idea"), "What was the idea for Omar's birthday present?",
     ("pottery", "class")),
]


@pytest.mark.parametrize("text, words, question, answer", REFERS_BACK)
def test_a_sentence_pointing_back_is_completed_by_the_one_before(text, words, question,
                                                                 answer):
    line = evidence_line("#4", text, _stems(*words), 60, 0, question_kind(question))
    assert all(w in line.casefold() for w in answer), line
    assert line.startswith("- [#4] ") and text.split(" ", 1)[0] in line  # label, speaker


def test_a_sentence_not_pointing_back_is_still_completed_by_what_follows():
    text = ("Ben: Long week here, honestly. We went to the farmers market on Saturday. "
            "Got peaches, honey and fresh basil there.")
    line = evidence_line("#4", text, _stems("farmer", "market"), 60, 0,
                         question_kind("What did Ben get at the farmers market?"))
    assert all(w in line for w in ("peaches", "honey", "basil")), line
    assert "Long week" not in line


def test_a_turn_opening_with_the_pronoun_has_nothing_before_it():
    # The speaker's first sentence: no sentence before to point at, completed as before.
    text = "Kim: It was the best concert of my life. The band played Blue Harbour twice."
    line = evidence_line("#4", text, _stems("concert", "life"), 40, 0,
                         question_kind("What did the band play at the concert?"))
    assert "Blue Harbour" in line, line
