"""Query vectors and the rankings made with them, kept in the store (`dense_queries`, m050).

Every `context` of a run asks its goal; each one paid for the model (tokenizer, weight
table) to encode the same text and for numpy to multiply it with every stored vector.
A row here keeps, per (model, vector table, digest of the query text):
- the query's vector (float32), so the text is never encoded twice by one model;
- its best keys with their scores (JSON), the vector table's largest rowid scored
  (`vector_top`), the texts' largest rowid then known to have vectors (`text_mark`), and
  whether the list holds every vector of the model (`whole`: a small store).

A kept ranking stays exact while vectors are only added: a new vector has a rowid above
`vector_top` (a vector's rowid is its text's row, m040 and m062, and a new text's row is above
every text the mark covered) and is scored
in Python against the kept query vector (memory/dense.py). Any deleted vector of the table
clears every kept ranking of it (m050's trigger), since an entry of the list may be gone and
another, outside the list, would then belong in it; the query vector is kept (it depends on
the text and the model only). The query text itself is not stored, only its digest.

A ranking is made against the vectors as they were at one count of `vector_changes` (m052:
deleted or changed vectors, per table and model); it is kept only if the count is still that when it
is written (in the writing transaction), so a vector deleted while it was being made never
reaches a kept list — one read, where the keys themselves were looked up again before.

There is a ceiling (KEEP rows, the least recently written go first): a store that sees many
distinct questions keeps the recent ones.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstate.errors import AgentStateError

if TYPE_CHECKING:
    from agentstate.store.db import Store

KEEP = 512


@dataclass(frozen=True)
class Kept:
    """What the store keeps for one query: its vector, and its ranking when still valid."""

    vec: list[float]
    ranked: list[tuple[Any, float]] | None
    vector_top: int
    text_mark: int
    whole: bool
    changes: int  # `vector_changes` of the table the ranking was made against


def digest(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()


# How many vectors of a table (?1) and model (?2) have been deleted or changed in place.
CHANGES = ("(SELECT coalesce((SELECT changes FROM vector_changes WHERE kind = ?1 AND "
           "model = ?2), 0))")


def vector_changes(conn: Any, table: str, model: str) -> int:
    """How many vectors of `table` and `model` have been deleted or changed so far (m052)."""
    return int(conn.execute(f"SELECT {CHANGES}", (table, model)).fetchone()[0])


def read(store: Store, model: str, table: str, query: str) -> Kept | None:
    """The kept vector (and ranking, None once cleared) of `query`, None if never kept. The
    count of changes is read in the same statement: a kept ranking is exact at it (a later
    deletion clears the ranking, m050, and moves the count)."""
    row = store.conn.execute(
        f"SELECT vec, ranked, vector_top, text_mark, whole, {CHANGES} FROM dense_queries "
        "WHERE kind = ?1 AND model = ?2 AND digest = ?3", (table, model, digest(query))
    ).fetchone()
    if row is None:
        return None
    vec, ranked, top, mark, whole, changes = row
    values = list(struct.unpack(f"<{len(vec) // 4}f", vec))
    pairs = [(key, float(score)) for key, score in json.loads(ranked)] if ranked else None
    return Kept(values, pairs, top, mark, bool(whole), changes)


def write(store: Store, model: str, table: str, query: str, kept: Kept) -> bool:
    """Keep `kept` for `query`; False when the store cannot be written now (read-only, busy):
    a read keeps working, it only pays again next time. A ranking made before a vector of
    its table was deleted or changed (the count moved since `kept.changes`) is not kept, only
    the query's vector: the list may name what is gone."""
    ranked = kept.ranked
    blob = struct.pack(f"<{len(kept.vec)}f", *kept.vec)
    try:
        with store.transaction() as conn:
            if ranked and vector_changes(conn, table, model) != kept.changes:
                ranked = None
            conn.execute(
                "INSERT OR REPLACE INTO dense_queries (model, kind, digest, vec, ranked, "
                "vector_top, text_mark, whole) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (model, table, digest(query), blob,
                 None if ranked is None else json.dumps([[k, s] for k, s in ranked]),
                 kept.vector_top, kept.text_mark, int(kept.whole)))
            # REPLACE gives the row the next rowid: the oldest rows are the lowest.
            conn.execute("DELETE FROM dense_queries WHERE rowid <= "
                         "(SELECT max(rowid) FROM dense_queries) - ?", (KEEP,))
    except (AgentStateError, sqlite3.Error):
        return False
    return True


def kept_count(conn: Any) -> int:
    """How many queries are kept (tests, doctor)."""
    return int(conn.execute("SELECT count(*) FROM dense_queries").fetchone()[0])
