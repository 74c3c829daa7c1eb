"""Storing and reading pack manifests (`pack:ID`): the context layer's part of tracing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentstate.context.candidates import ManifestEntry, allocation_rows
from agentstate.context.pack_refs import DECISION, POSITION, REASON, REF, encode_items, ref_needle
from agentstate.errors import NotFound
from agentstate.safety import refuse_secrets
from agentstate.store.db import Store
from agentstate.store.refs import make_ref, parse_ref


@dataclass
class StoredPack:
    ref: str
    run: str | None
    principal: str
    query: str
    budget: int
    tokens: int
    text_hash: str
    created: str
    allocation: list[dict[str, Any]]
    items: list[ManifestEntry] = field(default_factory=list)


def save_pack(store: Store, pack: Any) -> str:
    """Store the pack's manifest and text hash (never its text) in one transaction."""
    # The query is user input written to the store: the same secret rule as every write path.
    refuse_secrets(pack.query, "the context query")
    pack_id = store.new_id()
    run_id = pack.run.removeprefix("run:") if pack.run else None
    items = encode_items((e.ref, e.cls, e.score, e.tokens, e.decision, e.reason, e.position,
                          e.note) for e in pack.manifest)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO packs (id, run, principal, query, budget, tokens, text_hash, created,"
            " allocation, items) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (pack_id, run_id, pack.principal, pack.query, pack.budget, pack.tokens,
             pack.text_hash, pack.created, json.dumps(allocation_rows(pack.allocation)), items),
        )
    return make_ref("pack", pack_id)


def load_pack(store: Store, ref: str) -> StoredPack:
    parsed = parse_ref(ref, expect="pack")
    row = store.conn.execute(
        "SELECT id, run, principal, query, budget, tokens, text_hash, created, allocation, items "
        "FROM packs WHERE id = ?", (parsed.id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no pack {ref}")
    items = [ManifestEntry(ref=i[0], cls=i[1], score=i[2], tokens=i[3], decision=i[4],
                           reason=i[5], position=i[6], note=i[7]) for i in json.loads(row[9])]
    return StoredPack(
        ref=make_ref("pack", row[0]), run=make_ref("run", row[1]) if row[1] else None,
        principal=row[2], query=row[3], budget=row[4], tokens=row[5], text_hash=row[6],
        created=row[7], allocation=json.loads(row[8] or "[]"), items=items,
    )


@dataclass
class PackUse:
    """One pack's decision about a ref: how a fragment fared in that pack."""

    pack: str
    run: str | None
    created: str
    ref: str
    decision: str
    reason: str
    position: int | None


def packs_including(store: Store, refs: list[str], *, limit: int = 50) -> list[PackUse]:
    """Packs whose manifest considered any of `refs` (newest first), with the decision."""
    uses: list[PackUse] = []
    for use in _uses_newest_first(store, set(refs)):
        uses.append(use)
        if len(uses) == limit:
            break
    return uses


def packs_including_each(store: Store, refs: list[str], *,
                         limit: int = 5) -> dict[str, list[PackUse]]:
    """For each of `refs`, up to `limit` packs that considered it (newest first), in one
    pass over the packs: a ref no pack lists costs a read of every pack's text, so a page
    asking about several refs reads them once, not once a ref."""
    found: dict[str, list[PackUse]] = {ref: [] for ref in refs}
    wanted = set(refs)
    for use in _uses_newest_first(store, wanted):
        if len(found[use.ref]) < limit:
            found[use.ref].append(use)
        if len(found[use.ref]) == limit:
            wanted.discard(use.ref)  # read by the generator at its next pack
        if not wanted:
            break
    return found


def _uses_newest_first(store: Store, wanted: set[str]) -> Iterator[PackUse]:
    """Every use of a ref in `wanted` (which the caller may shrink between packs), packs
    newest first."""
    # Newest first, one pack's text at a time, so a ref most packs considered is answered
    # from the newest few; a pack's array is parsed only where its text spells a ref (the
    # column has no index by ref: pack_refs.py). Python's substring search is quicker than
    # SQLite's `instr` choosing the packs (docs/development.md, the 12:36 fresh-clone run).
    needles = {ref: ref_needle(ref) for ref in wanted}
    order = store.conn.execute("SELECT rowid FROM packs ORDER BY created DESC, rowid DESC")
    for (rowid,) in order.fetchall():
        if not wanted:
            return
        pack_id, run, created, items = store.conn.execute(
            "SELECT id, run, created, items FROM packs WHERE rowid = ?", (rowid,)).fetchone()
        spelled = {ref for ref in wanted if needles[ref] in items}
        if not spelled:
            continue
        for item in json.loads(items):
            if item[REF] in spelled:
                yield PackUse(pack=make_ref("pack", pack_id),
                              run=make_ref("run", run) if run else None, created=created,
                              ref=item[REF], decision=item[DECISION], reason=item[REASON],
                              position=item[POSITION])


@dataclass(frozen=True)
class PackSummary:
    """A stored pack, without its items."""

    pack: str
    created: str
    budget: int
    tokens: int
    text_hash: str

    def as_dict(self) -> dict[str, Any]:
        return {"pack": self.pack, "created": self.created, "budget": self.budget,
                "tokens": self.tokens, "text_hash": self.text_hash}


def packs_of_run(store: Store, run_id: str, *, limit: int = 50) -> list[PackSummary]:
    """The packs assembled for a run, newest first."""
    return [
        PackSummary(pack=make_ref("pack", r[0]), created=r[1], budget=r[2], tokens=r[3],
                    text_hash=r[4])
        for r in store.conn.execute(
            "SELECT id, created, budget, tokens, text_hash FROM packs WHERE run = ? "
            "ORDER BY created DESC, rowid DESC LIMIT ?", (run_id, limit),
        )
    ]


