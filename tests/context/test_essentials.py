"""The task's essentials at tight budgets: one definition for `resume` and `context`.

Below the minimum both refuse (exit 3) naming the same number; at or above it both keep the
goal, constraints, preferences, open questions, pending verifications, the latest failing
tool result and the drift summary. Drift names commits and tells file kinds apart.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentstate.context.assemble import build_context
from agentstate.context.essentials import gather
from agentstate.context.resume import build_pack
from agentstate.errors import BudgetTooSmall
from agentstate.memory.write import remember
from agentstate.runs.checkpoint import create_checkpoint, working_state
from agentstate.runs.log import append_event, start_run
from agentstate.runs.worktree import snapshot
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for
from tests.conftest import fresh_store, git

# Letters without digits/capitals: never trips the secret scanner's high-entropy rule.
TEXT = st.text(alphabet="abcdefghij klmnop.,:-\n日本語é", min_size=1, max_size=120).filter(
    lambda s: s.strip())
KINDS = ["question", "verify", "answer", "diagnosis", "note", "tool-fail", "tool-pass",
         "hypothesis"]


def _minimum(build) -> int:
    with pytest.raises(BudgetTooSmall) as refused:
        build(1)
    return refused.value.minimum


@st.composite
def runs(draw):
    return {
        "goal": draw(TEXT),
        "constraints": draw(st.lists(TEXT, max_size=3)),
        "preferences": draw(st.lists(TEXT, max_size=2)),
        "events": draw(st.lists(st.tuples(st.sampled_from(KINDS), TEXT), max_size=20)),
        "checkpoint": draw(st.booleans()),
    }


def _fill(store, case):
    run, _ = start_run(store, case["goal"], case["constraints"])
    last_question = None
    for kind, text in case["events"]:
        if kind == "answer":
            if last_question is not None:
                append_event(store, run.ref, "answer", text, resolves=last_question)
            continue
        if kind.startswith("tool-"):
            code = 1 if kind == "tool-fail" else 0
            append_event(store, run.ref, "tool", f"$ cmd {text[:10]!r} → exit {code}",
                         source="tool:cmd", meta={"exit_code": code, "excerpt": text},
                         allow_system_kinds=True)
            continue
        event = append_event(store, run.ref, kind, text)
        if kind == "question":
            last_question = event.ref
    for text in case["preferences"]:
        remember(store, text, kind="preference", source="user", evidence=["user"],
                 principal=resolve_principal(store))
    if case["checkpoint"]:
        create_checkpoint(store, run.ref, "halfway")
    return run


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=runs(), extra=st.integers(0, 60))
@example(case={"goal": ":", "constraints": [], "preferences": [], "checkpoint": False,
               "events": [("question", ":")] * 7 + [("question", "a longer one")]}, extra=0)
def test_resume_and_context_refuse_below_the_same_minimum_and_keep_the_essentials(case, extra):
    with fresh_store() as store:
        run = _fill(store, case)
        count = counter_for(store.settings.tokens).count
        essentials = gather(store, run, principal=resolve_principal(store))
        expected = count(essentials.text())
        from_resume = _minimum(lambda b: build_pack(store, run.ref, principal="owner",
                                                          budget=b, skills=[]))
        from_context = _minimum(lambda b: build_context(store, run=run.ref, budget=b,
                                                        save=False,
                                                        principal=resolve_principal(store)))
        assert from_resume == from_context == expected
        # At the minimum, and a little above it, both keep every essential.
        for budget in (expected, expected + extra):
            resumed = build_pack(store, run.ref, principal="owner", budget=budget, skills=[])
            packed = build_context(store, run=run.ref, budget=budget, save=False,
                                   principal=resolve_principal(store))
            for text in (resumed.text, packed.text):
                assert count(text) <= budget
                for item in essentials.items:
                    # Past the ceiling, questions and verifications are optional: offered
                    # when there is room, counted in the section's "+ N more" line otherwise.
                    assert item.floor in text or item.optional, item
                if any(item.optional and item.floor not in text for item in essentials.items):
                    assert re.search(r"^- \+ \d+ more ", text, re.MULTILINE), text
        # The one just below is refused by both.
        for build in (lambda: build_pack(store, run.ref, principal="owner",
                                          budget=expected - 1, skills=[]),
                      lambda: build_context(store, run=run.ref, budget=expected - 1,
                                            save=False, principal=resolve_principal(store))):
            if expected > 1:
                with pytest.raises(BudgetTooSmall):
                    build()


@pytest.fixture
def story(store, repo):
    """The issue's run: a goal, two constraints, an open question, a confirmed diagnosis, a
    pending verification, a failing test run and a moved work tree."""
    run, _ = start_run(store, "Fix the flaky test_parse_date test",
                       ["Do not change the public signature of parse_date",
                        "Keep python 3.10 support"], worktree=snapshot(repo))
    question = append_event(store, run.ref, "question",
                            "Does CI run the tests under a different locale than laptops?")
    diagnosis = append_event(store, run.ref, "diagnosis", "The cache key ignores the locale")
    verify = append_event(store, run.ref, "verify", "Run test_parse_date 50 times")
    failing = append_event(store, run.ref, "tool", "$ pytest -q → exit 1 in 0.40s",
                           source="tool:pytest",
                           meta={"exit_code": 1, "excerpt": "E   AssertionError: locale"},
                           allow_system_kinds=True)
    create_checkpoint(store, run.ref, "fix under way", worktree=snapshot(repo))
    (repo / "parser.py").write_text("KEY = 'locale'\n")
    git(repo, "add", "parser.py")
    git(repo, "commit", "-q", "-m", "parser: key the cache by locale")
    return {"run": run, "question": question, "diagnosis": diagnosis, "verify": verify,
            "failing": failing}


@pytest.mark.parametrize("budget", [50, 150, 250])
def test_tight_budgets_keep_the_goal_and_the_drift_summary_or_refuse(store, story, budget):
    run = story["run"]
    count = counter_for(store.settings.tokens).count
    minimum = count(gather(store, run, principal=resolve_principal(store)).text())
    for build in (lambda: build_pack(store, run.ref, principal="owner", budget=budget),
                  lambda: build_context(store, budget=budget, save=False,
                                        principal=resolve_principal(store))):
        if budget < minimum:
            with pytest.raises(BudgetTooSmall) as refused:
                build()
            assert refused.value.minimum == minimum
            continue
        text = build().text
        assert "Fix the flaky test_parse_date test" in text
        assert "HEAD moved to" in text and "1 commit(s)" in text
        assert story["question"].ref in text and story["verify"].ref in text
        assert story["failing"].ref in text


def test_at_a_budget_with_room_both_keep_everything_essential_and_the_goal_once(store, story):
    run = story["run"]
    count = counter_for(store.settings.tokens).count
    budget = count(gather(store, run, principal=resolve_principal(store)).text()) + 40
    packed = build_context(store, budget=budget, save=False, principal=resolve_principal(store))
    resumed = build_pack(store, run.ref, principal="owner", budget=budget)
    for text in (packed.text, resumed.text):
        assert count(text) <= budget
        assert "- since checkpoint" in text and "HEAD moved to" in text
        assert story["question"].ref in text and story["verify"].ref in text
    # The goal is an essential (never dropped); its restatement is the first thing to go.
    assert "goal (restated)" not in packed.text
    goal = next(e for e in packed.manifest if e.kind == "goal")
    assert goal.decision == "included" and goal.reason == "essential"


def test_cli_context_and_resume_name_the_same_minimum(cli, initialised):
    cli.ok("run", "start", "Fix the flaky test", "-c", "one constraint", "-c", "another")
    cli.ok("log", "question", "Does CI use another locale?")
    for command in (["context", "--budget", "50"], ["resume", "--budget", "50"]):
        result = cli(*command)
        assert result.exit_code == 3 and "minimum of" in result.stderr
    minima = {cli(*command, "--json").json()["error"]["details"]["minimum"]
              for command in (["context", "--budget", "50"], ["resume", "--budget", "50"])}
    assert len(minima) == 1
    (minimum,) = minima
    assert cli.json("context", "--budget", str(minimum))["tokens"] <= minimum
    assert cli.json("resume", "--budget", str(minimum))["budget"]["tokens"] <= minimum


def test_drift_names_commits_and_tells_file_kinds_apart(store, repo):
    (repo / "old.py").write_text("old\n")
    (repo / "keep.py").write_text("keep\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two files")
    run, _ = start_run(store, "goal", worktree=snapshot(repo))
    (repo / "feature.py").write_text("f\n")
    git(repo, "add", "feature.py")
    git(repo, "commit", "-q", "-m", "add the feature")
    (repo / "keep.py").write_text("changed\n")       # modified
    (repo / "staged.py").write_text("new\n")
    git(repo, "add", "staged.py")                     # added
    (repo / "old.py").unlink()                        # deleted
    (repo / "scratch.txt").write_text("notes\n")      # untracked
    essentials = gather(store, run, principal=resolve_principal(store))
    drift = essentials.drift
    assert drift["head_moved"] and [c.split(" ", 1)[1] for c in drift["commits"]] == [
        "add the feature"]
    assert {(f["kind"], f["path"]) for f in drift["files"]} == {
        ("modified", "keep.py"), ("added", "staged.py"), ("deleted", "old.py"),
        ("untracked", "scratch.txt")}
    summary = next(i for i in essentials.items if i.section == "drift")
    assert "1 commit(s)" in summary.floor
    assert "1 modified, 1 added, 1 deleted, 1 untracked" in summary.floor
    for line in ("commit ", "add the feature", "modified keep.py", "added staged.py",
                 "deleted old.py", "untracked scratch.txt"):
        assert line in summary.full
    text = build_pack(store, run.ref, principal="owner").text
    assert "  - untracked scratch.txt" in text and "  - deleted old.py" in text


def test_working_state_is_bounded_per_group_and_counts_the_rest(store):
    run, _ = start_run(store, "goal", ["c1", "c2"])
    questions = [append_event(store, run.ref, "question", f"question {i}") for i in range(30)]
    append_event(store, run.ref, "answer", "answered", resolves=questions[-1].ref)
    full = working_state(store, run)
    bounded = working_state(store, run, per_group=5)
    assert len(full.open_questions) == 29 and len(full.constraints) == 2
    assert [q.ref for q in bounded.open_questions] == [q.ref for q in full.open_questions[-5:]]
    assert bounded.more == {"open_questions": 24}
    assert len(bounded.constraints) == 2  # pinned: never bounded


def test_a_checkpoint_without_a_snapshot_keeps_an_empty_worktree_pointer(store, repo):
    from agentstate.runs.worktree import WorkTree

    run, _ = start_run(store, "goal")
    bare = create_checkpoint(store, run.ref, "no snapshot")
    assert bare.worktree == WorkTree() and bare.state["worktree"] == {}
    taken = create_checkpoint(store, run.ref, "with one", worktree=snapshot(repo))
    assert taken.state["worktree"] == taken.worktree.as_dict()
    assert taken.worktree.head and isinstance(taken.worktree.dirty_files, tuple)
