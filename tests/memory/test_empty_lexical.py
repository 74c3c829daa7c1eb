"""Where none of the best lexical hits holds a content word of the question (only a
speaker's name), the fused ranking goes as deep as the caller's `empty_limit`
(memory/search.py, EMPTY_LEXICAL): the lexical list is a flat band of name matches there,
and the dense ranking is what finds a paraphrased fact, far down it."""

from __future__ import annotations

from agentstate.memory.search import ranked_events
from agentstate.runs.log import append_event, start_run

QUESTION = "Which job did Chidi get offered?"


def _chatter(store, lines: int = 60) -> None:
    run, _ = start_run(store, "a conversation")
    chatter = ["Hey Chidi, how was your week?", "Ha, Chidi, you always say that.",
               "Did you sleep at all, Chidi?", "That's lovely, Chidi!",
               "My plants are dying again, Chidi. Any tips?", "Traffic was awful, Chidi.",
               "We should all meet up soon, Chidi.", "Thanks for asking, Chidi!"]
    for n in range(lines):
        speaker = ("Tara", "Ines", "Chidi")[n % 3]
        append_event(store, run.ref, "note", f"{speaker}: {chatter[n % len(chatter)]} ({n})")


def _length(store, question: str, dense_weight: float | None, empty_limit: int | None) -> int:
    return len(ranked_events(store, question, limit=10, dense_weight=dense_weight,
                             empty_limit=empty_limit))


def test_a_question_only_a_name_matches_goes_deeper(store, embedder):
    _chatter(store)
    # No hit holds "job" or "offered": the fused ranking is empty_limit long...
    assert _length(store, QUESTION, 0.1, 30) == 30
    # ... never shorter than the pool asked for.
    assert _length(store, QUESTION, 0.1, 5) == 10
    assert _length(store, QUESTION, 0.1, None) == 10


def test_a_lexical_hit_holding_the_question_keeps_the_pool(store, embedder):
    _chatter(store)
    run, _ = start_run(store, "another conversation")
    append_event(store, run.ref, "note", "Chidi: The job I got offered is at a bakery.")
    assert _length(store, QUESTION, 0.1, 30) == 10


def test_a_small_room_goes_deeper_too_and_a_lexical_search_does_not(store, embedder):
    # dense_weight 0 (a room below DENSE_FROM_ROOM): the lexical hits are as empty there,
    # and the question is fused with the dense ranking anyway (WEAK_LEXICAL), so it goes as
    # deep. None (the search kept lexical) keeps the pool: no dense ranking to reach.
    _chatter(store)
    assert _length(store, QUESTION, 0.0, 30) == 30
    assert _length(store, QUESTION, None, 30) == 10


def test_in_a_small_room_name_only_hits_give_way_to_a_paraphrase(store, embedder):
    # Name-only turns fill the lexical list, the answer is in other words: in a room of
    # dense weight 0 the answer is in the ranking, not below every "Hey Chidi".
    _chatter(store, 90)
    run, _ = start_run(store, "the answer")
    answer = append_event(store, run.ref, "note",
                          "Chidi: The interviews paid off: they want me as a pastry chef.")
    refs = [h.ref for h in ranked_events(store, QUESTION, limit=10, dense_weight=0.0,
                                         empty_limit=30)]
    assert answer.ref in refs, len(refs)


def test_a_hit_holding_a_word_by_its_stem_keeps_the_pool(store, embedder):
    # "injury" is indexed as injuri, which starts no word of the hit: held all the same
    # (memory/terms.py, stems_held), so the question is not one whose hits hold nothing.
    _chatter(store)
    run, _ = start_run(store, "another conversation")
    append_event(store, run.ref, "note", "Tara: I hope your injury heals soon, Chidi.")
    assert _length(store, "Which injury did Chidi get?", 0.0, 30) == 10
