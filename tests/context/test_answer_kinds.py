"""An answer line's completion chosen by what the question asks for (a time, a name, a
list), the sentence before the matched one where that is what completes it, and names
with initials kept whole (issue 23, tenth round)."""

from __future__ import annotations

import pytest

from agentstate.context.compression import evidence_line, focus_line, question_kind
from agentstate.memory.terms import stem

KINDS = [
    ("When did Mia fly back from Lisbon?", "time"),
    ("How long has Mia been painting?", "time"),
    ("What year did Caroline move?", "time"),
    ("Who is Tim's favourite basketball player?", "name"),
    ("Where did Jon and Gina go hiking?", "name"),
    ("What did Dana call the new cat?", "name"),
    ("What activities does Melanie partake in?", "list"),
    ("What pastries did they have?", "list"),
    ("What kinds of pottery has Mel made?", "list"),
    ("What is Caroline's identity?", ""),
    ("Why did Gina close her store?", ""),
    ("How did John feel about the game?", ""),
]


@pytest.mark.parametrize("question, kind", KINDS)
def test_what_a_question_asks_for(question, kind):
    assert question_kind(question) == kind


def _stems(*words: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


# (turn, the question's words, the question, the words its answer needs). The matched
# sentence opens the turn; the next one is chatter; the answer is in the one after.
FURTHER_ON = [
    ("Mia: The trip to Lisbon was amazing. Everyone loved the food there so much. "
     "We flew back on 12 March after two weeks.",
     ("trip", "lisbon"), "When did Mia fly back from her trip?", ("12", "march")),
    ("Tom: We adopted a puppy at the shelter. He is so playful and sweet with us. "
     "The kids chose Captain Biscuit from their cartoon.",
     ("adopt", "puppy"), "Who did the kids choose for the puppy they adopted?",
     ("captain", "biscuit")),
    ("Ana: I spent the whole weekend baking. It was a lot of work honestly. "
     "I made bread, scones, and two lemon pies.",
     ("weekend", "baking"), "What treats did Ana make on the weekend baking?",
     ("bread", "scones", "pies")),
]


@pytest.mark.parametrize("text, words, question, answer", FURTHER_ON)
def test_the_completion_holds_what_the_question_asks_for(text, words, question, answer):
    kind = question_kind(question)
    assert kind
    line = evidence_line("#4", text, _stems(*words), 40, 0, kind)
    assert all(w in line.casefold() for w in answer), line
    assert "… " in line  # the chatter between is marked as left out
    # By position alone, the next sentence (chatter) completes it and the answer is cut.
    plain = evidence_line("#4", text, _stems(*words), 40, 0)
    assert not all(w in plain.casefold() for w in answer), plain


def test_a_last_sentence_is_completed_by_the_one_before():
    text = ("Maria: Been busy at the shelter and keeping fit. Just started doing aerial "
            "yoga, it's great. Have you tried any other cool workout classes?")
    line = evidence_line("#4", text, _stems("workout", "class"), 40, 0)
    assert line == ("- [#4] Maria: … Just started doing aerial yoga, it's great. "
                    "Have you tried any other cool workout classes?")


def test_a_name_before_the_matched_sentence_completes_it_when_none_follows():
    text = ("Tim: My favourite is Jordan Okafor, no contest. He plays basketball like "
            "nobody else does. it is really something to watch on a big screen.")
    question = "Who is Tim's favourite basketball player?"
    line = evidence_line("#4", text, _stems("basketball", "player"), 40, 0,
                         question_kind(question))
    assert "Jordan Okafor" in line
    assert line.index("Jordan") < line.index("basketball")


def test_a_name_with_initials_is_not_cut_in_two():
    text = ("Tim: J.K. Rowling is such an inspiring writer. Her books are so captivating "
            "with their detail and creative storytelling, it is unreal.")
    assert "J.K. Rowling" in focus_line("#4", text, _stems("inspiring"), 100)
    assert "J.K. Rowling" in evidence_line("#4", text, _stems("inspiring"), 40, 0, "name")


def test_a_pack_completes_its_lines_by_what_the_question_asks_for(store):
    """Through `build_context`: the question's kind reaches the evidence lines (a small
    room, so no hit is whole)."""
    from agentstate.context.assemble import build_context
    from agentstate.runs.log import append_event, start_run
    from agentstate.store.principals import resolve_principal

    run, _ = start_run(store, "a conversation")
    question, answer = "When did Mia fly back from her trip?", ("12", "march")
    text = ("Mia: The trip to Lisbon was amazing, honestly the best trip I have had in "
            "years. Everyone loved the food there so much, the pastries and the grilled "
            "sardines especially. We flew back on 12 March after two weeks.")
    assert len(text) > 160  # longer than a turn shown whole as its line
    append_event(store, run.ref, "note", text)
    for n in range(30):
        append_event(store, run.ref, "note", f"Sam: we talked about the weather, part {n}.")
    other, _ = start_run(store, "now")
    pack = build_context(store, run=other.ref, query=question, budget=400, save=False,
                         principal=resolve_principal(store))
    line = next(li for li in pack.text.splitlines() if "Lisbon" in li)
    assert all(w in line.casefold() for w in answer), line
    assert "sardines" not in line  # a line, not the whole turn
