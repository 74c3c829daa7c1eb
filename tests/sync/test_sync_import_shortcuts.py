"""The shortcuts a first import takes (sync/merge.py, issue 24) give what the long way gives:
the history detail spelled out is `json.dumps`'s text, and the limits strip a text only when
it could be over them, with the verdict of the long way at every boundary."""

from __future__ import annotations

import json

import pytest

from agentstate.store.limits import MAX_NAME_CHARS
from agentstate.sync.merge_batch import _import_detail
from agentstate.sync.records import record_over_limits
from tests.sync.test_sync_merge_quick import _record

AWKWARD = ["repo", "path:docs/naïve café.md", 'branch:say-"hi"', "path:a\\b", "tool:ci\u2028x",
           "evt:\u0000\u001f\u007f", "file:中文/路径.py@abc123", "user \U0001f40d",
           "tab\tand\nline"]


@pytest.mark.parametrize("value", AWKWARD)
def test_the_spelled_import_detail_is_the_one_json_dumps_writes(value):
    record_id = "0123456789abcdef0123456789abcdef"
    data = {"scope": value, "source": value[::-1]}
    expected = json.dumps({"record": record_id, "scope": value, "source": value[::-1]},
                          ensure_ascii=False, sort_keys=True)
    assert _import_detail(record_id, data) == expected


def _cases(max_chars: int):
    name = "k" * MAX_NAME_CHARS
    yield {}
    yield {"text": "x" * max_chars}
    yield {"text": "x" * (max_chars + 1)}
    yield {"text": "  " + "x" * max_chars + "  "}  # longer, but within the limit once stripped
    yield {"text": " " + "x" * (max_chars + 1)}
    for field in ("key", "scope", "source"):
        yield {field: name}
        yield {field: name + "k"}


def _limits_the_long_way(data, max_chars):
    """record_over_limits as it was: the text stripped whatever its length."""
    text = data.get("text")
    if isinstance(text, str) and len(text.strip()) > max_chars:
        return (f"its text is {len(text.strip()):,} characters; the limit is {max_chars:,} "
                "([memory] max_chars, as for `remember`); not imported")
    for name in ("key", "scope", "source"):
        value = data.get(name)
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            return (f"its {name} is {len(value):,} characters; the limit is "
                    f"{MAX_NAME_CHARS:,}; not imported")
    return None


@pytest.mark.parametrize("max_chars", [20, 2000])
def test_the_limits_give_the_long_way_s_verdict_at_every_boundary(max_chars):
    for over in _cases(max_chars):
        fields = {"text": "the cache is redis", **over}
        data = _record(fields.pop("text"), **fields).data
        assert record_over_limits(data, max_chars) == _limits_the_long_way(data, max_chars), \
            over
    assert record_over_limits(_record("x" * (max_chars + 1)).data, max_chars) is not None
    assert record_over_limits(_record("ok", key="k" * (MAX_NAME_CHARS + 1)).data, max_chars)
