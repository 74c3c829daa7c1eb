"""Stored timestamps are the one format `%Y-%m-%dT%H:%M:%S.%fZ` in UTC: they sort as text
and every reader parses them back. format_ts writes them through `isoformat` (half the
time of strftime: an import formats one a line); the text must be strftime's exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.store.clock import format_ts, parse_ts

_zones = st.builds(lambda minutes: timezone(timedelta(minutes=minutes)),
                   st.integers(-23 * 60, 23 * 60))


@settings(max_examples=500, deadline=None)
@given(st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31),
                    timezones=st.one_of(st.just(UTC), _zones)))
def test_format_ts_writes_what_strftime_writes(moment):
    expected = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert format_ts(moment) == expected
    if moment.astimezone(UTC).year >= 1000:  # strftime's unpadded year does not parse back
        assert parse_ts(expected) == moment


def test_a_whole_second_keeps_its_microseconds():
    # isoformat drops ".000000" unless told the precision: the stored text must not shorten.
    assert format_ts(datetime(2026, 1, 14, 10, 0, 0, tzinfo=UTC)) == "2026-01-14T10:00:00.000000Z"
