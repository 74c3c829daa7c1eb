"""The secret scanner's `NAME = value` rule is tried only where it can match
(`secret_scan._assignments`, issue 24): its matches must be exactly those of the pattern
tried at every position, on texts built to sit at the edges (words inside long names,
words at the reach's limit, overlapping words, names broken by characters that are not
name characters, quotes and JSON around them)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate import secret_scan
from agentstate.secret_scan import find_secrets

_PIECES = st.sampled_from([
    "pass", "PASS", "Pwd", "secret", "tOkEn", "key", "KEY", "cred", "sas", "passas", "keykey",
    "api", "db_", "x", "a" * 30, "b" * 57, "-", ".", "_", "9", " ", "\t", "\n", "=", ":", ":=",
    "=>", '"', "'", "\\", "`", ",", ";", "{", "}", "s3cr3tV4lu3xyz", "hunter2hunter2",
    "AKIAIOSFODNN7EXAMPLE", "ſ", "K", "é", "/",
])


def _both(text: str) -> tuple[list, list]:
    lower = text.lower()
    every = [(m.span(), m.groups()) for m in secret_scan._ASSIGNMENT.finditer(text)]
    tried = [(m.span(), m.groups()) for m in secret_scan._assignments(text, lower)]
    return every, tried


@settings(max_examples=1500, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_rule_tried_where_it_can_match_finds_what_it_finds_everywhere(text):
    every, tried = _both(text)
    assert tried == every


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("akeyps =:_-.\"'\\x9"), max_size=120))
def test_the_same_on_dense_random_text(text):
    every, tried = _both(text)
    assert tried == every


def test_the_edges_by_hand():
    cases = [
        "a" * 60 + "key=s3cr3tV4lu3xyz",  # the word exactly at the reach
        "a" * 61 + "key=s3cr3tV4lu3xyz",  # one past it: no match from the run's start
        "a" * 61 + "key token=s3cr3tV4lu3xyz",
        "my.db.password = hunter2hunter2 and app-secret-key: s3cr3tV4lu3xyz",
        "passas=hunter2hunter2 db_password: 'hunter2hunter2' mykey:=abcdefgh",
        '{"key":"db_password","text":"hunter2hunter2","secret_key":"s3cr3tV4lu3xyz"}',
        "xpa\u017fsas=hunter2hunter2",  # not ASCII: the pattern everywhere
        # Lower-cased, each İ is two characters: the words' places in the lower-cased
        # text are not theirs in the text, which the fallback must not trust.
        "\u0130\u0130\u0130\u0130 key=s3cr3tV4lu3xyz",
        "API_KEY = 'zq8Xv2Lm9Pt4Rw7Yc1Nb'\nexport SECRET=abc12345def",
    ]
    for text in cases:
        every, tried = _both(text)
        assert tried == every, text
    assert _both(cases[0])[0] and not _both(cases[1])[0] and _both(cases[-2])[0]


def test_a_shared_record_line_still_reveals_its_password():
    line = ('{"created":"2026-01-01T00:00:00.000000Z","held":null,"id":"' + "0" * 32
            + '","key":"db","kind":"fact","parent":null,"principal":"owner","rel":null,'
            '"scope":"repo","source":"user","text":"the db password=Xk29vLq8Rt4Wz",'
            '"type":"memory","v":1,"valid_until":null}')
    assert any(f.kind == "password assignment" for f in find_secrets(line))
