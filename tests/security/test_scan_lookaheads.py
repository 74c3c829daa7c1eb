"""Three of the secret scanner's patterns start with a look-ahead that only makes them fail
sooner (the join pass's breaks, assignments, passwords in prose): each must find exactly what
the pattern without it finds, the same spans and the same groups."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.secret_scan import _ASSIGNMENT, _LINE_JOIN, _PROSE

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


# The assignment and prose patterns as they were before their look-aheads: the references.
PLAIN_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?=[A-Za-z0-9_.\-]{0,60}?(?i:pass|pwd|secret|token|key|cred|sas))"
    r"([A-Za-z][A-Za-z0-9_.\-]{0,63})(\\?[\"']?)[ \t]{0,8}(?::=|=>|[:=])"
    r"[ \t]{0,8}(?=(\\?[\"'`]?)([^\s\"'`,;]{1,512}))")
PLAIN_PROSE = re.compile(
    r"(?i)(?<![a-z0-9])(pass(?:word|phrase)s?|passwd|pwd|secret(?:\s+key)?|api\s+key|"
    r"access\s+key|private\s+key|token|credentials?)"
    r"(?:\s{1,4}(?:for|of|to)\s{1,4}[^\s]{1,40})?\s{1,4}(?:is|was|are|=|:|->|reads)\s{1,4}"
    r"[\"'`“]?([^\s\"'`”]{6,256})")

# Names, sensitive words in both cases, separators, quotes, blanks and values.
WORDS = st.sampled_from(["db_password", "API_KEY", "apiKey", "Token", "pwd", "sas", "cred",
                         "secret key", "access key", "passphrase", "credentials", "name",
                         "x", "9", "_", ".", "-", " ", "\t", "\n", "=", ":", ":=", "=>", "\"",
                         "'", "`", "\\", " is ", " for the db ", " -> ", "hunter2secret",
                         "s3cr3t-V4lue", ",", ";", "é", "“", "ß" * 3])


def groups(pattern: re.Pattern[str], text: str) -> list[tuple]:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=600, deadline=None)
@given(st.lists(WORDS, max_size=16).map("".join))
def test_assignments_and_prose_found_are_those_of_the_plain_patterns(text):
    assert groups(_ASSIGNMENT.compiled, text) == groups(PLAIN_ASSIGNMENT, text)
    assert groups(_PROSE.compiled, text) == groups(PLAIN_PROSE, text)


def test_each_form_of_assignment_and_prose_is_found():
    for text in ("db_password = hunter2secret", "API_KEY: 's3cr3t-V4lue'", "token:=abc123xyz",
                 '\\"apiKey\\": \\"s3cr3t-V4lue\\"', "Passwd=>s3cr3t-V4lue",
                 "x.secret\t=\tvalue1"):
        found = groups(_ASSIGNMENT.compiled, text)
        assert found == groups(PLAIN_ASSIGNMENT, text) and len(found) == 1, text
    for text in ("the password is hunter2secret", "Secret Key :  s3cr3t-V4lue",
                 "API key for prod -> s3cr3t-V4lue", "credentials are “s3cr3t-V4lue”",
                 "TOKEN = abc123xyz99"):
        found = groups(_PROSE.compiled, text)
        assert found == groups(PLAIN_PROSE, text) and len(found) == 1, text
