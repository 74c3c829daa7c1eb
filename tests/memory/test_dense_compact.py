"""Compact dense vectors (m060, memory/dense_codec.py): a store made before them is converted
in place and ranks as it did; another model's vectors are still told apart and replaced; the
vector goes with its event however the event goes."""

from __future__ import annotations

import sqlite3
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.memory import dense, dense_codec, dense_model, dense_queries
from agentstate.store.db import open_store
from tests.conftest import store_before
from tests.memory.test_dense import PARTY, _log

NOTES = ["Caroline takes cello lessons on Tuesdays.", "The dog is called Biscuit.",
         "Mel plays cards with her sister."]
OLD_MODEL = "old-model@0"
QUERY = "music lessons with a string instrument"


def made_by_old_code(tmp_path, upto, fill):
    """A repository whose store the migrations up to `upto` made, with PARTY logged as
    events e0, e1, … and then `fill(connection)` run; returns (repo, what `fill` returned)."""
    with store_before(tmp_path, upto) as (repo, conn):
        conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                     "VALUES ('r0000001', 'g', 'active', 't', 't')")
        conn.executemany("INSERT INTO events (id, run, seq, kind, text, source, ts) "
                         "VALUES (?, 'r0000001', ?, 'note', ?, 'user', 't')",
                         [(f"e{n}", n, text) for n, text in enumerate(PARTY)])
        filled = fill(conn)
    return repo, filled


def _old_store(tmp_path, embedder):
    """A store as the migrations before m060 left it, with float16 vectors of every event
    and memory version (one event's of another model), put where a repository's store is."""
    return made_by_old_code(tmp_path, "m057_event_index_after_batch",
                            lambda conn: _float16_vectors(conn, embedder))


def _float16_vectors(conn, embedder):
    conn.executemany(
        "INSERT INTO memories (id, version, kind, scope, text, norm_hash, source, status, "
        "confidence, created, last_confirmed, principal) VALUES (?, 1, 'fact', 'repo', ?, ?, "
        "'user', 'active', 0.9, 't', 't', 'owner')",
        [(f"m{n}", text, f"h{n}") for n, text in enumerate(NOTES)])
    halves = embedder.encode(PARTY).astype("<f2")
    conn.executemany("INSERT INTO event_vectors (event_id, model, vec) VALUES (?, ?, ?)",
                     [(f"e{n}", OLD_MODEL if n == 2 else embedder.model, vec.tobytes())
                      for n, vec in enumerate(halves)])
    conn.executemany("INSERT INTO memory_vectors (row, model, vec) SELECT row, ?, ? "
                     "FROM memories WHERE id = ?",
                     [(embedder.model, vec.tobytes(), f"m{n}")
                      for n, vec in enumerate(embedder.encode(NOTES).astype("<f2"))])
    return halves


def _float16_ranking(embedder, halves, keys):
    q = embedder.encode([QUERY])[0]
    scores = halves.astype(np.float32) @ q
    return [keys[i] for i in np.argsort(-scores, kind="stable")], scores


def test_an_old_store_is_converted_in_place_and_ranks_the_same(tmp_path, embedder):
    repo, halves = _old_store(tmp_path, embedder)
    store = open_store(start=repo)
    try:
        assert "m060_compact_vectors" in store.upgraded
        conn = store.conn
        # Every vector kept, 260 bytes each; the other model's still told apart.
        assert dense.vector_models(conn) == {embedder.model: len(PARTY) - 1, OLD_MODEL: 1}
        assert conn.execute("SELECT count(*), min(length(vec)), max(length(vec)) FROM "
                            "memory_vectors").fetchone() == (len(NOTES), 260, 260)
        assert {length for (length,) in conn.execute(
            "SELECT length(vec) FROM event_vectors")} == {4 + dense_model.DIM}
        converted = dense_codec.decode_rows([v for (v,) in conn.execute(
            "SELECT v.vec FROM event_vectors v JOIN events e ON e.row = v.row "
            "ORDER BY e.id")], dense_model.DIM)
        assert np.abs(converted - halves.astype(np.float32)).max() < 2e-3
        # The search replaces the other model's vector before it ranks: never mixed.
        ranked = dense.dense_ranked(store, QUERY, len(PARTY), embedder)
        assert dense.vector_models(conn) == {embedder.model: len(PARTY)}
        expected, scores = _float16_ranking(embedder, halves, [f"e{n}" for n in
                                                               range(len(PARTY))])
        assert [key for key, _ in ranked] == expected
        assert [s for _, s in ranked] == pytest.approx(sorted(scores, reverse=True), abs=5e-3)
        rows = [r for (r,) in conn.execute("SELECT row FROM memories ORDER BY id")]
        memories = dense.dense_memory_ranked(store, QUERY, len(NOTES), embedder)
        expected, _ = _float16_ranking(embedder, embedder.encode(NOTES).astype("<f2"), rows)
        assert [key for key, _ in memories] == expected
    finally:
        store.close()


def test_the_conversion_keeps_the_count_and_ranking_triggers(tmp_path, embedder):
    repo, _ = _old_store(tmp_path, embedder)
    store = open_store(start=repo)
    try:
        conn = store.conn
        dense.dense_ranked(store, QUERY, 3, embedder)
        assert conn.execute("SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL"
                            ).fetchone() == (1,)
        before = dense_queries.vector_changes(conn, "event_vectors", embedder.model)
        memory_changes = conn.execute("SELECT changes FROM memory_changes").fetchone()
        with store.transaction():
            conn.execute("DELETE FROM events WHERE id = 'e3'")
            conn.execute("DELETE FROM memory_vectors WHERE row = (SELECT min(row) FROM "
                         "memories)")
        # The deleted event's vector went with it (the map's trigger), counted by the
        # model's name; the kept ranking was cleared; the memories' count moved.
        assert conn.execute("SELECT count(*) FROM event_vectors").fetchone() == (
            len(PARTY) - 1,)
        after = dense_queries.vector_changes(conn, "event_vectors", embedder.model)
        assert after == before + 1
        assert conn.execute("SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL"
                            ).fetchone() == (0,)
        assert conn.execute("SELECT changes FROM memory_changes").fetchone()[0] > \
            memory_changes[0]
    finally:
        store.close()


def test_a_deleted_or_scrubbed_event_leaves_no_vector(store, embedder):
    _, events = _log(store, PARTY)
    dense.ensure_vectors(store, embedder)
    with store.transaction() as conn:
        conn.execute("DELETE FROM events WHERE id = ?", (events[0].id,))
        conn.execute("UPDATE events SET text = '[purged]' WHERE id = ?", (events[1].id,))
    left = {key for key, _ in dense.dense_ranked(store, "a name at parties", 10, embedder)}
    assert events[0].id not in left
    # The scrubbed one was embedded again from its new text; no other row is left over.
    assert store.value("SELECT count(*) FROM event_vectors") == len(PARTY) - 1
    assert store.value("SELECT count(*) FROM event_vectors v WHERE NOT EXISTS (SELECT 1 "
                       "FROM events e WHERE e.row = v.row)") == 0


def test_the_python_and_numpy_encodings_agree(embedder):
    matrix = embedder.encode([*PARTY, ""])
    blobs = dense_codec.encode_rows(matrix)
    assert blobs == [dense_codec.encode([float(x) for x in row]) for row in matrix]
    assert all(len(b) == 4 + dense_model.DIM for b in blobs)
    decoded = dense_codec.decode_rows(blobs, dense_model.DIM)
    assert np.abs(decoded - matrix).max() < 2e-3
    assert not decoded[-1].any()  # an empty text: all zeros, a zero scale
    q = [float(x) for x in matrix[0]]
    assert dense_codec.dot(q, blobs[3]) == pytest.approx(float(decoded[3] @ matrix[0]),
                                                         abs=1e-5)
    # The largest component is ±127 times the scale: the full range is used.
    assert max(abs(x) for x in dense_codec.decode(blobs[0])) == pytest.approx(
        float(np.abs(matrix[0]).max()), rel=1e-3)


def test_a_stored_vector_of_another_width_is_never_scored():
    """A query of one width against a vector of another (another model's) is an error:
    multiplying component by component would score the shorter one's prefix silently."""
    blob = dense_codec.encode([0.5] * 128)
    assert dense_codec.dot([0.5] * 128, blob) == pytest.approx(32.0, rel=1e-2)
    for query in ([0.5] * 256, [0.5] * 64):
        with pytest.raises(ValueError, match="never compared"):
            dense_codec.dot(query, blob)


def test_a_store_is_readable_by_a_second_connection_after_the_upgrade(tmp_path, embedder):
    repo, _ = _old_store(tmp_path, embedder)
    open_store(start=repo).close()
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM vector_models").fetchone() == (2,)
    finally:
        conn.close()


# Components as a pooled, normalised vector has them, and some that are not: exact zeros,
# one component far above the rest, tiny values whose scale is far below float32's epsilon.
_COMPONENT = st.one_of(st.floats(-1.0, 1.0, allow_nan=False, width=32), st.just(0.0),
                       st.floats(-2.0 ** -100, 2.0 ** -100, width=32))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_COMPONENT, min_size=16, max_size=16), min_size=1, max_size=6))
def test_a_stored_vector_round_trips_within_half_its_step(rows):
    """Either path makes the same bytes (the Python one for a hook's few texts, numpy for a
    batch); each component comes back within half a step of the scale (the largest
    magnitude / 127), the largest one exactly to float32 rounding; `dot` is the decoded
    vector's product."""
    matrix = np.asarray(rows, dtype=np.float32)
    blobs = dense_codec.encode_rows(matrix)
    assert blobs == [dense_codec.encode([float(x) for x in row]) for row in matrix]
    decoded = dense_codec.decode_rows(blobs, 16)
    for row, blob, back in zip(matrix.astype(np.float64), blobs, decoded, strict=True):
        scale = struct.unpack_from("<f", blob)[0]
        top = float(np.abs(row).max())
        assert scale == pytest.approx(top / dense_codec.LEVELS, rel=1e-6)
        # Plus float32's smallest subnormal: a row whose largest magnitude is that small has
        # a scale that rounds to 0, and 1e-45 is below the one such value itself.
        tiny = float(np.finfo(np.float32).smallest_subnormal)
        assert np.abs(back - row).max() <= scale / 2 * (1 + 1e-5) + tiny
        assert dense_codec.decode(blob) == pytest.approx(back.tolist(), rel=1e-6, abs=1e-45)
        assert dense_codec.dot(row.tolist(), blob) == pytest.approx(
            float(back.astype(np.float64) @ row), rel=1e-5, abs=1e-30)
