"""The dense index kept in the process between searches (memory/dense.py, `_Index`): what
is new is read by rowid, nothing is counted once the index is complete, and nothing
deleted is ever ranked from memory — a new or forgotten event changes the result, a
purged memory's vector never comes back."""

from __future__ import annotations

import sqlite3

import pytest

from agentstate.memory import dense, dense_codec, dense_matrix, dense_model
from agentstate.runs.log import append_event
from tests.memory.test_dense import PARTY, _log

# An event's vector row, by the event's id (vectors are keyed by the event's row: m060, m063).
ROW = "(SELECT row FROM events WHERE id = ?)"


@pytest.fixture(autouse=True)
def _matrix(monkeypatch):
    """These stores are small enough to be scored in Python (dense.PY_VECTORS): the tests
    here are about the matrix, so every store takes it."""
    monkeypatch.setattr(dense, "PY_VECTORS", 0)


def _statements(store, action):
    """The SQL statements `action` runs on the store's connection."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        store.conn.set_trace_callback(None)
    return seen


def test_a_search_after_the_first_counts_nothing_and_reads_no_vector_twice(store, embedder):
    _, events = _log(store, PARTY)
    dense.dense_ranked(store, "cello lessons", 3, embedder)  # builds the index
    index = dense._CACHE[next(k for k in dense._CACHE if k[2] == "event_vectors")]
    assert index.size == len(PARTY) and index.mark is not None
    statements = _statements(store, lambda: dense.dense_ranked(store, "a dog", 3, embedder))
    assert not [s for s in statements if "count(" in s.lower()], statements
    # Vectors are read only above the highest rowid already held: with no vector deleted
    # since (the count of changes, m052, is read instead), the answer is scored from the
    # matrix, none of its rows read back.
    reads = [s for s in statements if "vec FROM event_vectors" in s]
    assert len(reads) == 1 and "rowid >" in reads[0], reads
    assert any("vector_changes" in s for s in statements)


def test_a_new_event_is_embedded_and_changes_the_answer(store, embedder):
    run, events = _log(store, PARTY)
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == events[3].id
    newer = append_event(store, run.ref, "note", "My cello lessons moved to Mondays.")
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == newer.id


def test_a_vector_written_by_another_process_is_seen(store, embedder):
    run, events = _log(store, PARTY)
    dense.dense_ranked(store, "cello lessons", 1, embedder)
    newer = append_event(store, run.ref, "note", "My cello lessons moved to Mondays.")
    # Another process embeds the new event first (its own connection, its own write).
    other = sqlite3.connect(store.root / "state.db")
    vec = dense_codec.encode_rows(embedder.encode([newer.text]))[0]
    with other:
        other.execute("INSERT INTO event_vectors (row, model, vec) SELECT e.row, n.id, ? "
                      "FROM events e, vector_models n WHERE e.id = ? AND "
                      "n.name = ?", (vec, newer.id, embedder.model))
    other.close()
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == newer.id


def test_a_deleted_event_is_never_ranked_from_the_cached_matrix(store, embedder):
    _, events = _log(store, PARTY)
    cello = events[3].id
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == cello
    other = sqlite3.connect(store.root / "state.db")  # e.g. gc in another process
    with other:
        other.execute("DELETE FROM events WHERE id = ?", (cello,))
    other.close()
    near = [key for key, _ in dense.dense_ranked(store, "cello lessons", 10, embedder)]
    assert cello not in near and len(near) == len(PARTY) - 1
    # ... and it is gone from the index for good, not only from one answer.
    index = dense._CACHE[next(k for k in dense._CACHE if k[2] == "event_vectors")]
    assert cello not in index.column


def test_a_purged_event_text_is_ranked_by_what_is_stored_now(store, embedder):
    _, events = _log(store, PARTY)
    cello = events[3].id
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == cello
    with store.transaction() as conn:  # purge scrubs the text; a trigger drops the vector
        conn.execute("UPDATE events SET text = '[purged]' WHERE id = ?", (cello,))
    # The deleted vector moved the count of changes: the next search reads the index
    # afresh, counts, and embeds the scrubbed text (the event's text now): the event
    # scores as that text, never as the erased one.
    near = dense.dense_ranked(store, "cello lessons", 10, embedder)
    assert near[0][0] != cello
    scrubbed = embedder.encode(["[purged]"])[0] @ embedder.encode(["cello lessons"])[0]
    assert dict(near)[cello] == pytest.approx(float(scrubbed), abs=2e-3)


def test_a_purged_memorys_vector_never_comes_back(store, embedder):
    from agentstate.memory.forget import forget
    from agentstate.memory.recall import recall
    from agentstate.memory.write import remember

    notes = ["Caroline is learning to play the cello; her lessons are on Tuesdays.",
             "Run the tests with pytest -q, never with unittest.",
             "Deploys go out through the release branch only."]
    written = [remember(store, t, kind="fact", source="user", principal="owner")
               for t in notes]
    question = "which musical instrument is she studying"
    rows = dense.dense_memory_ranked(store, question, 3, embedder)  # the index is built
    purged_row = rows[0][0]
    forget(store, ref=written[0].ref, purge=True, reason="asked to", principal="owner")
    # The purge's trigger deleted the vector (the count of changes moved): the index is read
    # afresh and the version is embedded as its text is now, empty (no token: a zero
    # vector). Its erased text's vector never comes back, on this search nor the next.
    for _ in range(2):
        near = dict(dense.dense_memory_ranked(store, question, 3, embedder))
        assert near.get(purged_row, 0.0) == 0.0
    assert recall(store, question, principal="owner").hits == []


def test_a_store_replaced_at_the_same_path_is_read_afresh(store, embedder, tmp_path):
    _, events = _log(store, PARTY)
    dense.dense_ranked(store, "cello lessons", 1, embedder)
    key = next(k for k in dense._CACHE if k[2] == "event_vectors")
    before = dense._CACHE[key]
    # A restore writes another file where the database was: another inode, read anew.
    path = store.root / "state.db"
    copy = tmp_path / "copy.db"
    src = sqlite3.connect(path)
    src.execute("VACUUM INTO ?", (str(copy),))
    src.close()
    store.close()
    copy.replace(path)
    from agentstate.store.db import open_store

    reopened = open_store(start=store.root.parent)
    try:
        # Another question (the first one's ranking is kept in the file, m050: it needs no
        # matrix at all).
        assert dense.dense_ranked(reopened, "her cello lessons", 1, embedder)[0][0] \
            == events[3].id
        assert dense._CACHE[key] is not before
    finally:
        reopened.close()


def test_a_vector_changed_in_place_by_another_process_is_scored_as_stored(store, embedder):
    _, events = _log(store, PARTY)
    cello, dog = events[3].id, events[1].id
    assert dense.dense_ranked(store, "cello lessons", 1, embedder)[0][0] == cello
    # Another process writes the cello line's vector over the dog line's, in place: the
    # same rowid, so only the count of changes (m052's UPDATE trigger) tells the matrix.
    other = sqlite3.connect(store.root / "state.db")
    with other:
        other.execute(f"UPDATE event_vectors SET vec = (SELECT vec FROM event_vectors "
                      f"WHERE row = {ROW}) WHERE row = {ROW}", (cello, dog))
    other.close()
    near = dict(dense.dense_ranked(store, "cello lessons", 2, embedder))
    assert set(near) == {cello, dog} and near[dog] == pytest.approx(near[cello])


def test_a_ranking_made_before_a_vector_was_deleted_is_not_kept(store, embedder,
                                                                   monkeypatch):
    from agentstate.memory import dense_queries

    _, events = _log(store, PARTY)
    cello = events[3].id
    real = dense_matrix._Index.nearest

    def deleted_meanwhile(self, q, limit):
        found = real(self, q, limit)  # scored with the cello line still in the matrix
        other = sqlite3.connect(store.root / "state.db")  # e.g. gc in another process
        with other:
            other.execute("DELETE FROM events WHERE id = ?", (cello,))
        other.close()
        return found

    monkeypatch.setattr(dense_matrix._Index, "nearest", deleted_meanwhile)
    assert dense.dense_ranked(store, "cello lessons", 3, embedder)[0][0] == cello
    monkeypatch.undo()
    # The query's vector is kept, not the ranking that names the deleted event ...
    assert store.value("SELECT count(*) FROM dense_queries") == 1
    assert store.value("SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL") == 0
    # ... and the next search reads the matrix afresh, without it.
    assert cello not in dict(dense.dense_ranked(store, "cello lessons", 10, embedder))
    assert dense_queries.read(store, embedder.model, "event_vectors", "cello lessons"
                              ).ranked is not None


def test_equal_scores_are_ordered_by_key_as_the_stored_vectors_order_them(store, embedder):
    import numpy as np

    twice = ["Caroline's cello lessons are on Tuesdays."] * 4 + PARTY
    _, events = _log(store, twice)
    near = dense.dense_ranked(store, "cello lessons", 3, embedder)
    # The same text has the same vector: the best scores are equal, and the list is what
    # scoring every stored vector and sorting by (score, key) gives, not an arbitrary pick.
    rows = store.conn.execute("SELECT e.id, v.vec FROM event_vectors v "
                              "JOIN events e ON e.row = v.row").fetchall()
    q = np.asarray(dense._Encoder(embedder.model, embedder).query("cello lessons"),
                   np.float32)
    scored = sorted(((-float(dense_codec.decode_rows([vec], dense_model.DIM)[0] @ q), key)
                     for key, vec in rows))
    assert [key for key, _ in near] == [key for _, key in scored[:3]]
    assert len({score for _, score in near}) == 1


def test_memory_versions_embedded_in_later_batches_all_enter_the_matrix(store, embedder,
                                                                          monkeypatch):
    """Memory vectors take their version's row as rowid: a later batch embeds older versions,
    below what the matrix has read. Every version still ranks once it has its vector."""
    from agentstate.memory.write import remember

    notes = ["Caroline takes cello lessons on Tuesdays.", "The dog is called Biscuit.",
             "Mel plays cards with her sister.", "The build uses make.",
             "Deploys happen on Fridays."]
    for text in notes:
        remember(store, text, kind="fact", source="user", principal="owner")
    monkeypatch.setattr(dense, "EMBED_BATCH", 2)  # three searches embed the five
    sizes = [len(dense.dense_memory_ranked(store, f"violin practice {n}", 10, embedder))
             for n in range(3)]
    assert sizes == [2, 4, 5]
    assert store.value("SELECT count(*) FROM memory_vectors") == len(notes)


def test_new_vectors_fill_the_next_columns_of_the_kept_matrix(store, embedder, monkeypatch):
    """A matrix already read takes new vectors in the columns after its own (a new question,
    so no kept ranking answers): the scores are those of the matrix read afresh, in blocks
    of rows (two here, so the five span three)."""
    monkeypatch.setattr(dense_matrix, "SCATTER_ROWS", 2)
    run, events = _log(store, PARTY)
    dense.dense_ranked(store, "a dog", 3, embedder)  # the matrix, of the five
    newer = [append_event(store, run.ref, "note", text) for text in
             ("My cello lessons moved to Mondays.", "Biscuit chewed my shoes again.")]
    kept = dense.dense_ranked(store, "cello lessons on mondays", 7, embedder)
    index = dense._CACHE[next(k for k in dense._CACHE if k[2] == "event_vectors")]
    assert index.size == len(PARTY) + 2 and kept[0][0] == newer[0].id
    dense._CACHE.clear()  # the same question against the matrix read whole
    with store.transaction() as conn:
        conn.execute("DELETE FROM dense_queries")
    afresh = dense.dense_ranked(store, "cello lessons on mondays", 7, embedder)
    assert [k for k, _ in kept] == [k for k, _ in afresh]
    assert dict(kept) == pytest.approx(dict(afresh))


def test_events_embedded_in_later_batches_all_enter_the_matrix(store, embedder, monkeypatch):
    """An event's vector takes its row as rowid (m062): a later batch embeds older events,
    below what the matrix has read. Every event still ranks once it has its vector."""
    _log(store, PARTY)
    monkeypatch.setattr(dense, "EMBED_BATCH", 2)  # three searches embed the five
    sizes = [len(dense.dense_ranked(store, f"violin practice {n}", 10, embedder))
             for n in range(3)]
    assert sizes == [2, 4, 5]
    assert store.value("SELECT count(*) FROM event_vectors") == len(PARTY)


def test_older_events_embedded_by_another_process_enter_the_matrix(store, embedder,
                                                                   monkeypatch):
    """While some texts lack a vector, another process may embed them, below every rowid
    this process's matrix has read (a vector's rowid is its event's row): the next search
    here ranks them all, the scores those of the matrix read afresh."""
    _, events = _log(store, PARTY)
    monkeypatch.setattr(dense, "EMBED_BATCH", 2)
    assert len(dense.dense_ranked(store, "cello lessons", 10, embedder)) == 2
    other = sqlite3.connect(store.root / "state.db")
    older = [e for e in events if not store.value(f"SELECT count(*) FROM event_vectors "
                                                  f"WHERE row = {ROW}", (e.id,))]
    with other:
        for event, vec in zip(older, dense_codec.encode_rows(
                embedder.encode([e.text for e in older])), strict=True):
            other.execute(f"INSERT INTO event_vectors (row, model, vec) SELECT {ROW}, n.id, ? "
                          "FROM vector_models n WHERE n.name = ?",
                          (event.id, vec, embedder.model))
    other.close()
    kept = dense.dense_ranked(store, "a dog called biscuit", 10, embedder)
    assert {key for key, _ in kept} == {e.id for e in events}
    dense._CACHE.clear()
    with store.transaction() as conn:
        conn.execute("DELETE FROM dense_queries")
    afresh = dense.dense_ranked(store, "a dog called biscuit", 10, embedder)
    assert [k for k, _ in kept] == [k for k, _ in afresh]
    assert dict(kept) == pytest.approx(dict(afresh))
