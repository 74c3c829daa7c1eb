"""A secret cut in two by a line break, among many lines that also break between words."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate import secret_scan
from agentstate.safety import find_secrets
from tests.security.secrets_corpus import POSITIVES

# Values that are one token (what a line break can cut and the join puts back together).
_SPLITTABLE = [(shape, text, value) for shape, text, value in POSITIVES
               if re.fullmatch(r"[A-Za-z0-9_+/=\-]{16,}", value) and value in text
               and "\n" not in text and "\\n" not in text]
_FILLER = ["tests/test_parser.py::test_roundtrip_unicode PASSED",
           "    assert parsed_configuration == expected_configuration",
           "E   AssertionError: configuration mismatch in deployment",
           "+    return normalised_identifiers(sorted_candidates)",
           "-    return identifiers_normalised(candidates_sorted)",
           "collected 148 items / 2 deselected / 146 selected",
           "FAILED tests/test_integration.py::test_authentication_flow"]
_BREAKS = ["\n", "\n    ", "\\\n    ", "\\n", "\r\n"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(_SPLITTABLE), st.data(), st.sampled_from(_BREAKS),
       st.lists(st.sampled_from(_FILLER), max_size=25), st.lists(st.sampled_from(_FILLER),
                                                                  max_size=25))
def test_a_secret_cut_by_one_line_break_is_found_among_other_breaks(case, data, brk,
                                                                     before, after):
    shape, text, value = case
    cut = data.draw(st.integers(8, len(value) - 8))
    split_text = text.replace(value, value[:cut] + brk + value[cut:], 1)
    doc = "\n".join([*before, split_text, *after])
    start = doc.index(value[:cut])
    findings = find_secrets(doc)
    assert any(f.start <= start + cut - 1 and f.end > start for f in findings), (shape, brk)


# Every corpus secret written on one line, cut by a line break at each place inside its value
# where the join pass looks (8 token characters on each side): values with dots (JWTs,
# Discord and SendGrid tokens), hex bodies, assignments whose name stands far before the cut,
# flags after a long command. The join pass only looks again at breaks where a secret could
# cross (_could_cross): none of these may be skipped.
_TOKEN = re.compile(r"[A-Za-z0-9_+/=\-]{8}")


def _cuts(text: str, value: str) -> list[int]:
    start = text.index(value)
    return [cut for cut in range(start + 8, start + len(value) - 7)
            if _TOKEN.fullmatch(text[cut - 8:cut]) and _TOKEN.fullmatch(text[cut:cut + 8])]


_EVERY_CUT = [(shape, text, cut) for shape, text, value in POSITIVES
              if "\n" not in text and "\\n" not in text and value in text
              for cut in _cuts(text, value)]


def test_the_corpus_has_cuts_of_every_kind() -> None:
    shapes = {shape for shape, _, _ in _EVERY_CUT}
    assert {"JSON web token", "Discord bot token", "SendGrid key", "Pulumi hex token",
            "Twilio API key", "bearer token", "Azure AccountKey", "YAML DB_PASS"} <= shapes


@pytest.mark.parametrize("brk", ["\n", "\\n", "\n    "])
def test_a_secret_cut_anywhere_inside_its_value_is_found(brk: str) -> None:
    missed = []
    for shape, text, cut in _EVERY_CUT:
        doc = "\n".join([*_FILLER, text[:cut] + brk + text[cut:], *_FILLER])
        at = len("\n".join(_FILLER)) + 1 + cut  # the first character after the cut
        if not any(f.start < at and f.end > at - 1 for f in find_secrets(doc)):
            missed.append((shape, cut))
    assert not missed


def test_breaks_between_ordinary_words_are_not_scanned_again(monkeypatch) -> None:
    # Test output and diffs: every line ends and starts with a word of 8+ letters, so every
    # break is a place the join pass could look. None of them could hold a secret.
    rescanned: list[int] = []
    original = secret_scan._scan_joined

    def counting(text, joins):
        rescanned.extend(m.start() for m in joins)
        return original(text, joins)

    monkeypatch.setattr(secret_scan, "_scan_joined", counting)
    output = "\n".join([
        "tests/test_configuration.py::test_roundtrip_unicode PASSED",
        "collected 148 items from tests/test_configuration_parser",
        "tests/test_configuration_parser/fixtures/deployment_identifiers",
        "    expected_configuration = normalised_identifiers",
        "E   AssertionError: configuration mismatch in deployment",
        "+    return normalised_identifiers(sorted_candidates)",
        "FAILED tests/test_integration.py::test_roundtrip_unicode",
        "    assert parsed_configuration == expected_configuration",
    ] * 20)
    assert find_secrets(output) == []
    assert find_secrets(json.dumps(output)) == []
    assert rescanned == []
    # The same text with one split key: its break (and only it) is looked at again.
    key = "ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"
    split = output + "\ntoken " + key[:20] + "\n" + key[20:] + "\n" + output
    cut = split.index(key[:20]) + 20
    assert any(f.start < cut < f.end for f in find_secrets(split))
    # The key's break, and only breaks near the word `token` (a word before a value).
    assert cut in rescanned and all(abs(pos - cut) < 300 for pos in rescanned)


# Values that do not look generated: only the words before them (or their format) make them
# secret, so the join pass must look at their break for those words.
_LONG_COMMAND = ("mysql --host=replica-three.internal.example.org --port=3306 --user=reporting "
                 "--database=inventory_production --connect-timeout=30 --batch ")


@pytest.mark.parametrize("before, value, cut", [
    ("db_password = ", "correcthorsebatterystaple", 12),
    ("signing_key: ", "correcthorsebatterystaple", 12),
    ("the deploy password is ", "Tr0ub4dor-horsebatterystaple", 12),
    (_LONG_COMMAND + "-p", "correcthorsebatterystaple", 12),
    # Cut late in a long passphrase: the sensitive word stands more than _JOIN_CONTEXT
    # characters before the break, but within it of the value's first piece, where the
    # window is measured from.
    (_LONG_COMMAND + "-p", "correcthorsebatterystaple" * 6, 130),
    ("bot ", "M" + "z" * 24 + ".Gabcde." + "z" * 30, 12),  # a Discord token's shape
])
def test_a_plain_value_cut_by_a_line_break_is_found_by_its_context(before: str, value: str,
                                                                    cut: int) -> None:
    assert find_secrets(before + value), "whole, the value is found"
    # Filler without a word that makes a value secret: only the value's own line decides.
    filler = [line for line in _FILLER
              if not any(word in line.lower() for word in secret_scan._JOIN_WORDS)]
    doc = "\n".join([*filler, before + value[:cut] + "\n" + value[cut:], *filler])
    at = doc.index(value[:cut]) + cut
    assert any(f.start < at < f.end for f in find_secrets(doc))
