"""What the pages gather, without a server: the manifest view's cap on dropped rows."""

from __future__ import annotations

from agentstate.web import views


def _entries(included: int, dropped: int) -> list[dict]:
    return [{"ref": f"evt:e{n:05d}", "class": "evidence", "kind": "note", "score": 0.5,
             "tokens": 10 + n, "decision": "included" if n < included else "dropped",
             "reason": "fits" if n < included else "budget", "position": n, "note": ""}
            for n in range(included + dropped)]


def test_every_row_that_got_in_is_listed_and_dropped_ones_up_to_the_cap(store):
    entries = _entries(3, views.DROPPED_SHOWN + 150)
    shown = views._manifest_view(store, entries, None, all_rows=False)
    assert [e["ref"] for e in shown["entries"]] == [e["ref"] for e in entries][
        :3 + views.DROPPED_SHOWN]
    assert shown["hidden"] == 150 and shown["total"] == len(entries)
    assert shown["dropped"] == {"dropped: budget": views.DROPPED_SHOWN + 150}
    assert shown["max_tokens"] == max(e["tokens"] for e in entries)
    everything = views._manifest_view(store, entries, None, all_rows=True)
    assert everything["entries"] == entries and everything["hidden"] == 0
    # "Why not X?" looks at every row, listed or not.
    last = entries[-1]["ref"]
    answer = views._manifest_view(store, entries, last, all_rows=False)["answer"]
    assert answer["rows"][0]["entries"] == [entries[-1]]
