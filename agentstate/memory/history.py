"""A memory's audit trail: `memory_history`, one row a change, never the text itself.

Every write, correction, import and forgetting appends here (`record_history`, or
`record_histories` for many rows at once); `memory history` reads it back (`get_history`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstate.errors import NotFound
from agentstate.store.refs import make_ref, parse_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store


@dataclass
class HistoryEntry:
    memory: str
    version: int | None
    op: str
    actor: str
    reason: str
    time: str
    text_hash: str | None
    detail: dict[str, Any]


def get_history(store: Store, ref: str) -> list[HistoryEntry]:
    parsed = parse_ref(ref, expect="mem")
    rows = store.rows("SELECT * FROM memory_history WHERE memory = ? ORDER BY hid",
                      (parsed.id,))
    if not rows:
        raise NotFound(f"no memory {make_ref('mem', parsed.id)}")
    return [
        HistoryEntry(
            memory=make_ref("mem", r["memory"], r["version"]) if r["version"] else
            make_ref("mem", r["memory"]),
            version=r["version"], op=r["op"], actor=r["actor"], reason=r["reason"],
            time=r["time"], text_hash=r["text_hash"], detail=json.loads(r["detail"] or "{}"),
        )
        for r in rows
        if parsed.version is None or r["version"] in (None, parsed.version)
    ]


def record_history(store: Store, memory_id: str, version: int | None, op: str, actor: str,
                   reason: str, text: str | None = None, **detail: Any) -> None:
    """Append one audit row. Never pass memory text in `reason` or `detail`: only its keyed
    hash is kept (agentstate.store.keys), so a purge leaves nothing readable behind and the
    hash cannot confirm a guess without the store's key."""
    from agentstate.store.keys import keyed_hash

    store.conn.execute(
        "INSERT INTO memory_history (memory, version, op, actor, reason, time, text_hash, detail)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (memory_id, version, op, actor, reason, store.now(),
         keyed_hash(store.root, text) if text is not None else None,
         json.dumps(detail, ensure_ascii=False, sort_keys=True)),
    )


def record_histories(store: Store, entries: list[tuple[str, int | None, str, str, str,
                                                      str | None, dict[str, Any] | str]]
                     ) -> None:
    """Many audit rows at once, each (memory, version, op, actor, reason, text, detail) as
    record_history takes them (the store's key read once, one statement). A `detail` given
    as a string is the JSON record_history would make of it, already encoded by a caller
    that spells it faster (sync/merge.py: a first import writes one a version)."""
    from agentstate.store.keys import keyed_hasher

    if not entries:
        return
    now, hasher = store.now(), keyed_hasher(store.root)
    store.conn.executemany(
        "INSERT INTO memory_history (memory, version, op, actor, reason, time, text_hash, detail)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(memory_id, version, op, actor, reason, now,
          hasher(text) if text is not None else None,
          detail if isinstance(detail, str)
          else json.dumps(detail, ensure_ascii=False, sort_keys=True))
         for memory_id, version, op, actor, reason, text, detail in entries])
