"""`check_json` takes short ways for the usual members of a container (issue 24: every
imported line and record is walked); it must still name exactly what a plain recursive walk
of the rule names, first problem first, on any value."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.errors import InvalidInput
from agentstate.secret_scan import Scanned
from agentstate.store.limits import MAX_JSON_DEPTH, MAX_JSON_INT, check_json, parse_json


def _reference(value: Any, what: str, depth: int = 0) -> None:
    """The rule as it reads in docs/concepts.md, one call per value."""
    if depth > MAX_JSON_DEPTH:
        raise InvalidInput(f"{what} is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            raise InvalidInput(f"{what} holds an integer beyond ±{MAX_JSON_INT}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{what} holds a non-finite number ({value}); JSON has none")
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"{what} is not valid Unicode (a lone surrogate at character "
                               f"{exc.start})") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _reference(str(key), what)
            _reference(item, what, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _reference(item, what, depth + 1)
    else:
        raise InvalidInput(f"{what} holds a {type(value).__name__}, which is not JSON")


def _outcome(check: Any, value: Any) -> str | None:
    try:
        check(value, "the value")
    except InvalidInput as exc:
        return exc.message
    return None


_texts = st.one_of(st.text(max_size=8), st.sampled_from(["a\ud800b", "\udfff", "é\ud834",
                                                         "plain", "naïve"]),
                   st.builds(Scanned, st.text(max_size=4)))
_leaves = st.one_of(
    st.none(), st.booleans(), _texts,
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([MAX_JSON_INT, MAX_JSON_INT + 1, -MAX_JSON_INT - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([b"bytes", {1, 2}, object()]),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.tuples(inner, inner),
        st.dictionaries(st.one_of(_texts, st.integers(0, 3)), inner, max_size=4)),
    max_leaves=30,
)


def _nested(depth: int, leaf: Any, container: str) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value] if container == "list" else {"k": value}
    return value


@settings(max_examples=400, deadline=None)
@given(_values)
def test_check_json_names_what_a_plain_walk_names(value):
    assert _outcome(check_json, value) == _outcome(_reference, value)


@settings(max_examples=200, deadline=None)
@given(st.integers(MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH + 2), st.sampled_from(["list", "dict"]),
       _leaves, st.booleans())
def test_depth_is_counted_like_a_plain_walk(depth, container, leaf, empty):
    # The deepest level holds a leaf, or an empty container (nothing below it to check).
    value = _nested(depth, [] if empty else leaf, container)
    assert _outcome(check_json, value) == _outcome(_reference, value)


def test_a_lone_surrogate_anywhere_in_a_parsed_line_is_refused():
    # Written as a JSON escape: valid UTF-8 bytes, a string Python cannot encode.
    for line in ('{"a": "\\ud800"}', '{"\\udfff": 1}', '[1, ["x", "\\ud834y"]]',
                 '{"a": {"b": [{"c": "é\\ud800"}]}}'):
        assert _outcome(parse_json, line) is not None, line
    assert _outcome(parse_json, '{"a": "\\ud83d\\ude00"}') is None  # a pair is one character
