"""Query vectors and the rankings made with them, kept in the store (`dense_queries`, m050).

Every `context` of a run asks its goal; each one paid for the model (tokenizer, weight
table) to encode the same text and for numpy to multiply it with every stored vector.
A row here keeps, per (model, vector table, digest of the query text):
- the query's vector (float32), so the text is never encoded twice by one model;
- its best keys with their scores (JSON), the vector table's largest rowid scored
  (`vector_top`), the texts' largest rowid then known to have vectors (`text_mark`), and
  whether the list holds every vector of the model (`whole`: a small store).

A kept ranking stays exact while vectors are only added: a new vector has a rowid above
`vector_top` (events: SQLite gives the next rowid; memory versions: the vector's rowid is the
version's row, and a new version's row is above every text the mark covered) and is scored
in Python against the kept query vector (memory/dense.py). Any deleted vector of the table
clears every kept ranking of it (m050's trigger), since an entry of the list may be gone and
another, outside the list, would then belong in it; the query vector is kept (it depends on
the text and the model only). The query text itself is not stored, only its digest.

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


def digest(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()


def read(store: Store, model: str, table: str, query: str) -> Kept | None:
    """The kept vector (and ranking, None once cleared) of `query`, None if never kept."""
    row = store.conn.execute(
        "SELECT vec, ranked, vector_top, text_mark, whole FROM dense_queries "
        "WHERE model = ? AND kind = ? AND digest = ?", (model, table, digest(query))).fetchone()
    if row is None:
        return None
    vec, ranked, top, mark, whole = row
    values = list(struct.unpack(f"<{len(vec) // 4}f", vec))
    pairs = [(key, float(score)) for key, score in json.loads(ranked)] if ranked else None
    return Kept(values, pairs, top, mark, bool(whole))


def write(store: Store, model: str, table: str, query: str, kept: Kept, key_column: str
          ) -> bool:
    """Keep `kept` for `query`; False when the store cannot be written now (read-only, busy):
    a read keeps working, it only pays again next time. A ranking naming a key whose vector
    is gone by now (deleted since it was scored) is not kept, only the vector."""
    ranked = kept.ranked
    blob = struct.pack(f"<{len(kept.vec)}f", *kept.vec)
    try:
        with store.transaction() as conn:
            if ranked:
                keys = [key for key, _ in ranked]
                have = conn.execute(
                    f"SELECT {key_column} FROM {table} WHERE +model = ? AND {key_column} IN "
                    f"({','.join('?' * len(keys))})", (model, *keys)).fetchall()
                if len(have) != len(set(keys)):
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
