"""A shared line's check decodes it with the decoder's scanner directly and looks a field up
once (issue 24): every line must get the verdict, record or message it got before."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.errors import InvalidInput
from agentstate.sync import records, shared_files
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
        return ("ok", records.decode_line(text))
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


def _outcome(parse, text):
    """What a line's check gives: the record (its data in key order, line, body, where) or
    the message it is refused with."""
    try:
        record = parse(text, "memories.jsonl line 3")
    except InvalidInput as exc:
        return ("refused", str(exc))
    return ("ok", list(record.data.items()), record.line, record.body, record.where,
            record.id, record.type)


NAMES = st.text(max_size=12) | st.sampled_from(["repo", "path:a\\b", 'say "hi"', "tab\there",
                                               "\u2028", "é路", "", " "])
HEX = st.text(alphabet="0123456789abcdef", min_size=32, max_size=32)


@st.composite
def _memory_lines(draw):
    """Lines of memory records, mostly canonical (plain strings and ones that need escapes,
    every field that may be null), some edited by hand."""
    fields = dict(
        kind=draw(st.sampled_from(["fact", "preference"]) | NAMES),
        key=draw(st.none() | NAMES), scope=draw(st.sampled_from(["repo", "path:x"]) | NAMES),
        text=draw(st.text(max_size=40) | st.sampled_from(["a\\nb", 'q"q', "\x7f\x1f"])),
        source=draw(NAMES), principal=draw(NAMES), created=draw(NAMES),
        valid_until=draw(st.none() | NAMES),
        parent=draw(st.none() | HEX | NAMES),
        rel=draw(st.none() | st.sampled_from(["supersedes", "contests", "other"])),
        held=draw(st.none() | st.sampled_from(["candidate", "quarantined", "held"])))
    line = make_record("memory", **fields).line
    return draw(_edited(line))


@st.composite
def _evidence_lines(draw):
    line = make_record("evidence", memory=draw(HEX | NAMES),
                       ref=draw(st.sampled_from(["user", "evt:abcd", "file:a b@c1"]) | NAMES)
                       ).line
    return draw(_edited(line))


@st.composite
def _edited(draw, line):
    """The line as written, or with one hand edit that keeps it valid JSON (a space, an
    escape where none is needed, another spelling of the version, keys moved, a key
    repeated) or not."""
    edit = draw(st.sampled_from(["none", "none", "space", "escape", "version", "reorder",
                                 "repeat", "cut", "id"]))
    if edit == "space":
        at = draw(st.integers(0, len(line)))
        return line[:at] + " " + line[at:]
    if edit == "escape":
        return line.replace("e", "\\u0065", 1)
    if edit == "version":
        return line.replace('"v":1', draw(st.sampled_from(['"v":1.0', '"v":true', '"v":2'])))
    if edit == "reorder":
        data = json.loads(line)
        return json.dumps(dict(reversed(list(data.items()))), ensure_ascii=False,
                          separators=(",", ":"))
    if edit == "repeat":
        return line[:-1] + ',"type":"memory"}'
    if edit == "cut":
        return line[:draw(st.integers(0, len(line) - 1))]
    if edit == "id":
        return line.replace('"id":"', '"id":"f', 1)
    return line


@settings(max_examples=500, deadline=None)
@given(_memory_lines() | _evidence_lines())
def test_a_line_in_the_exported_shape_gets_the_record_decoding_gives(line):
    """The canonical-shape match (records._canonical_record) is a shortcut: every line, in the
    shape or not, gets the record or the refusal that decoding it field by field gives."""
    assert _outcome(parse_line, line) == _outcome(records._decoded_record, line)


def test_exported_lines_take_the_shortcut():
    """The shortcut is taken where it pays: lines as an export writes them."""
    memory = _fact(text="plain text, no escapes", held="candidate", key=None)
    evidence = make_record("evidence", memory="a" * 32, ref="file:src/a.py@abc")
    for record in (memory, evidence):
        found = records._canonical_record(record.line, "x")
        assert found is not None and found.body == record.body
    assert records._canonical_record(_fact(text="two\nlines").line, "x") is None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "{}", "\r", "\n", "\r\n", "\u2028", "\u0085", " "]),
                max_size=12).map("".join))
def test_a_files_lines_split_at_every_line_end_with_or_without_a_carriage_return(raw):
    # Only a file holding a carriage return has its line ends made plain first (issue 24):
    # the lines are those of the two replacements on any text.
    assert shared_files.file_lines(raw) == raw.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    assert shared_files.file_lines("a\r\nb\rc\u2028d\ne") == ["a", "b", "c\u2028d", "e"]
