"""The join pass's break pattern (secret_scan._LINE_JOIN) starts with a look-ahead that only
makes it fail sooner: it must find exactly the breaks the pattern without it finds."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.secret_scan import _LINE_JOIN

# The pattern as it was before the look-ahead: the reference.
PLAIN = re.compile(r"(?<=[A-Za-z0-9_+/=\-]{8})[ \t]{0,64}\\{0,2}(?:\r?\n|(?:\\r)?\\n)"
                   r"[ \t]{0,64}(?=[A-Za-z0-9_+/=\-]{8})")

# Token characters, the blanks and backslashes around a break, the breaks themselves (as
# text and as JSON writes them), and characters that are none of these.
PIECES = st.sampled_from(["a", "Z", "7", "_", "+", "/", "=", "-", "abcdefgh", "A1b2C3d4",
                          " ", "\t", " " * 70, "\t\n", " \\n", "\\", "\\\\", "\n", "\r\n",
                          "\\n", "\\r\\n", "n", "r", ".", ":", "é", "東"])


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40).map("".join))
def test_the_breaks_found_are_those_of_the_plain_pattern(text):
    assert spans(_LINE_JOIN.compiled, text) == spans(PLAIN, text)


def test_each_kind_of_break_is_found():
    for text in ("abcdefgh\nijklmnop", "abcdefgh  \t\n   ijklmnop", "abcdefgh\r\nijklmnop",
                 "abcdefgh\t\nijklmnop", "abcdefgh\t \\nijklmnop",
                 "abcdefgh\\nijklmnop", "abcdefgh\\\\nijklmnop", "abcdefgh \\\nijklmnop",
                 "abcdefgh\\r\\nijklmnop"):
        found = spans(_LINE_JOIN.compiled, text)
        assert found == spans(PLAIN, text) and len(found) == 1, text
    assert not spans(_LINE_JOIN.compiled, "abcdefg\nijklmnop")  # seven characters before
