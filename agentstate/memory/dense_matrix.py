"""The matrix of one store's vectors of one model and kind, kept in the process between
searches and scored with one product per query (`_Index`)."""

from __future__ import annotations

from typing import Any

from agentstate.memory.dense_model import DIM
from agentstate.memory.dense_vectors import _Vectors

# Vectors scaled into the matrix per block when it is read (`_Index.add`): 2,048 rows of
# DIM bytes and floats stay in a core's cache while they are transposed.
SCATTER_ROWS = 2048

# Rows beyond the `limit` asked for that are ordered with it, so that equal scores at the
# edge of the list are ordered by key (as a re-read from the table ordered them) rather
# than by where the partial sort happened to leave them.
TIE_MARGIN = 16


class _Index:
    """The stored vectors of one store, model and kind, kept in the process between
    searches (bench/bench_context.py: reading and converting 100,000 vectors took ~50 ms,
    and counting the vectors and texts to learn whether any were missing ~20 ms, on every
    query; a search now reads only what is new).

    What keeps it right without reading the table again:
    - a vector's rowid is its text's row (m040, m062): once every text had a vector, a new
      vector, this process's or another's, is a new text's, above `top`: read by rowid on
      every search (until then the table is read whole on each search, `_embed_missing`);
    - texts added after the index was complete (`mark`, their largest rowid then) are
      embedded on the next search, found by rowid (no count);
    - a vector deleted or changed in place (a purge's or a deleted event's trigger, another
      model's run) moves the table's count of changes (m052, read with the largest rowid):
      a search that finds it moved reads the index afresh, so nothing deleted is ever
      ranked from memory. While it has not moved, the matrix holds exactly what is stored
      and an answer is scored from it (the best rows were read back from the table on every
      search before: 3-20 ms at 100,000 vectors on a loaded machine, about as much as the
      product itself).
    The matrix is (DIM, capacity), its columns the vectors: a query is one BLAS product over
    contiguous rows of DIM values, and new columns fill the spare capacity."""

    def __init__(self, kind: _Vectors, model: str, file_id: tuple[int, int],
                 changes: int) -> None:
        import numpy as np

        self.kind, self.model, self.file_id = kind, model, file_id
        self.changes = changes                 # the table's count of changes it holds
        self.keys: list[Any] = []              # column → key
        self.column: dict[Any, int] = {}       # key → column
        self.matrix = np.zeros((DIM, 1024), np.float32)
        self.top = 0                           # the largest vector rowid read
        self.mark: int | None = None           # texts up to here all had vectors

    @property
    def size(self) -> int:
        return len(self.keys)

    def add(self, rows: list[tuple[int, Any, bytes]]) -> None:
        """Put vectors (rowid, key, blob) into their columns (a known key's is replaced)."""
        import numpy as np

        from agentstate.memory import dense_codec

        if not rows:
            return
        need = self.size + len(rows)
        if need > self.matrix.shape[1]:
            grown = np.zeros((DIM, max(need, 2 * self.matrix.shape[1])), np.float32)
            grown[:, :self.size] = self.matrix[:, :self.size]
            self.matrix = grown
        start = self.size
        columns = []
        for _, key, _ in rows:
            col = self.column.get(key)
            if col is None:
                col = self.column[key] = len(self.keys)
                self.keys.append(key)
            columns.append(col)
        ints, scales = dense_codec.split_rows([r[2] for r in rows], DIM)
        if self.size - start == len(rows):
            # Every key new (a matrix read whole, new texts): the bytes are scaled straight
            # into their columns, with no n x DIM float copy between (a process's first
            # search converts the whole table), in blocks of rows whose transposition stays
            # in the CPU's cache (100,000 vectors: 48 ms, against 122 ms in one go and
            # 309 ms for the float16 rows this replaced).
            for a in range(0, len(rows), SCATTER_ROWS):
                b = min(len(rows), a + SCATTER_ROWS)
                np.multiply(ints[a:b].T, scales[a:b].T,
                            out=self.matrix[:, start + a:start + b])
        else:  # keys are unique in a vector table
            self.matrix[:, columns] = (ints * scales).T
        self.top = max(self.top, max(r[0] for r in rows))

    def nearest(self, q: Any, limit: int) -> list[tuple[Any, float]]:
        """The `limit` best keys for the query vector `q`, best first (equal scores by key):
        one product over every vector. (Scoring a prefix of the dimensions first and the
        whole vector of a pool after was tried: at 100,000 vectors the gather of the pool's
        columns cost more than the half of the matrix it saved reading.)"""
        import numpy as np

        n = self.size
        if n == 0 or limit < 1:
            return []
        k = min(limit + TIE_MARGIN, n)
        pool = np.arange(n) if k >= n else np.argpartition(-(q @ self.matrix[:, :n]), k - 1)[:k]
        keys = self.keys
        best = sorted(pool.tolist(), key=keys.__getitem__)
        # The pool scored again as rows in key order, the arithmetic the stored rows were
        # scored with when they were read back: the same sums, so the same order of
        # near-equal scores (the whole product sums in another order, ~1e-8 apart).
        scores = np.ascontiguousarray(self.matrix[:, best].T) @ q
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(keys[best[i]], float(scores[i])) for i in order]
