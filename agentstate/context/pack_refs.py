"""A stored pack's manifest as one JSON column, and the refs stored packs list.

A pack's row holds its manifest in `packs.items` (m061): one array per fragment considered,
in the order considered, with the fields of `ITEM_FIELDS`. One row per fragment with an
index by ref (m301) made every record write a page of that index per fragment, at places
spread over the whole index: 13 pages of 16 KB for a fresh store's pack, 217 once 1,000
packs were stored, each copied again by the close's checkpoint (issue 24). The one row is
appended where the table ends: ~6 pages, however many packs there are. What the index
answered — the packs that considered a ref — is found by the ref's JSON spelling in the
column (`ref_needle`) before any array is parsed.

Apart from manifest.py so that gc reads the refs without importing the context engine
(its candidates, essentials and preferences: ~70 ms of a gc process, issue 24), and so that
the migration writes the format the readers read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from agentstate.lazy_re import LazyPattern

if TYPE_CHECKING:
    from agentstate.store.db import Store

# The fields of one manifest item, in their order in the stored array.
ITEM_FIELDS = ("ref", "class", "score", "tokens", "decision", "reason", "position", "note")
REF, DECISION, REASON, POSITION = 0, 4, 5, 6
# An item's ref where it is an event's: `["` opens an item only (inside a JSON string a
# quote is escaped), and an event's id needs no escape. Matched in the text: 4-5x
# quicker than parsing every array of every pack.
_EVENT_REF = LazyPattern(r'\["(evt:[^"\\]*)"')


def encode_items(items: Iterable[Sequence[Any]]) -> str:
    """The `packs.items` text of a manifest's items (each in `ITEM_FIELDS` order)."""
    return json.dumps([list(item) for item in items], separators=(",", ":"))


def ref_needle(ref: str) -> str:
    """How `ref` is spelled inside `encode_items`' text: a row without it holds no item of
    it (the same encoder escapes both)."""
    return json.dumps(ref)


def event_refs_in_packs(store: Store) -> set[str]:
    """Every `evt:…` ref some stored pack's manifest lists (retention keeps those events)."""
    refs: set[str] = set()
    for (items,) in store.conn.execute("SELECT items FROM packs WHERE instr(items, '[\"evt:')"):
        refs.update(_EVENT_REF.findall(items))
    return refs
