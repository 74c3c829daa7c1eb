"""The event refs stored packs list, for retention (`agentstate gc` keeps those events).

Apart from manifest.py so that gc reads them without importing the context engine
(its candidates, essentials and preferences: ~70 ms of a gc process, issue 24)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentstate.store.db import Store


def event_refs_in_packs(store: Store) -> set[str]:
    """Every `evt:…` ref some stored pack's manifest lists (retention keeps those events)."""
    return {r[0] for r in store.conn.execute(
        "SELECT DISTINCT ref FROM pack_items WHERE ref LIKE 'evt:%'")}
