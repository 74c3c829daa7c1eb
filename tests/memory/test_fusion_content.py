"""Lexical hits in the fusion that hold nothing of the question but a name are weighed
down (memory/hit_strength.py, `_content_weighted`): a hit matching only a speaker's name no
longer outranks a dense neighbour that says what was asked, in other words."""

from __future__ import annotations

from agentstate.memory.event_hit import EventHit
from agentstate.memory.hit_strength import NAME_ONLY_SHARE, _content_weighted
from agentstate.memory.search import ranked_events
from agentstate.runs.log import append_event, start_run


def _hit(text: str, score: float = 1.0) -> EventHit:
    return EventHit(f"evt:{abs(hash(text)) % 10**8}", "run:r", "note", text, "user", "",
                    score)


def test_a_hit_is_weighed_by_the_content_words_it_holds_names_aside():
    hits = [_hit("Tara: Hey Chidi, how was your week?"),
            _hit("Chidi: I got hired at the bakery.", 0.5),
            _hit("Chidi: what a role, and I got hired!", 0.5)]
    weighted = _content_weighted("Which role was Chidi hired for?", hits)
    # "Chidi" is a speaker among the hits: a name, not content. Content: role, hired. A
    # hit holding any of it keeps its score; the one holding only the name is weighed down.
    assert [h.score for h in weighted] == [NAME_ONLY_SHARE, 0.5, 0.5]
    assert [h.ref for h in weighted] == [h.ref for h in hits]  # order is the fusion's job


def test_a_word_anywhere_in_a_long_turn_counts_folded_and_inflected_but_not_inside_a_word():
    filler = "We talked about the weather and the trains for a while. " * 12
    hits = [_hit(f"Chidi: {filler}My parole ended, I was rehired. Then ROLES came up: the one "
                 "I was HIRED for.", 0.8),
            _hit(f"Chidi: {filler}Her parole officer rehired nobody.", 0.8)]
    weighted = _content_weighted("Which role was Chidi hired for?", hits)
    # The first holds both words late in a long text, upper-case and inflected, after the
    # same letters inside other words: it keeps its score. The second holds them only
    # inside other words ("parole", "rehired"): a name.
    assert [h.score for h in weighted] == [0.8, round(0.8 * NAME_ONLY_SHARE, 4)]


def test_a_question_of_names_alone_keeps_the_lexical_scores():
    hits = [_hit("Tara: Hey Chidi!"), _hit("Chidi: hello Tara", 0.3)]
    assert _content_weighted("Chidi and Tara?", hits) == hits


def _chatter(store):
    run, _ = start_run(store, "a conversation")
    chatter = ["Hey Chidi, how was your week?", "Ha, Chidi, you always say that.",
               "Did you sleep at all, Chidi?", "That's lovely, Chidi!",
               "My plants are dying again, Chidi. Any tips?"]
    for n in range(6):
        for line in chatter:
            append_event(store, run.ref, "note", f"{('Tara', 'Ines')[n % 2]}: {line}")
        append_event(store, run.ref, "note", "Chidi: Traffic was awful this morning.")
    return append_event(store, run.ref, "note",
                        "Chidi: The interviews paid off: they want me as a pastry chef.")


def test_a_paraphrase_outranks_turns_that_only_name_the_speaker(store, embedder):
    answer = _chatter(store)
    hits = ranked_events(store, "Which job did Chidi get offered?", limit=40,
                         dense_weight=0.5)
    refs = [h.ref for h in hits]
    # Every other turn holds the name and nothing else of the question; the answer holds
    # neither "job" nor "offered". Before the weighing it ranked below all 30 "Hey Chidi"
    # lines (name-only lexical hits kept 1.0 of the best).
    assert answer.ref in refs[:5], refs.index(answer.ref) if answer.ref in refs else None


def test_a_small_room_weighs_only_hits_that_hold_nothing_of_the_question(store, embedder,
                                                                         monkeypatch):
    # dense_weight 0 (a room below DENSE_FROM_ROOM): where the best lexical hits hold some
    # of the question ("morning"), the lexical scores are kept as they are; where they hold
    # none of it (only the name), the name-only hits are weighed down there too.
    from agentstate.memory import search

    _chatter(store)
    weighed: list[str] = []
    # Patched where ranked_events looks it up (memory/search.py imports it by name).
    real = search._content_weighted

    def spy(query, hits):
        weighed.append(query)
        return real(query, hits)

    monkeypatch.setattr(search, "_content_weighted", spy)
    some = "Which job did Chidi get offered this morning?"
    ranked_events(store, some, limit=40, dense_weight=0.0)
    assert weighed == []
    ranked_events(store, "Which job did Chidi get offered?", limit=40, dense_weight=0.0)
    assert weighed == ["Which job did Chidi get offered?"]
