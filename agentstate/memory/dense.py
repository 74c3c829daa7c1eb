"""The dense signal: sentence vectors of event texts, computed offline, fused with the
lexical ranking by rank.

The model (a static embedding read from the `wordllama` package's files, no download) is
found and loaded in dense_model.py; the statements each kind of text keeps its vectors
with are in dense_vectors.py; the matrix a process keeps between searches is
dense_matrix.py's `_Index`.

Vectors live in `event_vectors` (memory/memory_tables.py, m020, made compact by m060), one per
event keyed by its search-map row, stored as 8-bit integers with a scale (dense_codec.py),
with the number of its model's name and version (`vector_models`): a vector of another
model is never compared with this one's, and is replaced when the event is embedded again.
They are computed lazily, in batches, by the first search that needs them
(`ensure_vectors`), and by the hook helper's child for a turn's newest events once the
agent has its answer (`embed_recent`). A few texts (a query, a turn) are embedded by the
numpy-free reader (dense_static.py), a batch by the loaded model; a question's vector and
ranking are kept in the store (dense_queries.py), so a question asked again needs neither.
A purge that scrubs an event's text deletes its vector (a trigger), so no trace of erased
text stays in the store.

Memory versions are embedded the same way (`memory_vectors`, m040) and recall fuses
them with its lexical match (memory/recall.py). A search multiplies the query's vector
with every stored vector of its kind; the matrix is kept between searches of one process
and brought up to date by what is new (`_Index`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentstate.memory.dense_matrix import _Index
from agentstate.memory.dense_model import (
    Embedder,
    current_model,
    load_embedder,
    load_static_model,
)
from agentstate.memory.dense_vectors import EVENTS, MEMORIES, _Vectors

if TYPE_CHECKING:
    from agentstate.memory.dense_static import StaticModel
    from agentstate.store.db import Store

# Events embedded per search at most: the first query on a large store pays for this many
# (about 0.3 ms each), the next ones for the rest; fewer than all is still a ranking.
EMBED_BATCH = 5_000
# Reciprocal rank fusion's constant (the usual 60: a rank's share falls slowly, so an item
# near the top of either list stays near the top of the fused one).
RRF_K = 60


def ensure_vectors(store: Store, embedder: Embedder, limit: int = EMBED_BATCH,
                   kind: _Vectors = EVENTS) -> int:
    """Embed up to `limit` texts of `kind` (events by default) that have no vector of this
    model (newest first); vectors of another model are replaced. Returns how many were
    embedded."""
    conn = store.conn
    have, total = conn.execute(kind.counts, (embedder.model,)).fetchone()
    if have >= total:
        return 0
    rows = conn.execute(kind.missing, (embedder.model, limit)).fetchall()
    return _store_vectors(store, _Encoder(embedder.model, embedder), kind, rows)


# Texts embedded by the numpy-free reader at most; a larger batch loads the model (numpy
# and `tokenizers`: ~0.35 s once, then ~0.3 ms a text, where the reader takes 1-10 ms).
STATIC_TEXTS = 64


class _Encoder:
    """Vectors of one model: a few texts through the numpy-free reader (dense_static.py),
    a batch through the loaded model, which is loaded only when a batch needs it. Both make
    the same vectors (tests/memory/test_dense_static.py)."""

    def __init__(self, model: str, embedder: Embedder | None = None) -> None:
        self.model, self.embedder = model, embedder

    def _static(self) -> StaticModel | None:
        static = load_static_model()
        return static if static is not None and static.model == self.model else None

    def _loaded(self) -> Embedder | None:
        if self.embedder is None:
            self.embedder = load_embedder()
        return self.embedder if self.embedder and self.embedder.model == self.model else None

    def blobs(self, texts: list[str]) -> list[bytes] | None:
        """The texts' vectors as stored (dense_codec.py); None when the model is not
        there."""
        from agentstate.memory import dense_codec

        if len(texts) <= STATIC_TEXTS and (static := self._static()) is not None:
            return [dense_codec.encode(static.vector(text)) for text in texts]
        embedder = self._loaded()
        if embedder is None:
            return None
        return dense_codec.encode_rows(embedder.encode(texts))

    def query(self, text: str) -> list[float] | None:
        """A query's vector (float32 precision)."""
        if (static := self._static()) is not None:
            return static.vector(text)
        embedder = self._loaded()
        return None if embedder is None else [float(x) for x in embedder.encode([text])[0]]


def _store_vectors(store: Store, enc: _Encoder, kind: _Vectors,
                   rows: list[tuple[Any, str | None]]) -> int:
    if not rows:
        return 0
    blobs = enc.blobs([text or "" for _, text in rows])
    if blobs is None:
        return 0
    # Written in key order, whatever order the texts were chosen in: the key is the table's
    # rowid, and a batch of the newest texts first, written top down, left its pages half
    # empty (10,000 memory vectors: 5.4 MB, 2.7 of it unused).
    written = sorted(zip((key for key, _ in rows), blobs, strict=True))
    with store.transaction() as conn:
        model = model_id(conn, enc.model)
        conn.executemany(kind.drop, [(key,) for key, _ in written])
        conn.executemany(kind.insert, [(key, model, blob) for key, blob in written])
    return len(rows)


def model_id(conn: Any, model: str) -> int:
    """The model's number in `vector_models` (m060), given one the first time it stores a
    vector (inside the caller's transaction)."""
    conn.execute("INSERT OR IGNORE INTO vector_models (name) VALUES (?)", (model,))
    found: int = conn.execute("SELECT id FROM vector_models WHERE name = ?",
                              (model,)).fetchone()[0]
    return found


def embed_recent(store: Store, newest: int = STATIC_TEXTS) -> int:
    """Embed what the newest `newest` events and memory versions lack, with the numpy-free
    reader only (never loading numpy or `tokenizers`); returns how many. The hook helper
    runs this after the agent has its answer (integrations/hook_runner.py), so the next
    `context` finds a turn's events embedded and pays for no model. Nothing without the
    model; a store whose older texts lack vectors is left to the next search's batch."""
    model = current_model()
    static = load_static_model()
    if model is None or static is None:
        return 0
    enc = _Encoder(model)
    done = 0
    for kind in (EVENTS, MEMORIES):
        rows = store.conn.execute(kind.recent, (newest, model)).fetchall()
        done += _store_vectors(store, enc, kind, rows)
    return done


def vector_models(conn: Any) -> dict[str, int]:
    """How many event vectors each model has, on an open connection (doctor, tests)."""
    return {model: n for model, n in conn.execute(
        "SELECT m.name, count(*) FROM event_vectors v JOIN vector_models m ON m.id = v.model "
        "GROUP BY m.name ORDER BY m.name")}


def dense_ranked(store: Store, query: str, limit: int, embedder: Embedder | None = None
                 ) -> list[tuple[str, float]]:
    """(event id, cosine similarity) of the events nearest to `query`, best first, among
    those embedded with the current model (events not yet embedded are embedded first,
    up to EMBED_BATCH). [] without the model."""
    return _nearest(store, query, limit, embedder, EVENTS)


def dense_memory_ranked(store: Store, query: str, limit: int,
                        embedder: Embedder | None = None) -> list[tuple[int, float]]:
    """(memory version row, cosine similarity) of the memory versions nearest to `query`,
    best first, like `dense_ranked` (every status: the read gate decides). [] without the
    model."""
    return _nearest(store, query, limit, embedder, MEMORIES)


def _nearest(store: Store, query: str, limit: int, embedder: Embedder | None,
             kind: _Vectors) -> list[Any]:
    """The ranking kept in the store for this query, brought up to date without numpy
    (`_from_kept`); else the query's kept vector (or a new one) against the matrix."""
    from agentstate.memory import dense_queries

    if not query.strip() or limit < 1 or _cjk(query):
        return []
    model = embedder.model if embedder is not None else current_model()
    if model is None:
        return []
    enc = _Encoder(model, embedder)
    kept = dense_queries.read(store, model, kind.table, query)
    if kept is not None and kept.ranked is not None:
        quick = _from_kept(store, enc, kind, query, kept, limit)
        if quick is not None:
            return quick
    vec = kept.vec if kept is not None else enc.query(query)
    if vec is None:
        return []
    if not any(vec):  # no token of the query is in the vocabulary: nothing ever ranks
        if kept is None:
            dense_queries.write(store, model, kind.table, query,
                                dense_queries.Kept(vec, [], 0, 0, True, 0))
        return []
    return _ranked_afresh(store, enc, kind, query, vec, limit)


# Up to this many texts and vectors (their largest rowids, which bound their counts) a new
# query is scored in Python, one dot product per stored vector (~10 ms per 1,000), where
# numpy costs ~180 ms to import; above, the process's matrix (`_Index`).
PY_VECTORS = 2_000


def _ranked_afresh(store: Store, enc: _Encoder, kind: _Vectors, query: str,
                   vec: list[float], limit: int) -> list[Any]:
    """The query against every stored vector, kept for next time (`dense_queries`)."""
    from agentstate.memory import dense_queries

    conn = store.conn
    text_top = conn.execute(kind.text_top).fetchone()[0] or 0
    vector_top = conn.execute(f"SELECT max(rowid) FROM {kind.table}").fetchone()[0] or 0
    if max(text_top, vector_top) <= PY_VECTORS:
        found, kept = _scored_in_python(store, enc, kind, vec, limit, text_top)
    else:
        import numpy as np

        index = _index(store, enc, kind)
        found = index.nearest(np.asarray(vec, np.float32), limit)
        # A ranking is kept only when every text had a vector (else what is missing would
        # be embedded later below the mark, and the kept list would never see it).
        kept = dense_queries.Kept(vec, found if index.mark is not None else None, index.top,
                                  index.mark or 0, index.size <= limit, index.changes)
    dense_queries.write(store, enc.model, kind.table, query, kept)
    return found


def _scored_in_python(store: Store, enc: _Encoder, kind: _Vectors, vec: list[float],
                      limit: int, text_top: int) -> tuple[list[Any], Any]:
    """A small store's ranking without numpy: what lacks a vector embedded first, then
    every vector of the model scored (`text_top` read before, so a text added meanwhile is
    above the kept mark)."""
    from agentstate.memory import dense_codec, dense_queries

    conn = store.conn
    _store_vectors(store, enc, kind, conn.execute(kind.missing, (enc.model, PY_VECTORS + 1)
                                                  ).fetchall())
    # Read before the vectors, so that it covers them.
    changes = dense_queries.vector_changes(conn, kind.table, enc.model)
    rows = conn.execute(kind.newer, (0, enc.model)).fetchall()
    # Equal scores (equal texts): the newer text first. Rows come in rowid order, which is
    # the texts' order since m062; before it, it was the order vectors were written in,
    # newest first for a store embedded by one search, which this keeps.
    scored = sorted(((key, dense_codec.dot(vec, blob)) for _, key, blob in reversed(rows)),
                    key=lambda item: -item[1])
    top = max((rowid for rowid, _, _ in rows), default=0)
    return scored[:limit], dense_queries.Kept(vec, scored[:limit], top, text_top,
                                              len(scored) <= limit, changes)


# A kept ranking is brought up to date in Python for at most this many new texts to embed
# and new vectors to score (a dot product of DIM floats: ~10 us each); beyond, the matrix.
QUICK_TEXTS = 32
QUICK_VECTORS = 512


def _from_kept(store: Store, enc: _Encoder, kind: _Vectors, query: str,
               kept: Any, limit: int) -> list[Any] | None:
    """The kept ranking with the vectors added since scored against the kept query vector,
    the texts added since embedded first (a few, by the numpy-free reader); None where that
    would not be exact (a list shorter than `limit` of a larger store) or cheap."""
    from agentstate.memory import dense_codec, dense_queries

    if not any(kept.vec):
        return []
    if not kept.whole and len(kept.ranked) < limit:
        return None
    conn = store.conn
    mark = conn.execute(kind.text_top).fetchone()[0] or 0  # first: a text added meanwhile
    pending = conn.execute(kind.new_texts,                  # is above it
                           (kept.text_mark, enc.model, QUICK_TEXTS + 1)).fetchall()
    if len(pending) > QUICK_TEXTS or _store_vectors(store, enc, kind, pending) < len(pending):
        return None
    new = conn.execute(kind.newer + " LIMIT ?",
                       (kept.vector_top, enc.model, QUICK_VECTORS + 1)).fetchall()
    if len(new) > QUICK_VECTORS:
        return None
    if not new and mark == kept.text_mark:
        return kept.ranked[:limit]
    scores = dict(kept.ranked)
    for _, key, blob in new:
        scores[key] = dense_codec.dot(kept.vec, blob)
    ranked = sorted(scores.items(), key=lambda item: -item[1])  # stable: kept order on ties
    if not kept.whole:
        ranked = ranked[:len(kept.ranked)]
    top = max([kept.vector_top, *(rowid for rowid, _, _ in new)])
    dense_queries.write(store, enc.model, kind.table, query,
                        dense_queries.Kept(kept.vec, ranked, top, mark, kept.whole, kept.changes))
    return ranked[:limit]


def _cjk(query: str) -> bool:
    """Whether the query holds Chinese, Japanese or Korean script. The bundled model's
    vocabulary is English: it splits such text into byte pieces that every text of the
    script shares, so any two score alike (a question about the weather scores 0.37 against
    a note on a failed migration, above the same pair's related texts in English). Those
    queries keep the lexical path, whose trigram index serves them."""
    from agentstate.memory.terms import split_query

    return not query.isascii() and bool(split_query(query)[1])


# One store's indexes (its events' and its memories'), kept while searches go to that
# store's file; a search on another file starts afresh (an eval opens many small stores).
_CACHE: dict[tuple[str, str, str], _Index] = {}


def _index(store: Store, enc: _Encoder, kind: _Vectors) -> _Index:
    """The index of `kind` for this store and model, brought up to date."""
    import os

    from agentstate.memory import dense_queries

    conn = store.conn
    where = str(conn.execute("PRAGMA database_list").fetchone()[2])
    info = os.stat(where) if where else None
    file_id = (info.st_dev, info.st_ino) if info else (0, id(conn))
    key = (where, enc.model, kind.table)
    index = _CACHE.get(key)
    # One statement, one snapshot: the count first covers every row read after it.
    vector_top, changes = conn.execute(
        f"SELECT (SELECT max(rowid) FROM {kind.table}), {dense_queries.CHANGES}",
        (kind.table, enc.model)).fetchone()
    if (index is None or index.file_id != file_id or changes != index.changes
            or (vector_top or 0) < index.top):
        # First search here, another file at the same path (a restore), or a vector
        # deleted or changed since the index was read: read it whole.
        for old in [k for k in _CACHE if k[0] != where]:
            del _CACHE[old]
        index = _CACHE[key] = _Index(kind, enc.model, file_id, changes)
    _embed_missing(store, enc, kind, index)
    index.add(conn.execute(kind.newer, (index.top, enc.model)).fetchall())
    return index


def _embed_missing(store: Store, enc: _Encoder, kind: _Vectors, index: _Index) -> None:
    """Embed the texts without a vector: once the index is complete, only texts added since
    (by rowid, no count); until then, the next EMBED_BATCH of every text, newest first."""
    conn = store.conn
    mark = conn.execute(kind.text_top).fetchone()[0] or 0  # read first: a text added
    if index.mark is not None:                              # meanwhile is above it
        rows = conn.execute(kind.new_texts, (index.mark, enc.model, EMBED_BATCH)
                            ).fetchall()
        _store_vectors(store, enc, kind, rows)
        if len(rows) < EMBED_BATCH:
            index.mark = mark
        return
    have, total = conn.execute(kind.counts, (enc.model,)).fetchone()
    # A vector's rowid is its text's row (m040, m062): a batch of older texts, embedded here
    # or by another process since this matrix was read, lands below the rowids it has read,
    # where `newer` never looks. So until every text has a vector the matrix reads the table
    # again on each search (while batches remain, each of which costs far more), and once
    # more when they all have one.
    index.top = 0
    if have < total:
        rows = conn.execute(kind.missing, (enc.model, EMBED_BATCH)).fetchall()
        if _store_vectors(store, enc, kind, rows) < total - have:
            return
    index.mark = mark


# ---------------------------------------------------------------- fusion


def fuse(lexical: list[str], dense: list[str], dense_weight: float, k: int = RRF_K
         ) -> list[str]:
    """Weighted reciprocal rank fusion: each list gives an item weight / (k + rank), and
    items are ordered by the sum (ties: the lexical order first, then the dense order).
    With `dense_weight` 0 the lexical order is returned unchanged, with dense-only items
    after it."""
    score: dict[str, float] = {}
    for rank, item in enumerate(lexical, 1):
        score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    for rank, item in enumerate(dense, 1):
        score[item] = score.get(item, 0.0) + dense_weight / (k + rank)
    place = {item: n for n, item in enumerate(dict.fromkeys([*lexical, *dense]))}
    return sorted(score, key=lambda item: (-score[item], place[item]))
