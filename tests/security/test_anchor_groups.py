"""The secret scanner looks for a format's anchors only in a text that holds the anchor's
rarest character (secret_formats.by_rarest_character): the formats it runs must be exactly
those an anchor-by-anchor search picks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.secret_formats import anchor_table, formats_to_run
from agentstate.secret_scan import find_secrets

FLAT = anchor_table(case_insensitive=False)
FLAT_LOWER = anchor_table(case_insensitive=True)
ANCHORS = [anchor for anchor, _ in FLAT + FLAT_LOWER]


def every_anchor(text: str, lower: str) -> list[int]:
    wanted = {i for anchor, indexes in FLAT if anchor in text for i in indexes}
    wanted.update(i for anchor, indexes in FLAT_LOWER if anchor in lower for i in indexes)
    return sorted(wanted)


def test_each_anchor_alone_and_inside_a_text_runs_its_formats():
    for anchor in ANCHORS:
        for text in (anchor, f"see {anchor} here", anchor.upper(), anchor.lower()):
            assert formats_to_run(text, text.lower()) == every_anchor(text, text.lower()), text
        assert every_anchor(anchor, anchor.lower()), anchor  # the reference finds it


# Pieces of anchors and their characters, so texts hold some anchors whole and many halves.
PIECES = st.sampled_from(ANCHORS + [a[: len(a) // 2] for a in ANCHORS]
                         + [a[len(a) // 2:] for a in ANCHORS] + [" ", "\n", "x", "é"])


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=12).map("".join))
def test_the_formats_run_are_those_every_anchor_picks(text):
    assert formats_to_run(text, text.lower()) == every_anchor(text, text.lower())


def test_a_known_format_is_still_found():
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert [f.kind for f in find_secrets(f"push with {token} please")]
