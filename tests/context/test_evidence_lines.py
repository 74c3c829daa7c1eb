"""Evidence lines that carry the answer: a short turn whole, a long one's matched sentence
with the sentence that completes it."""

from __future__ import annotations

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


def test_a_line_never_exceeds_about_twice_its_width():
    line = evidence_line("evt:a", PASTRIES, ("tast",), 60, 0)
    body = line.removeprefix("- [evt:a] ")
    assert len(body) <= 2 * 60 + len("Melanie: ") + 4
