"""Speakers as fields: a question naming one speaker prefers that speaker's turns."""

from __future__ import annotations

from agentstate.memory.event_hit import EventHit
from agentstate.memory.search import ranked_events, search_events
from agentstate.memory.speakers import prefer_speakers, speaker_of
from agentstate.runs.log import append_event, start_run


def test_the_speaker_field_is_the_name_before_the_colon():
    assert speaker_of("Kate: I love pottery.") == "Kate"
    assert speaker_of("Mary Ann Lee: hi") == "Mary Ann Lee"
    assert speaker_of("note: lowercase is a label, not a speaker") == ""
    assert speaker_of("pytest failed: 3 errors") == ""
    assert speaker_of("Kate said: no colon right after the name") == ""


def _hit(ref: str, text: str, score: float) -> EventHit:
    return EventHit(ref, "run:r", "note", text, "user", "", score)


def test_a_question_naming_one_speaker_weighs_the_others_hits_half():
    hits = [_hit("evt:1", "Emi: Hello Kate. How was the pottery class?", 1.0),
            _hit("evt:2", "Kate: Pottery is my favourite thing lately.", 0.8),
            _hit("evt:3", "Joon: Kate, your pottery is lovely.", 0.7),
            _hit("evt:4", "a line with no speaker about pottery", 0.6)]
    ranked, named = prefer_speakers("What are Kate's hobbies besides pottery?", hits)
    assert named == ["Kate"]
    assert [h.ref for h in ranked] == ["evt:2", "evt:4", "evt:1", "evt:3"]
    assert [h.score for h in ranked] == [0.8, 0.6, 0.5, 0.35]
    # Naming every speaker seen, or none, changes nothing.
    assert prefer_speakers("Did Emi, Kate and Joon talk about pottery?", hits)[0] == hits
    assert prefer_speakers("Who talked about pottery?", hits)[0] == hits


def test_through_the_search_the_named_speakers_turns_come_first(store):
    run, _ = start_run(store, "a chat")
    texts = ["Emi: Hello Kate! Did the pottery kiln arrive?",
             "Emi: Kate, you and your pottery.",
             "Kate: The kiln did arrive on Monday, so it is pottery every evening now."]
    events = [append_event(store, run.ref, "note", t) for t in texts]
    for n in range(20):  # other talk, so that BM25's IDF means something
        append_event(store, run.ref, "note", f"Emi: Rain again today, day {n} of it.")
    question = "When did Kate's pottery kiln arrive?"
    plain = [h.ref for h in search_events(store, question, limit=3)]
    # Matched as text, the other speaker's question (every word of ours) leads.
    assert plain == [events[0].ref, events[2].ref, events[1].ref]
    preferred = [h.ref for h in ranked_events(store, question, limit=3)]
    assert preferred == [events[2].ref, events[0].ref, events[1].ref]
    assert [h.ref for h in ranked_events(store, question, limit=3, speakers=False)] == plain
