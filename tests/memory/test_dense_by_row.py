"""Event vectors keyed by their row (m062): a store made before is converted in place, every
vector kept byte for byte (one per event: the newest written where another model's was
beside it), with no index beside the table, its triggers kept, and what a process or a kept
ranking read of the old table not trusted after."""

from __future__ import annotations

import numpy as np

from agentstate.memory import dense, dense_codec, dense_model, dense_queries
from agentstate.store.db import open_store
from tests.memory.test_dense import PARTY
from tests.memory.test_dense_compact import made_by_old_code

OLD_MODEL = "old-model@0"
QUERY = "music lessons with a string instrument"
TRIGGERS = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name"


def _store_before_m062(tmp_path, embedder):
    """A store as m060 left it: vectors written newest event first (their rowids in the
    opposite order of their rows), the first event's twice (another model's, then this
    one's), a ranking kept; put where a repository's store is."""
    return made_by_old_code(tmp_path, "m060_compact_vectors",
                            lambda conn: _vectors_newest_first(conn, embedder))


def _vectors_newest_first(conn, embedder):
    conn.execute("INSERT INTO vector_models (name) VALUES (?), (?)",
                 (OLD_MODEL, embedder.model))
    blobs = dense_codec.encode_rows(embedder.encode(PARTY))
    rows = [r for (r,) in conn.execute("SELECT row FROM event_search_map ORDER BY event_id")]
    conn.execute("INSERT INTO event_vectors (row, model, vec) VALUES (?, 1, ?)",
                 (rows[0], dense_codec.encode_rows(embedder.encode(["other"]))[0]))
    conn.executemany("INSERT INTO event_vectors (row, model, vec) VALUES (?, 2, ?)",
                     reversed(list(zip(rows, blobs, strict=True))))
    conn.execute("INSERT INTO dense_queries (model, kind, digest, vec, ranked, vector_top, "
                 "text_mark, whole) VALUES (?, 'event_vectors', ?, ?, '[]', 0, 0, 1)",
                 (embedder.model, dense_queries.digest(QUERY),
                  embedder.encode([QUERY])[0].astype("<f4").tobytes()))
    triggers = [name for (name,) in conn.execute(TRIGGERS, ("event_vectors",))]
    return dict(zip(rows, blobs, strict=True)), triggers


def test_an_old_store_keeps_every_vector_keyed_by_its_row(tmp_path, embedder):
    repo, (blobs, triggers) = _store_before_m062(tmp_path, embedder)
    store = open_store(start=repo)
    try:
        assert "m062_vectors_by_row" in store.upgraded
        conn = store.conn
        assert "row INTEGER PRIMARY KEY" in conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'event_vectors'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                            "tbl_name = 'event_vectors'").fetchone() == (0,)
        # One vector per event, the newest written (this model's), its bytes as they were.
        assert dict(conn.execute("SELECT rowid, vec FROM event_vectors")) == blobs
        assert dense.vector_models(conn) == {embedder.model: len(PARTY)}
        assert [n for (n,) in conn.execute(TRIGGERS, ("event_vectors",))] == triggers
        # What was read of the old table is not trusted: the count moved, the ranking went.
        assert dense_queries.vector_changes(conn, "event_vectors", embedder.model) == 1
        assert conn.execute("SELECT ranked FROM dense_queries").fetchone() == (None,)
        # The kept vectors rank as they did, none embedded again.
        matrix = dense_codec.decode_rows(list(blobs.values()), dense_model.DIM)
        scores = matrix @ embedder.encode([QUERY])[0]
        keys = [f"e{n}" for n in range(len(PARTY))]
        ranked = dense.dense_ranked(store, QUERY, len(PARTY), embedder)
        assert [k for k, _ in ranked] == [keys[i] for i in np.argsort(-scores, kind="stable")]
        assert dict(conn.execute("SELECT rowid, vec FROM event_vectors")) == blobs
        # The triggers still work on the new table: a deleted event takes its vector along.
        with store.transaction():
            conn.execute("DELETE FROM events WHERE id = 'e3'")
        assert conn.execute("SELECT count(*) FROM event_vectors").fetchone() == (
            len(PARTY) - 1,)
        assert dense_queries.vector_changes(conn, "event_vectors", embedder.model) == 2
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        store.close()


def test_vectors_written_newest_first_fill_their_pages(store, embedder):
    """A batch of the newest texts is written in key order: a table keyed by the row and
    written top down left its pages half empty."""
    from agentstate.runs.log import append_event, start_run

    run, _ = start_run(store, "pages")
    for n in range(1200):
        append_event(store, run.ref, "note", f"note {n} about the build {n % 7}")
    while dense.ensure_vectors(store, embedder, limit=400):
        pass
    used, unused = store.conn.execute(
        "SELECT sum(pgsize), sum(unused) FROM dbstat WHERE name = 'event_vectors'").fetchone()
    # Written top down: 48% of the pages unused here (1,200 vectors, three batches); in key
    # order each batch leaves one part-filled page where it meets the next (24% here).
    assert unused < used / 3, (used, unused)


def test_equal_texts_rank_the_newer_first_in_a_small_store(store, embedder):
    """A store small enough to be scored in Python (dense.PY_VECTORS) ranks equal scores
    newest first, as it did while vectors were read in the order a search wrote them."""
    from tests.memory.test_dense import _log

    _, events = _log(store, ["The dog is called Biscuit.", *["Mel plays cards."] * 3])
    ranked = dense.dense_ranked(store, "a card game", 4, embedder)
    assert [key for key, _ in ranked[:3]] == [e.id for e in reversed(events[1:])]
