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

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentstate.memory.dense_static import StaticModel
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
    return weights, tokenizer, _version(root)


def _version(root: Any) -> str:
    """The installed package's version, from its dist-info folder's name beside it (what
    importlib.metadata would find, without its ~50-100 ms import on every command); the
    metadata's own answer where the folder is not there (an editable or unusual install)."""
    found = sorted(root.parent.glob(f"{PACKAGE}-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len(PACKAGE) + 1:-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=2)
def _files(package: str) -> tuple[Any, Any, str] | str:
    """`_package_files`, once per process (keyed by the package name, which tests change)."""
    return _package_files()


def _model_name(number: str) -> str:
    return f"{PACKAGE}-{CONFIG}-{DIM}@{number}"


def current_model() -> str | None:
    """The installed model's name@version, without loading it; None without the package."""
    found = _files(PACKAGE)
    return None if isinstance(found, str) else _model_name(found[2])


def load_static_model() -> StaticModel | None:
    """The numpy-free reader of the installed model (memory/dense_static.py), for the few
    texts a command embeds; None without the package or where it cannot be made."""
    found = _files(PACKAGE)
    if isinstance(found, str):
        return None
    from agentstate.memory.dense_static import load_static

    weights, tokenizer, number = found
    return load_static(weights, tokenizer, number, _model_name(number), "embedding.weight",
                       DIM)


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
    return Embedder(tokenizer, table, _model_name(number))


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
    key: str         # its key column (an integer: see m060)
    counts: str      # (vectors of the model, texts)
    missing: str     # (key, text) of texts without a vector of the model, newest first
    drop: str        # (key): the key's vector, whatever its model (see _store_vectors)
    insert: str      # (key, model's id, vec): the key is the rowid (m040, m062)
    newer: str       # (rowid, id, vec) of the model's vectors above a rowid, in order (the
                     # id a ranking names: an event's id, a memory version's row)
    text_top: str    # the largest rowid of the texts
    new_texts: str   # (key, text) of texts above a rowid without a vector of the model
    recent: str      # (key, text) among the newest N texts, without a vector of the model


# The model's row in `vector_models` (m060): each vector names its model by that integer.
_MODEL = "(SELECT id FROM vector_models WHERE name = ?)"

# Events by their row (`events.row`, m063; the map's row before it, which it kept), which
# VACUUM and gc's rewrite keep: an integer key, where the event's TEXT id cost ~75 bytes a
# vector with its index; since m062 it is the vector's rowid, with no index beside the table.
# A ranking is of the events' ids (`newer` reads them), as the word index's results are.
EVENTS = _Vectors(
    "event_vectors",
    "row",
    f"SELECT (SELECT count(*) FROM event_vectors WHERE model = {_MODEL}), "
    "(SELECT count(*) FROM events)",
    "SELECT e.row, e.text FROM events e WHERE NOT EXISTS (SELECT 1 FROM event_vectors v "
    f"WHERE v.row = e.row AND v.model = {_MODEL}) ORDER BY e.row DESC LIMIT ?",
    # A vector is replaced by a delete and an insert: the delete moves the count of changes
    # (m052), which is how a process's cached matrix learns of it (its rowid is the event's
    # row since m062, not above every other), and clears the kept rankings (m050's trigger,
    # which REPLACE's own delete would not fire).
    "DELETE FROM event_vectors WHERE row = ?",
    "INSERT INTO event_vectors (row, model, vec) VALUES (?, ?, ?)",
    "SELECT v.rowid, e.id, v.vec FROM event_vectors v JOIN events e "
    f"ON e.row = v.row WHERE v.rowid > ? AND v.model = {_MODEL} ORDER BY v.rowid",
    "SELECT max(row) FROM events",
    "SELECT e.row, e.text FROM events e WHERE e.row > ? AND NOT EXISTS (SELECT 1 FROM "
    f"event_vectors v WHERE v.row = e.row AND v.model = {_MODEL}) ORDER BY e.row LIMIT ?",
    "SELECT e.row, e.text FROM events e WHERE e.row > (SELECT max(row) FROM events) - ? "
    f"AND NOT EXISTS (SELECT 1 FROM event_vectors v WHERE v.row = e.row AND v.model = "
    f"{_MODEL})",
)

# Memory versions, by their row (m040): recall reads the same fusion as the event search.
# Their rowid is the version's row, so a vector replaced in place keeps it: the delete that
# replaces it moves the count of changes (m052), which is how a process's matrix learns of
# it; a version's text never changes but by a purge, whose trigger deletes the vector.
MEMORIES = _Vectors(
    "memory_vectors",
    "row",
    f"SELECT (SELECT count(*) FROM memory_vectors WHERE model = {_MODEL}), "
    "(SELECT count(*) FROM memories)",
    "SELECT m.row, m.text FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v "
    f"WHERE v.row = m.row AND v.model = {_MODEL}) ORDER BY m.row DESC LIMIT ?",
    "DELETE FROM memory_vectors WHERE row = ?",
    "INSERT INTO memory_vectors (row, model, vec) VALUES (?, ?, ?)",
    f"SELECT rowid, row, vec FROM memory_vectors WHERE rowid > ? AND model = {_MODEL} "
    "ORDER BY rowid",
    "SELECT max(row) FROM memories",
    "SELECT m.row, m.text FROM memories m WHERE m.row > ? AND NOT EXISTS (SELECT 1 FROM "
    f"memory_vectors v WHERE v.row = m.row AND v.model = {_MODEL}) ORDER BY m.row LIMIT ?",
    "SELECT m.row, m.text FROM memories m WHERE m.row > (SELECT max(row) FROM memories) - ? "
    f"AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.row = m.row AND v.model = "
    f"{_MODEL})",
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
