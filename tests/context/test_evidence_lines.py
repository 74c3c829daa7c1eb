"""Evidence lines that carry the answer: a short turn whole, a long one's matched sentence
with the sentence that completes it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.context.compression import evidence_line, focus_line

PASTRIES = ("Melanie: They taste great too! We had croissants, muffins, and tarts at the "
            "bakery on Main Street, which was lovely and warm on a cold grey morning.")


def test_a_short_turn_is_its_own_line():
    text = "Kate: The kiln came on Monday, so pottery every evening now."
    assert evidence_line("evt:a", text, ("kiln",), 30, 160) == f"- [evt:a] {text}"
    # The matched sentence alone would have cut it (what the ablation does).
    assert focus_line("evt:a", text, ("kiln",), 30) != f"- [evt:a] {text}"


def test_the_matched_sentence_is_followed_by_the_next_one():
    line = evidence_line("evt:a", PASTRIES, ("tast",), 60, 100)
    assert line.startswith("- [evt:a] Melanie: They taste great too! We had croissants")
    assert "croissants" not in focus_line("evt:a", PASTRIES, ("tast",), 60)


def test_a_line_never_exceeds_its_answer_width():
    from agentstate.context.compression import ANSWER_WIDTH

    line = evidence_line("evt:a", PASTRIES * 2, ("tast",), 60, 0)
    body = line.removeprefix("- [evt:a] ")
    assert len(body) <= ANSWER_WIDTH * 60 + 60 // 2 + len("Melanie: ") + 4


# ---------------------------------------------------------------- lines that carry the answer
# (issue 23, seventh round). Each case: a turn longer than a short turn, the question's
# stems, the words its answer needs; the shorter line (60 characters, a small room's width)
# drops them and the answer line keeps them.

ANSWER_CASES = [
    # The window around the matched words ends just before what they introduce.
    ("Ravi: Yes! At the market this morning I picked up a whole crate of figs, plums and "
     "apricots for the jam, which then took the entire afternoon and evening to boil down.",
     ("market", "pick"), ("figs", "plums", "apricots")),
    # The matched sentence is short and what completes it long: the completion has the room
    # the answer line's width leaves, not what the shorter line's width leaves.
    ("Lena: We finally chose a name. After two weeks of arguing at every single dinner we "
     "went with Clementine, after the song her grandmother used to sing to her at night.",
     ("name",), ("clementine", "grandmother")),
    # A question naming the speaker: the label's name is not a match, the sentence holding
    # the question's other word is, and the next one completes it.
    ("Sven: Okay, quick update! Big news on the job front, I said yes to the offer. From next "
     "month I am the new harbour pilot for the island ferries, a dream since I was a kid.",
     ("job", "sven", "start"), ("harbour", "pilot")),
]


def test_the_answer_line_keeps_what_the_shorter_line_cuts():
    for text, stems, answer in ANSWER_CASES:
        assert len(text) > 160
        short = focus_line("evt:a", text, stems, 60)
        line = evidence_line("evt:a", text, stems, 60, 160)
        assert not all(word in short.casefold() for word in answer), short
        assert all(word in line.casefold() for word in answer), line
        assert line.startswith("- [evt:a] ")


def test_the_speaker_label_is_not_a_match_in_the_answer_line():
    text = ("Sven: Okay, quick update! I have been sorting the attic all week. The old "
            "telescope was up there, still in its box, with the star charts from school.")
    # Only the label holds the question's words: no sentence is matched, the turn opens
    # the line (and the shorter line, which still counts the label, is unchanged).
    line = evidence_line("evt:a", text, ("sven",), 60, 0)
    assert line.startswith("- [evt:a] Sven: Okay, quick update! I have been")
    assert focus_line("evt:a", text, ("sven", "telescop"), 60) == \
        "- [evt:a] Sven: Okay, quick update! …"
    assert "telescope" in evidence_line("evt:a", text, ("sven", "telescop"), 60, 0)


_WORDS = st.sampled_from("the kiln came on monday so pottery every evening now figs plums "
                         "jam market crate harbour pilot offer dream attic box".split())
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=14).map(lambda ws: " ".join(ws) + ".")


@settings(max_examples=300, deadline=None)
@given(st.lists(_SENTENCE, min_size=1, max_size=6), st.lists(_WORDS, max_size=3),
       st.integers(20, 200), st.sampled_from([0, 160]), st.booleans(), st.booleans(),
       st.booleans())
def test_an_answer_line_keeps_its_ref_its_words_and_its_bound(sentences, stems, width,
                                                               whole_under, speaker, fill,
                                                               around):
    from agentstate.context.compression import ANSWER_WIDTH

    lead = "Kate: " if speaker else ""
    text = lead + " ".join(sentences)
    label = "evt:abc123 · 2024-05-06"
    line = evidence_line(label, text, tuple(stems), width, whole_under, "", fill, around)
    assert line.startswith(f"- [{label}] ")
    body = line.removeprefix(f"- [{label}] ")
    if len(text) <= whole_under:
        assert body == text
        return
    # The focus window (ANSWER_WIDTH × width), the completion's room past it (at least
    # half the width), the speaker in front and the cut marks.
    assert len(body) <= len(lead) + int(ANSWER_WIDTH * width) + width // 2 + 12
    # Extractive: every word shown is a word of the turn (or, at a cut with no word
    # boundary near, the start of one).
    words = set(text.replace(".", " ").split()) | {"Kate:"}
    assert all(any(word.startswith(w.rstrip(".")) for word in words)
               for w in body.split() if w != "…")
