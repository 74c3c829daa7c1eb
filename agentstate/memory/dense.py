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

Not done yet: memories are not embedded (recall stays lexical), and a search reads every
vector of the store (about 5 ms per 10,000 events here); a store of 100,000 events would
want the matrix cached between calls.
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


def ensure_vectors(store: Store, embedder: Embedder, limit: int = EMBED_BATCH) -> int:
    """Embed up to `limit` events that have no vector of this model (newest first);
    vectors of another model are replaced. Returns how many were embedded."""
    conn = store.conn
    have = conn.execute("SELECT count(*) FROM event_vectors WHERE model = ?",
                        (embedder.model,)).fetchone()[0]
    total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    if have >= total:
        return 0
    rows = conn.execute(
        "SELECT e.id, e.text FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_vectors v "
        "WHERE v.event_id = e.id AND v.model = ?) ORDER BY e.rowid DESC LIMIT ?",
        (embedder.model, limit)).fetchall()
    if not rows:
        return 0
    vectors = embedder.encode([text or "" for _, text in rows]).astype("<f2")
    with store.transaction():
        conn.executemany(
            "INSERT INTO event_vectors (event_id, model, vec) VALUES (?, ?, ?) "
            "ON CONFLICT(event_id) DO UPDATE SET model = excluded.model, vec = excluded.vec",
            [(eid, embedder.model, vectors[i].tobytes()) for i, (eid, _) in enumerate(rows)])
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
    import numpy as np

    embedder = embedder or load_embedder()
    if embedder is None or not query.strip():
        return []
    ensure_vectors(store, embedder)
    rows = store.conn.execute("SELECT event_id, vec FROM event_vectors WHERE model = ?",
                              (embedder.model,)).fetchall()
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(v for _, v in rows), dtype="<f2").reshape(len(rows), DIM)
    q = embedder.encode([query])[0]
    if not q.any():
        return []  # no token of the query is in the vocabulary
    sims = matrix.astype(np.float32) @ q
    k = min(limit, len(rows))
    top = np.argpartition(-sims, k - 1)[:k]
    top = top[np.argsort(-sims[top], kind="stable")]
    return [(rows[i][0], float(sims[i])) for i in top]


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
