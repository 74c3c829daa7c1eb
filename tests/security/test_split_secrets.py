"""A secret cut in two by a line break, among many lines that also break between words."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

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
