"""`normalise` (what dedupe compares, stored as a version's norm_hash) skips its whitespace
substitution where there is nothing to collapse (issue 24): every text must normalise as the
substitution alone made it."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.memory.model import normalise


def _the_long_way(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip().rstrip(".!。！;；")


def test_every_code_point_between_words_normalises_as_the_substitution_does():
    for code in range(sys.maxunicode + 1):
        text = f"a{chr(code)}b. "
        assert normalise(text) == _the_long_way(text), hex(code)


SPACES = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u2028", "\u3000", "\x1c", "\x85",
                          "ß", "İ", "ﬃ", "。", ".", ";"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.text(max_size=6) | SPACES, max_size=12).map("".join))
def test_any_text_normalises_as_the_substitution_does(text):
    assert normalise(text) == _the_long_way(text)
