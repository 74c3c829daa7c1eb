"""The dense signal: sentence vectors of event texts, computed offline, fused with the
lexical ranking by rank.

The model is a static embedding (WordLlama's `l2_supercat_256`: one 256-dimension vector
per token of a 32,000-token vocabulary, averaged over a text's tokens) read from the files
the `wordllama` package installs — weights and tokenizer ship inside its wheel, so nothing
is ever downloaded. It is optional (the `dense` extra): without it `available()` says why
and every caller keeps the lexical path. Why this model (measured in docs/evaluation.md
and pyproject.toml): on the LoCoMo dev split it ranks an evidence turn in the top 10 for
41% of questions (a 64-dimension static model: 25%; a 4-bit e5-small: better, but ~58 ms
of CPU per text against 0.3 ms here).

The files are read with `tokenizers` and `safetensors` (the package's own dependencies)
rather than through `wordllama.WordLlama.load`: the package's loader imports pydantic and
its training code (~1.2 s on these machines) and looks for the tokenizer where the wheel
does not put it (it then tries to download it). What it computes is the same: the mean of
the token vectors, normalised (a test compares the two).

Vectors live in `event_vectors` (memory/memory_tables.py, m020), one per event, with the model's
name and version: a vector of another model is never compared with this one's, and is
replaced when the event is embedded again. They are computed lazily, in batches, by the
first search that needs them (`ensure_vectors`), never by a hook: hooks do not search.
A purge that scrubs an event's text deletes its vector (a trigger), so no trace of erased
text stays in the store.

Memory versions are embedded the same way (`memory_vectors`, m040) and recall fuses
them with its lexical match (memory/recall.py). A search multiplies the query's vector
with every stored vector of its kind; the matrix is kept between searches of one process
(`_matrix`) and read again when the table changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentstate.store.db import Store

PACKAGE = "wordllama"
CONFIG = "l2_supercat"
DIM = 256
# Events embedded per search at most: the first query on a large store pays for this many
# (about 0.3 ms each), the next ones for the rest; fewer than all is still a ranking.
EMBED_BATCH = 5_000
# Reciprocal rank fusion's constant (the usual 60: a rank's share falls slowly, so an item
# near the top of either list stays near the top of the fused one).
RRF_K = 60


@dataclass(frozen=True)
class Signal:
    """Which retrieval signal is active, and why (doctor prints `detail`)."""

    dense: bool
    model: str          # name@version, "" without the package
    detail: str


class Embedder:
    """The installed static model: text → L2-normalised float32 vectors."""

    def __init__(self, tokenizer: Any, table: Any, model: str) -> None:
        self.tokenizer = tokenizer
        self.table = table  # (vocabulary, DIM) float16
        self.model = model

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        top = self.table.shape[0] - 1
        for i, enc in enumerate(encoded):
            ids = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, top)
            if ids.size:
                out[i] = self.table[ids].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _package_files() -> tuple[Any, Any, str] | str:
    """(weights path, tokenizer path, version), or why the model cannot be used."""
    import importlib.util
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return (f"lexical search only: the dense signal needs the `{PACKAGE}` package "
                "(pip install 'agentstate-cli[dense]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    weights = root / "weights" / f"{CONFIG}_{DIM}.safetensors"
    tokenizer = root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
    missing = [p.name for p in (weights, tokenizer) if not p.is_file()]
    if missing:
        return f"lexical search only: {PACKAGE} is installed without {', '.join(missing)}"
    try:
        number = version(PACKAGE)
    except PackageNotFoundError:
        number = "unknown"
    return weights, tokenizer, number


@lru_cache(maxsize=1)
def load_embedder() -> Embedder | None:
    """The model, loaded once per process; None when it is not installed or unreadable."""
    found = _package_files()
    if isinstance(found, str):
        return None
    weights, tokenizer_path, number = found
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        table = load_file(str(weights))["embedding.weight"]
    except Exception:  # a broken install: the lexical path, and doctor says why
        return None
    return Embedder(tokenizer, table, f"{PACKAGE}-{CONFIG}-{DIM}@{number}")


def signal() -> Signal:
    """Which signal searches use here (doctor's line)."""
    found = _package_files()
    if isinstance(found, str):
        return Signal(False, "", found)
    embedder = load_embedder()
    if embedder is None:
        return Signal(False, "", f"lexical search only: {PACKAGE}'s model files do not load")
    return Signal(True, embedder.model,
                  f"lexical + dense ({embedder.model}, fused by rank)")


# ---------------------------------------------------------------- vectors


@dataclass(frozen=True)
class _Vectors:
    """Where one kind of text keeps its vectors: the statements that count, find, store and
    read them (written out whole, so the tables each one names are plain to read)."""

    table: str       # the vector table (the matrix cache's key)
    counts: str      # (vectors of the model, texts)
    missing: str     # (key, text) of texts without a vector of the model, newest first
    upsert: str      # (key, model, vec)
    vectors: str     # (key, vec) of the model
    stamp: str       # (count, largest rowid) of the vector table: has it changed?


EVENTS = _Vectors(
    "event_vectors",
    "SELECT (SELECT count(*) FROM event_vectors WHERE model = ?), "
    "(SELECT count(*) FROM events)",
    "SELECT e.id, e.text FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_vectors v "
    "WHERE v.event_id = e.id AND v.model = ?) ORDER BY e.rowid DESC LIMIT ?",
    "INSERT INTO event_vectors (event_id, model, vec) VALUES (?, ?, ?) "
    "ON CONFLICT(event_id) DO UPDATE SET model = excluded.model, vec = excluded.vec",
    "SELECT event_id, vec FROM event_vectors WHERE model = ?",
    "SELECT count(*), max(rowid) FROM event_vectors",
)
# Memory versions, by their row (m040): recall reads the same fusion as the event search.
MEMORIES = _Vectors(
    "memory_vectors",
    "SELECT (SELECT count(*) FROM memory_vectors WHERE model = ?), "
    "(SELECT count(*) FROM memories)",
    "SELECT m.row, m.text FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v "
    "WHERE v.row = m.row AND v.model = ?) ORDER BY m.row DESC LIMIT ?",
    "INSERT INTO memory_vectors (row, model, vec) VALUES (?, ?, ?) "
    "ON CONFLICT(row) DO UPDATE SET model = excluded.model, vec = excluded.vec",
    "SELECT row, vec FROM memory_vectors WHERE model = ?",
    "SELECT count(*), max(rowid) FROM memory_vectors",
)


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
    if not rows:
        return 0
    vectors = embedder.encode([text or "" for _, text in rows]).astype("<f2")
    _WRITES[0] += 1
    with store.transaction():
        conn.executemany(kind.upsert, [(key, embedder.model, vectors[i].tobytes())
                                       for i, (key, _) in enumerate(rows)])
    return len(rows)


def vector_models(conn: Any) -> dict[str, int]:
    """How many event vectors each model has, on an open connection (doctor, tests)."""
    return {model: n for model, n in conn.execute(
        "SELECT model, count(*) FROM event_vectors GROUP BY model ORDER BY model")}


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
    import numpy as np

    embedder = embedder or load_embedder()
    if embedder is None or not query.strip() or limit < 1 or _cjk(query):
        return []
    ensure_vectors(store, embedder, kind=kind)
    keys, matrix = _matrix(store, embedder.model, kind)
    if not keys:
        return []
    q = embedder.encode([query])[0]
    if not q.any():
        return []  # no token of the query is in the vocabulary
    sims = matrix @ q
    k = min(limit, len(keys))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(keys[i], float(sims[i])) for i in top]


def _cjk(query: str) -> bool:
    """Whether the query holds Chinese, Japanese or Korean script. The bundled model's
    vocabulary is English: it splits such text into byte pieces that every text of the
    script shares, so any two score alike (a question about the weather scores 0.37 against
    a note on a failed migration, above the same pair's related texts in English). Those
    queries keep the lexical path, whose trigram index serves them."""
    from agentstate.memory.terms import split_query

    return not query.isascii() and bool(split_query(query)[1])


# The stored vectors of one store, model and kind, kept in the process between searches:
# reading and converting 100,000 vectors costs ~50 ms a query, a cached matrix ~5 ms
# (bench/bench_context.py). The cache is keyed by the database file and checked against
# the table's row count and largest rowid (a new vector, a purge's trigger), SQLite's
# data_version on the same connection (a commit by another connection or process) and
# this module's own count of writes (ensure_vectors replaces another model's vectors in
# place): any of them moved, the matrix is read again. Only the newest store's are kept.
_CACHE: dict[tuple[str, str, str], tuple[tuple[int, ...], list[Any], Any]] = {}
_WRITES = [0]


def _matrix(store: Store, model: str, kind: _Vectors) -> tuple[list[Any], Any]:
    """(keys, float32 matrix of their vectors) of `kind` embedded with `model`."""
    import numpy as np

    conn = store.conn
    count, top = conn.execute(kind.stamp).fetchone()
    stamp = (count, top or 0, conn.execute("PRAGMA data_version").fetchone()[0],
             id(conn), _WRITES[0])
    where = str(conn.execute("PRAGMA database_list").fetchone()[2])
    cached = _CACHE.get((where, model, kind.table))
    if cached is not None and cached[0] == stamp and where:
        return cached[1], cached[2]
    rows = conn.execute(kind.vectors, (model,)).fetchall()
    keys = [r[0] for r in rows]
    matrix = np.frombuffer(b"".join(v for _, v in rows), dtype="<f2").reshape(
        len(rows), DIM).astype(np.float32) if rows else np.zeros((0, DIM), np.float32)
    if where:
        for old in [k for k in _CACHE if k[0] != where]:
            del _CACHE[old]
        _CACHE[(where, model, kind.table)] = (stamp, keys, matrix)
    return keys, matrix


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
