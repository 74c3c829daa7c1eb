"""A text holds a question's word when it holds that word's stem, whether or not the stem
is a prefix of the text's word (memory/terms.py, `stems_held`): "injury" is indexed as
injuri, so a prefix match alone found no "injury" in "Hope your injury heals", and the
fusion took such a hit for one that matched only a speaker's name."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.memory.event_hit import EventHit
from agentstate.memory.hit_strength import NAME_ONLY_SHARE, _content_weighted, holds_nothing
from agentstate.memory.terms import fold, holds_a_stem, stem, stems_held


def _stems(*words: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


def test_a_word_whose_stem_is_not_its_prefix_is_held():
    # The stemmer rewrites these words' ends: their stems start no word of the text.
    for word, text in [("injury", "hope your injury heals soon"),
                       ("journeys", "it's been quite a journey"),
                       ("hope", "we were hoping for sun"),
                       ("key", "where are my keys")]:
        assert not any(w.startswith(stem(word)) for w in text.split()), word
        assert stems_held(_stems(word), fold(text)) == {stem(word)}, word


def test_inflections_and_absent_words():
    stems = _stems("baking", "cake", "injury")
    # A prefix (bak-ed), a whole word, and one stem the text does not hold.
    assert stems_held(stems, fold("Kate baked a Cake.")) == {stem("baking"), stem("cake")}
    # A word that merely starts like the stem is not that word ("injure" → injur).
    assert stems_held(_stems("injury"), fold("they injure nobody")) == set()
    assert stems_held((), "anything") == set()


def _hit(text: str, score: float = 1.0) -> EventHit:
    return EventHit(f"evt:{abs(hash(text)) % 10**8}", "run:r", "note", text, "user", "",
                    score)


def test_a_hit_holding_a_rewritten_stem_is_not_a_name_only_hit():
    question = "When did John get an ankle injury in 2023?"
    hits = [_hit("Tim: Thanks! I hope your injury heals soon."),
            _hit("John: Hey Tim, how was your week?", 0.5)]
    # "John" is a name (a speaker's); the first hit holds "injury", the second nothing.
    assert not holds_nothing(question, hits)
    assert holds_nothing(question, hits[1:])
    assert [h.score for h in _content_weighted(question, hits)] == [1.0,
                                                                    0.5 * NAME_ONLY_SHARE]


_WORDS = ["injury", "injuries", "journey", "journeys", "hope", "hoping", "hopeful", "key",
          "keys", "monkey", "runner", "running", "ran", "ink", "in", "jury", "_injury",
          "re-injured", "journal", "hop", "x9", "Kate", "pastries", "pastry"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
       st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from([" ", "", "_", ", ", "-"])),
                max_size=12))
def test_the_quick_answer_is_what_the_full_one_finds(question, text_parts):
    """The fused search asks only whether a hit holds any stem (`holds_a_stem`, substring
    search first); it must agree with `stems_held` on every text, glued words included."""
    stems = tuple(dict.fromkeys(stem(w) for w in question))
    folded = fold("".join(w + sep for w, sep in text_parts))
    assert holds_a_stem(stems, folded) == bool(stems_held(stems, folded))
