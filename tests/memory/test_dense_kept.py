"""Query vectors and rankings kept in the store (memory/dense_queries.py, m050): a question
asked again needs neither the model nor the matrix, what was added since is scored into the
kept list exactly, a deleted or purged vector clears every kept ranking of its table, a
ranking of another model is never used, and the kept rows have a ceiling."""

from __future__ import annotations

import random

import pytest

from agentstate.memory import dense, dense_model, dense_queries
from agentstate.runs.log import append_event
from tests.memory.test_dense import PARTY, _log

WORDS = ("deploy build cache parser token budget memory skill test failure branch merge "
         "commit review docs schema index query vector model window pack run event").split()


def _filler(n: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25))) for _ in range(n)]


def _forbid_scoring(monkeypatch):
    """Fail the test if a search scores the store afresh (matrix or Python)."""
    def refuse(*args, **kwargs):
        raise AssertionError("scored afresh")

    monkeypatch.setattr(dense, "_index", refuse)
    monkeypatch.setattr(dense, "_scored_in_python", refuse)


def _afresh(store, query, limit):
    """The ranking computed from scratch: nothing kept, nothing cached in the process."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM dense_queries")
    dense._CACHE.clear()
    return dense.dense_ranked(store, query, limit)


@pytest.fixture(params=["python", "matrix"])
def path(request, monkeypatch):
    """Both ways a ranking is first made: scored in Python (a small store) or with the
    process's matrix (a large one, forced here)."""
    if request.param == "matrix":
        monkeypatch.setattr(dense, "PY_VECTORS", 0)
    dense._CACHE.clear()
    return request.param


def test_a_question_asked_again_is_answered_from_the_kept_ranking(store, path, monkeypatch):
    _log(store, PARTY + _filler(40))
    first = dense.dense_ranked(store, "cello lessons", 5)
    assert first and dense_queries.kept_count(store.conn) == 1
    dense._CACHE.clear()
    _forbid_scoring(monkeypatch)
    assert dense.dense_ranked(store, "cello lessons", 5) == first
    assert dense.dense_ranked(store, "cello lessons", 3) == first[:3]


def test_events_added_since_are_scored_into_the_kept_ranking_exactly(store, path, monkeypatch):
    run, _ = _log(store, PARTY + _filler(40))
    dense.dense_ranked(store, "cello lessons", 8)
    newer = [append_event(store, run.ref, "note", text) for text in
             ["My cello lessons moved to Mondays.", *_filler(5, seed=9)]]
    with monkeypatch.context() as patched:
        _forbid_scoring(patched)
        kept = dense.dense_ranked(store, "cello lessons", 8)
    assert kept[0][0] == newer[0].id
    fresh = _afresh(store, "cello lessons", 8)
    assert [k for k, _ in kept] == [k for k, _ in fresh]
    assert all(abs(a - b) < 1e-3 for (_, a), (_, b) in zip(kept, fresh, strict=True))


def test_a_purged_or_deleted_event_clears_every_kept_ranking(store, path):
    _, events = _log(store, PARTY + _filler(20))
    cello = events[3].id
    assert dense.dense_ranked(store, "cello lessons", 3)[0][0] == cello
    dense.dense_ranked(store, "a dog called Biscuit", 3)
    with store.transaction() as conn:
        conn.execute("UPDATE events SET text = '[purged]' WHERE id = ?", (cello,))
    # No kept list still names the erased event (nor scores it).
    assert store.value("SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL") == 0
    assert store.value("SELECT count(*) FROM dense_queries") == 2  # the query vectors stay
    near = dense.dense_ranked(store, "cello lessons", 3)
    assert cello not in [k for k, _ in near[:1]]
    assert [k for k, _ in near] == [k for k, _ in _afresh(store, "cello lessons", 3)]
    with store.transaction() as conn:
        conn.execute("DELETE FROM events WHERE id = ?", (events[1].id,))
    assert store.value("SELECT count(*) FROM dense_queries WHERE ranked IS NOT NULL") == 0
    assert events[1].id not in [k for k, _ in dense.dense_ranked(store, "a dog", 30)]


def test_a_ranking_of_another_model_is_never_used(store, path, monkeypatch):
    _log(store, PARTY)
    dense.dense_ranked(store, "cello lessons", 3)
    old = dense_model.current_model()
    found = dense_model._package_files()
    assert not isinstance(found, str)
    # Another version of the package is installed: another model name.
    monkeypatch.setattr(dense_model, "_files", lambda package: (found[0], found[1], "9.9.9"))
    new = dense_model.current_model()
    assert new != old
    near = dense.dense_ranked(store, "cello lessons", 3)
    assert near
    # Every vector is now the new model's (re-embedded, never mixed), and the old model's
    # kept ranking was cleared by the vectors it lost.
    assert dense.vector_models(store.conn) == {new: len(PARTY)}
    rows = dict(store.conn.execute("SELECT model, ranked IS NOT NULL FROM dense_queries"))
    assert rows == {old: 0, new: 1}


def test_the_kept_queries_have_a_ceiling(store, monkeypatch):
    _log(store, PARTY)
    monkeypatch.setattr(dense_queries, "KEEP", 3)
    for question in ("cello", "a dog", "parties", "snacks and cards", "work"):
        dense.dense_ranked(store, question, 2)
    assert dense_queries.kept_count(store.conn) == 3
    kept = {row[0] for row in store.conn.execute("SELECT digest FROM dense_queries")}
    assert kept == {dense_queries.digest(q) for q in ("parties", "snacks and cards", "work")}


def test_memory_rankings_are_kept_and_cleared_like_event_rankings(store, path):
    from agentstate.memory.write import remember

    for text in ("The staging database is rebuilt every night.",
                 "Release notes go in docs/changes.md.", "Use ruff for linting."):
        remember(store, text, kind="fact", principal="owner", evidence=["user"])
    first = dense.dense_memory_ranked(store, "where do release notes live", 2)
    assert dense.dense_memory_ranked(store, "where do release notes live", 2) == first
    assert store.value("SELECT count(*) FROM dense_queries WHERE kind = 'memory_vectors' "
                       "AND ranked IS NOT NULL") == 1
    with store.transaction() as conn:
        conn.execute("DELETE FROM memory_vectors WHERE row = ?", (first[0][0],))
    assert store.value("SELECT count(*) FROM dense_queries WHERE kind = 'memory_vectors' "
                       "AND ranked IS NOT NULL") == 0
