"""The dense signal with the real installed model (the `dense` extra is in `dev`): vectors
per event with their model, re-embedding on a model change, fusion, the lexical fallback
without the package, and nothing fetched from the network."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.memory import dense, dense_codec, dense_model
from agentstate.memory.event_hit import EventHit
from agentstate.memory.search import _fused, ranked_events, search_events
from agentstate.runs.log import append_event, start_run


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    # The model must load from the installed package alone: any hub client that looked
    # for it online would fail here rather than download.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


PARTY = [
    "Mel: I can never remember a name at parties, it is embarrassing.",
    "Caroline: We adopted a little dog last month, she is called Biscuit.",
    "Mel: Work is crazy busy lately.",
    "Caroline: I am learning to play the cello, it is hard.",
    "Mel: My sister brought snacks and we played cards until midnight.",
]


def _log(store, texts):
    run, _ = start_run(store, "a conversation")
    return run, [append_event(store, run.ref, "note", t) for t in texts]


def test_a_paraphrase_bm25_misses_is_found_by_the_dense_signal(store, embedder):
    _, events = _log(store, PARTY)
    question = "What is the name of the new puppy?"
    lexical = [h.ref for h in search_events(store, question, limit=5)]
    # BM25 finds only the line that says "name"; the evidence shares no word with the
    # question ("dog" is not "puppy", "called" is not "name").
    assert lexical == [events[0].ref]
    near = dense.dense_ranked(store, question, 5, embedder)
    assert near[0][0] == events[1].id
    fused = ranked_events(store, question, limit=5, dense_weight=0.5)
    assert [h.ref for h in fused[:2]] == [events[0].ref, events[1].ref]


def test_vectors_are_the_packages_own_mean_pooled_embeddings(embedder):
    import numpy as np
    from wordllama import WordLlama

    own = WordLlama.load(cache_dir=dense_model._package_files()[0].parent.parent,  # type: ignore
                         disable_download=True)
    texts = ["who were the impostors", "a leaking kitchen tap", PARTY[1]]
    theirs = own.embed(texts, norm=True)
    assert np.allclose(embedder.encode(texts), theirs, atol=1e-3)


def test_a_question_sharing_no_word_with_any_event_gets_dense_hits_not_an_error(store):
    _, events = _log(store, PARTY)
    hits = ranked_events(store, "deception tabletop", limit=3, dense_weight=0.5)
    assert hits and all(h.ref.startswith("evt:") for h in hits)
    assert ranked_events(store, "deception tabletop", limit=3) == []  # lexical alone: none


def test_vectors_of_another_model_are_re_embedded_never_mixed(store, embedder):
    _, events = _log(store, PARTY)
    assert dense.ensure_vectors(store, embedder) == len(PARTY)
    assert dense.ensure_vectors(store, embedder) == 0  # nothing new: nothing to do
    # An older model's vectors for every event, one of them pointing straight at the query.
    other = dense_codec.encode_rows(embedder.encode(["cards until midnight"]))[0]
    with store.transaction() as conn:
        conn.execute("UPDATE event_vectors SET model = ?, vec = ?",
                     (dense.model_id(conn, "old-model@0"), other))
    assert dense.vector_models(store.conn) == {"old-model@0": len(PARTY)}
    near = dense.dense_ranked(store, "playing the violin", 5, embedder)
    assert dense.vector_models(store.conn) == {embedder.model: len(PARTY)}
    assert near[0][0] == events[3].id


def test_a_purged_text_takes_its_vector_with_it(store, embedder):
    _, events = _log(store, PARTY)
    dense.ensure_vectors(store, embedder)
    with store.transaction() as conn:
        conn.execute("UPDATE events SET text = '[purged]' WHERE id = ?", (events[1].id,))
    assert store.value("SELECT count(*) FROM event_vectors WHERE row = (SELECT row FROM "
                       "events WHERE id = ?)", (events[1].id,)) == 0
    assert store.value("SELECT count(*) FROM event_vectors") == len(PARTY) - 1
    assert dense.ensure_vectors(store, embedder) == 1  # the scrubbed text, embedded again


def test_without_the_package_search_stays_lexical_and_doctor_says_so(store, monkeypatch):
    from agentstate.maintenance.doctor import check_dense_signal

    _, events = _log(store, PARTY)
    monkeypatch.setattr(dense_model, "PACKAGE", "no_such_embedding_package")
    dense_model.load_embedder.cache_clear()
    try:
        assert dense_model.load_embedder() is None
        active = dense_model.signal()
        assert not active.dense and "lexical search only" in active.detail
        hits = ranked_events(store, "cards and snacks", limit=3, dense_weight=0.5)
        assert [h.ref for h in hits] == [events[4].ref]
        check = check_dense_signal(store.root)
        assert check.status == "ok" and "agentstate-cli[dense]" in check.detail
    finally:
        dense_model.load_embedder.cache_clear()


def test_doctor_names_the_active_model_and_the_vectors(store, embedder):
    from agentstate.maintenance.doctor import check_dense_signal

    _log(store, PARTY)
    dense.ensure_vectors(store, embedder)
    check = check_dense_signal(store.root)
    assert embedder.model in check.detail and f"{len(PARTY)} event vector" in check.detail


ids = st.lists(st.text("abcdef", min_size=1, max_size=3), unique=True, max_size=12)


@settings(max_examples=200, deadline=None)
@given(first=st.text("xyz", min_size=1, max_size=2), lexical=ids, near=ids,
       weight=st.floats(0.0, 1.0))
def test_an_item_first_in_both_lists_ranks_first(first, lexical, near, weight):
    fused = dense.fuse([first, *lexical], [first, *near], weight)
    assert fused[0] == first
    assert sorted(fused) == sorted({first, *lexical, *near})


@settings(max_examples=200, deadline=None)
@given(first=st.text("xyz", min_size=1, max_size=2), rest=ids, weight=st.floats(0.0, 1.0),
       data=st.data())
def test_the_score_fusion_keeps_an_item_first_in_both_first(first, rest, weight, data):
    # Lexical scores fall from 1.0; every dense id is among the lexical hits, so no event
    # row is read (store None).
    lexical = [EventHit(f"evt:{i}", "run:r", "note", i, "user", "", round(1.0 - n / 20, 4))
               for n, i in enumerate([first, *rest])]
    order = data.draw(st.permutations(rest))
    sims = sorted((data.draw(st.floats(-1, 0.99)) for _ in order), reverse=True)
    near = [(first, 1.0), *zip(order, sims, strict=True)]
    fused = _fused(None, lexical, near, weight, limit=50)
    assert fused[0].ref == f"evt:{first}"
    assert len(fused) == len(lexical)


# ---------------------------------------------------------------- memories in the fusion

NOTES = [
    "Caroline is learning to play the cello; her lessons are on Tuesdays.",
    "Run the tests with pytest -q, never with unittest.",
    "Deploys go out through the release branch only.",
]


def _remember(store, texts):
    from agentstate.memory.write import remember

    return [remember(store, t, kind="fact", source="user", principal="owner") for t in texts]


def test_recall_finds_a_memory_by_meaning_where_no_word_matches(store, embedder):
    from agentstate.memory.recall import recall

    _remember(store, NOTES)
    question = "which musical instrument is she studying"
    lexical = recall(store, question, principal="owner", dense=False)
    assert lexical.hits == []  # no word in common: BM25 finds nothing
    fused = recall(store, question, principal="owner")
    # The paraphrase alone, not every memory the store holds: the unrelated ones are below
    # the similarity floor, however few memories there are.
    assert [h.text for h in fused.hits] == [NOTES[0]]
    assert store.value("SELECT count(*) FROM memory_vectors WHERE model = (SELECT id FROM "
                       "vector_models WHERE name = ?)", (embedder.model,)) == len(NOTES)


def test_recall_keeps_the_words_the_query_shares_above_a_paraphrase(store, embedder):
    from agentstate.memory.recall import recall

    _remember(store, [*NOTES, "The release branch is cut every Friday at noon."])
    hits = recall(store, "when is the release branch cut", principal="owner").hits
    assert hits[0].text == "The release branch is cut every Friday at noon."
    assert NOTES[1] not in [h.text for h in hits]


def test_a_purged_memory_leaves_no_vector(store, embedder):
    from agentstate.memory.forget import forget
    from agentstate.memory.recall import recall

    written = _remember(store, NOTES)
    recall(store, "cello lessons", principal="owner")  # embeds every version
    assert store.value("SELECT count(*) FROM memory_vectors") == len(NOTES)
    forget(store, ref=written[0].ref, purge=True, reason="asked to", principal="owner")
    assert store.value("SELECT count(*) FROM memory_vectors") == len(NOTES) - 1
    # ... and the purged version is not found by meaning either.
    assert recall(store, "which musical instrument is she studying", principal="owner").hits == []


def test_the_cached_matrix_sees_new_vectors_and_other_connections_writes(store, embedder):
    import sqlite3

    _, events = _log(store, PARTY)
    cello = events[3].id  # "I am learning to play the cello, it is hard."
    assert dense.dense_ranked(store, "cello lessons", 5, embedder)[0][0] == cello
    more = append_event(store, events[0].run, "note", "My cello lessons moved to Mondays.")
    # A new event: embedded by this search, and the matrix read again.
    assert dense.dense_ranked(store, "cello lessons", 2, embedder)[0][0] == more.id
    # Another process zeroes a vector in place (same count, same rowids): seen all the same.
    other = sqlite3.connect(store.root / "state.db")
    with other:
        other.execute("UPDATE event_vectors SET vec = zeroblob(?) WHERE row IN (SELECT row "
                      "FROM events WHERE id IN (?, ?))",
                      (4 + dense_model.DIM, cello, more.id))
    other.close()
    near = dict(dense.dense_ranked(store, "cello lessons", 10, embedder))
    assert near[cello] == 0.0 and near[more.id] == 0.0
