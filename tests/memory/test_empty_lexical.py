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


def test_a_room_the_dense_ranking_has_no_weight_in_keeps_the_pool(store, embedder):
    # dense_weight 0 (a room below DENSE_FROM_ROOM) or None (lexical only): as before,
    # though the lexical hits are as empty.
    _chatter(store)
    assert _length(store, QUESTION, 0.0, 30) == 10
    assert _length(store, QUESTION, None, 30) == 10
