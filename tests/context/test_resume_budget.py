"""`resume --budget N`: never over budget; the task's essentials always kept, or exit 3."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentstate.context.essentials import gather
from agentstate.context.resume import SkillHit, build_pack
from agentstate.errors import BudgetTooSmall
from agentstate.runs.checkpoint import create_checkpoint
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for
from tests.conftest import fresh_store

# Letters without digits/capitals: never trips the secret scanner's high-entropy rule.
TEXT = st.text(alphabet="abcdefghij klmnop.,:-\n日本語é", min_size=1, max_size=160).filter(
    lambda s: s.strip()
)
DRIFT = {"since": "run start", "known": True, "any": True, "recorded": {"branch": "main",
         "head": "a" * 40}, "head_moved": True, "from_head": "a" * 40, "to_head": "b" * 40,
         "commits": [f"b{i:06d} commit number {i}" for i in range(30)],
         "history_rewritten": False, "branch_changed": False, "uncommitted": "appeared",
         "changed_files": [f"src/file_{i}.py" for i in range(30)]}


@st.composite
def run_contents(draw):
    return {
        "goal": draw(TEXT),
        "constraints": draw(st.lists(TEXT, max_size=3)),
        "events": draw(st.lists(
            st.tuples(st.sampled_from(["observation", "decision", "diagnosis", "hypothesis",
                                       "question", "verify", "note"]), TEXT),
            max_size=25)),
        "checkpoint": draw(st.none() | TEXT),
        "skills": [SkillHit(f"skill-{i}", 1, text, f"skill:skill-{i}@v1", 1.0)
                   for i, text in enumerate(draw(st.lists(TEXT, max_size=3)))],
    }


# Found by hypothesis in a fresh-clone run: the optional questions past the essentials'
# ceiling were omitted for budget (named in "Omitted for budget"), which is what they are for.
PAST_THE_CEILING = {
    "goal": ":", "constraints": [], "checkpoint": None, "skills": [],
    "events": [("question", "語:"), ("question", ":a日a\na:"), *[("observation", ":")] * 10,
               *[("question", ":")] * 3, ("question", ":a:"), ("question", ":"),
               ("observation", ":"), ("observation", ":"), ("question", ":")]}


@settings(max_examples=40, deadline=None)
@given(contents=run_contents(), budget=st.integers(min_value=1, max_value=900))
@example(contents=PAST_THE_CEILING, budget=263)
def test_budget_is_never_exceeded_and_pinned_parts_are_kept(contents, budget):
    with fresh_store() as store:
        run, _ = start_run(store, contents["goal"], contents["constraints"])
        for kind, text in contents["events"]:
            append_event(store, run.ref, kind, text)
        if contents["checkpoint"] is not None:
            create_checkpoint(store, run.ref, contents["checkpoint"])
        skills = contents["skills"]
        count = counter_for(store.settings.tokens).count
        full = build_pack(store, run.ref, principal="owner", drift=DRIFT, skills=list(skills))
        try:
            pack = build_pack(store, run.ref, principal="owner", budget=budget, drift=DRIFT,
                              skills=list(skills))
        except BudgetTooSmall as exc:
            assert exc.minimum > budget
            assert exc.minimum >= count(full.pinned_text)
            return
        assert count(pack.text) <= budget
        assert pack.pinned_text == full.pinned_text
        # Every essential is in the text, at least in its short form (which the full one
        # starts with), and the minimum named is the essentials' own size. Past the ceiling,
        # questions and verifications are optional: shown when there is room, otherwise
        # counted in a "+ N more" line or named among what was omitted for budget.
        for item in gather(store, run, drift=DRIFT, principal=resolve_principal(store)).items:
            assert item.floor in pack.text or (item.optional and (
                item.ref in pack.omitted
                or re.search(r"^- \+ \d+ more ", pack.text, re.MULTILINE))), item
        assert pack.budget["minimum"] == count(full.pinned_text) <= budget
        assert pack.budget["tokens"] == count(pack.text)
        if pack.text != full.text:
            assert pack.omitted or pack.compressed
        if "## Omitted for budget" in pack.text:  # listed when there is room for it
            assert pack.omitted
        # Whatever was kept is still listed in the structured pack, and nothing is both.
        kept_refs = {i.ref for i in pack.diagnoses + pack.hypotheses} | {
            s.ref for s in pack.skills} | {e.ref for e in pack.recent_events}
        assert not kept_refs & set(pack.omitted)
        assert all(ref in pack.text for ref in kept_refs)


def test_budget_drops_lowest_priority_first_and_lists_refs(store):
    run, _ = start_run(store, "goal", ["one constraint"])
    diag = append_event(store, run.ref, "diagnosis", "the confirmed cause")
    notes = [append_event(store, run.ref, "note", f"note number {i} " + "word " * 30)
             for i in range(6)]
    count = counter_for(store.settings.tokens).count
    full = build_pack(store, run.ref, principal="owner", drift=DRIFT, skills=[])
    budget = count(full.pinned_text) + 120
    pack = build_pack(store, run.ref, principal="owner", budget=budget, drift=DRIFT, skills=[])
    assert count(pack.text) <= budget
    assert "the confirmed cause" in pack.text  # highest optional priority kept
    assert [d.ref for d in pack.diagnoses] == [diag.ref]
    dropped_notes = [n.ref for n in notes if n.ref in pack.omitted]
    assert dropped_notes, "the low-priority notes should be the ones dropped"
    omitted_section = pack.text.split("## Omitted for budget", 1)[1]
    assert all(ref in omitted_section for ref in dropped_notes)


def test_drift_falls_back_to_its_short_form(store):
    run, _ = start_run(store, "goal")
    count = counter_for(store.settings.tokens).count
    full = build_pack(store, run.ref, principal="owner", drift=DRIFT, skills=[])
    budget = count(full.pinned_text) + 80
    pack = build_pack(store, run.ref, principal="owner", budget=budget, drift=DRIFT, skills=[])
    assert "HEAD moved" in pack.text and "30 commit(s)" in pack.text
    assert "commit number 29" not in pack.text  # the listing was dropped, the summary kept
    assert f"worktree:{run.ref}" in pack.compressed


def test_cli_budget_too_small_exits_3_naming_the_minimum(cli, initialised):
    cli.ok("run", "start", "a goal with some words", "-c", "a constraint")
    result = cli("resume", "--budget", "5")
    assert result.exit_code == 3
    assert "minimum of" in result.stderr and "Traceback" not in result.stderr
    err = cli("resume", "--budget", "5", "--json").json()["error"]
    assert err["code"] == "budget_too_small" and err["details"]["minimum"] > 5
    ok = cli.json("resume", "--budget", str(err["details"]["minimum"]))
    assert ok["budget"]["tokens"] <= err["details"]["minimum"]


@pytest.mark.parametrize("bad", ["0", "-3"])
def test_cli_budget_must_be_positive(cli, initialised, bad):
    cli.ok("run", "start", "goal")
    result = cli("resume", "--budget", bad)
    assert result.exit_code == 1 and "positive" in result.stderr


def test_cli_budget_not_a_number_is_a_usage_error(cli, initialised):
    cli.ok("run", "start", "goal")
    assert cli("resume", "--budget", "lots").exit_code == 2
