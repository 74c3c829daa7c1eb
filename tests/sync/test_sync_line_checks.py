"""A shared line's check decodes it with the decoder's scanner directly and looks a field up
once (issue 24): every line must get the verdict, record or message it got before."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.errors import InvalidInput
from agentstate.sync import records
from agentstate.sync.records import FIELDS, make_record, parse_line


def _fact(**over):
    fields = dict(kind="fact", key="db.port", scope="repo", text="the db listens on 5432",
                  source="user", principal="owner", created="2026-01-01T00:00:00.000000Z",
                  valid_until=None, parent=None, rel=None, held=None)
    fields.update(over)
    return make_record("memory", **fields)


def _loads(text):
    """What `json.loads` gives: ("ok", value) or ("error", message, position)."""
    try:
        return ("ok", json.loads(text))
    except json.JSONDecodeError as exc:
        return ("error", exc.msg, exc.pos)


def _decoded(text):
    try:
        return ("ok", records._decode(text))
    except json.JSONDecodeError as exc:
        return ("error", exc.msg, exc.pos)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8)
AROUND = st.sampled_from(["", " ", "\t", "\ufeff", "x", "{}", "]", ",", " 1", "\u2028", "\n"])


@settings(max_examples=600, deadline=None)
@given(AROUND, JSON_VALUES.map(json.dumps), AROUND)
def test_json_with_anything_around_it_decodes_as_json_loads_does(before, body, after):
    text = before + body + after
    assert _decoded(text) == _loads(text)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_any_text_decodes_as_json_loads_does(text):
    assert _decoded(text) == _loads(text)


def test_a_line_with_more_after_its_object_is_not_json():
    line = _fact().line
    for text in (line + ' {"v":1}', line + "x", line + "}"):
        with pytest.raises(InvalidInput, match="not valid JSON"):
            parse_line(text, "memories.jsonl line 1")
    assert parse_line(line + "  ", "x").data == _fact().data  # trailing blanks, as before


@pytest.mark.parametrize("kind", sorted(FIELDS))
def test_each_missing_field_is_refused_even_one_that_may_be_null(kind):
    record = {"memory": _fact(), "evidence": make_record("evidence", memory="a" * 32,
                                                         ref="user"),
              "forget": make_record("forget", target="b" * 32),
              "purge": make_record("purge", target="c" * 32)}[kind]
    for name in FIELDS[kind]:
        data = {k: v for k, v in record.data.items() if k != name}
        with pytest.raises(InvalidInput, match=f"field '{name}' of a {kind} record is missing"):
            parse_line(records.canonical(data), "x")
    assert parse_line(record.line, "x").data == record.data
