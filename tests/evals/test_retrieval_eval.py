"""Issue 23's measurement: answer-visible recall on hand-made data, the dense and hybrid
arms, the ablation arms, and the second corpus's generator."""

from __future__ import annotations

import json

import pytest

from agentstate.errors import UsageError
from agentstate.evals import chatgen
from agentstate.evals.arms import ARMS, Arms, check_arms
from agentstate.evals.locomo import imported, load_conversations
from agentstate.evals.measure import answer_terms, answer_visible_recall, run_locomo
from agentstate.memory import dense, dense_model
from tests.conftest import FIXTURES

TINY = FIXTURES / "locomo" / "tiny.json"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


# ---------------------------------------------------------------- answer-visible recall

TURNS = {
    "D1:1": "Mel: They taste great too! We had croissants, muffins, and tarts.",
    "D1:2": "Mel: The bakery is on Main Street.",
    "D1:3": "Cal: See you on Friday.",
}
BY_TURN = {"D1:1": {"evt:a"}, "D1:2": {"evt:b"}, "D1:3": {"evt:c"}}


def test_a_one_line_item_counts_only_where_it_shows_the_answer_words():
    answer = "croissants, muffins, and tarts"
    assert answer_terms(answer) == ("croissant", "muffin", "tart")
    cut = {"evt:a": "- [evt:a] Mel: They taste great too! …"}
    shown = {"evt:a": "- [evt:a] Mel: … We had croissants, muffins, and tarts."}
    assert answer_visible_recall(["D1:1"], BY_TURN, {"evt:a"}, cut, TURNS, answer) == 0.0
    assert answer_visible_recall(["D1:1"], BY_TURN, {"evt:a"}, shown, TURNS, answer) == 1.0
    # Whole in the pack (no line recorded for it): visible.
    assert answer_visible_recall(["D1:1"], BY_TURN, {"evt:a"}, {}, TURNS, answer) == 1.0
    # Not in the pack at all: neither recall nor answer-visible.
    assert answer_visible_recall(["D1:1"], BY_TURN, set(), {}, TURNS, answer) == 0.0


def test_only_the_answer_words_the_turn_holds_are_required():
    # Two evidence turns; the answer's words are split between them: each line is asked
    # only for the words its own turn holds. The second line (whole turn in one line) and a
    # cut first line that keeps "croissants" but not "muffins": half.
    lines = {"evt:a": "- [evt:a] Mel: … We had croissants …",
             "evt:b": "- [evt:b] Mel: The bakery is on Main Street."}
    answer = "croissants and muffins at the Main Street bakery"
    got = answer_visible_recall(["D1:1", "D1:2"], BY_TURN, {"evt:a", "evt:b"}, lines, TURNS,
                                answer)
    assert got == 0.5
    # A turn that holds none of the answer's words (the date is the answer): a line counts.
    assert answer_visible_recall(["D1:3"], BY_TURN, {"evt:c"},
                                 {"evt:c": "- [evt:c] Cal: See you …"}, TURNS,
                                 "8 May 2023") == 1.0


def test_eval_reports_answer_visible_beside_recall():
    report = run_locomo(TINY, arms=["full", "plain-search"], budgets=[120, 2000])
    for row in report.results:
        assert row.answer_visible is not None and row.recall is not None
        assert row.answer_visible <= row.recall
        if row.arm == "plain-search":  # whole turns only: everything found is visible
            assert row.answer_visible == row.recall


# ---------------------------------------------------------------- arms


def test_dense_and_hybrid_arms_fill_the_budget_with_real_vectors():
    conv = load_conversations(TINY)[0]
    question = "What musical instrument is Bob studying?"  # "cello" not said: a paraphrase
    with imported(conv) as data:
        arms = Arms(data.store, data.events)
        try:
            for arm in ("dense", "hybrid"):
                pack = arms.pack(arm, question, 60)
                assert pack.refs and 0 < pack.tokens <= 60
            everything = arms.pack("hybrid", question, 2000)
            assert everything.refs == {e.ref for e in data.events}
            # The cello turn is the dense arm's first pick at a budget of one turn.
            one = arms.pack("dense", question, 16)
            assert one.refs == {data.events[3].ref}
        finally:
            arms.close()
        assert dense.vector_models(data.store.conn) == {
            dense_model.load_embedder().model: len(data.events)}  # type: ignore[union-attr]


def test_default_arms_leave_out_the_dense_ones_without_the_model(monkeypatch):
    assert check_arms(None) == ARMS
    monkeypatch.setattr(dense_model, "PACKAGE", "no_such_embedding_package")
    dense_model.load_embedder.cache_clear()
    try:
        assert "dense" not in check_arms(None) and "hybrid" not in check_arms(None)
        with pytest.raises(UsageError, match=r"agentstate-cli\[dense\]"):
            check_arms(["full", "hybrid"])
        assert check_arms(["no-dense", "full"]) == ("no-dense", "full")
    finally:
        dense_model.load_embedder.cache_clear()


def test_ablation_arms_switch_one_part_off(monkeypatch):
    from agentstate.context import assemble

    seen = []
    real = assemble.build_context

    def spy(*args, **kwargs):
        seen.append({k: kwargs[k] for k in ("dense", "speakers", "answer_lines")
                     if k in kwargs})
        return real(*args, **kwargs)

    monkeypatch.setattr(assemble, "build_context", spy)
    conv = load_conversations(TINY)[0]
    with imported(conv) as data:
        arms = Arms(data.store, data.events)
        for arm in ("full", "no-dense", "no-speakers", "no-answer-lines"):
            arms.pack(arm, "Who teaches Bob?", 500)
    assert seen == [{}, {"dense": False}, {"speakers": False}, {"answer_lines": False}]


# ---------------------------------------------------------------- the second corpus


def test_the_generator_is_seeded_and_writes_locomo_files(tmp_path):
    assert chatgen.conversation(3) == chatgen.conversation(3)
    assert chatgen.conversation(3) != chatgen.conversation(4)
    paths = chatgen.write_corpus(tmp_path, seed=5, conversations=2)
    convs = load_conversations(tmp_path)
    assert [c.name for c in convs] == [p.name for p in paths]
    for path, conv in zip(paths, convs, strict=True):
        raw = json.loads(path.read_text())
        turns = {t["dia_id"]: t for k, v in raw.items() if k.startswith("session_")
                 and isinstance(v, list) for t in v}
        assert len({t["speaker"] for t in turns.values()}) >= 3  # several speakers
        assert conv.unknown_evidence == 0 and conv.skipped_no_evidence == 0
        assert {q.category_name for q in conv.questions} == {"single-hop", "temporal",
                                                             "multi-hop"}
        for q in raw["qa"]:
            if q["category"] == 4:
                # The answer is in the evidence turn and not in the (paraphrased) question.
                (turn,) = [turns[e] for e in q["evidence"]]
                assert q["answer"].lower() in turn["text"].lower()
                assert q["answer"].lower() not in q["question"].lower()


def test_the_generator_runs_as_a_module(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "agentstate.evals.chatgen", str(tmp_path),
                           "--conversations", "1", "--seed", "9"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and (tmp_path / "chat-9.json").is_file()
    bad = subprocess.run([sys.executable, "-m", "agentstate.evals.chatgen", str(tmp_path),
                          "--conversations", "0"], capture_output=True, text=True,
                         check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
