"""The essentials have a ceiling (issue 24): however much is pinned, the smallest pack
`resume` and `context` accept stays under BOUND tokens; pinned items that fit are in it
(whole), the rest is a pointer line with a count; SessionStart stays within its budget."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentstate.context.assemble import build_context
from agentstate.context.essentials import BOUND, PINNED_ROOM, gather, preference_ref, scope_of
from agentstate.context.resume import build_pack
from agentstate.memory.model import list_user_preferences
from agentstate.memory.write import remember
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for
from tests.conftest import fresh_store, run_agentstate

# Letters without digits/capitals: never trips the secret scanner's high-entropy rule.
WORDS = st.text(alphabet="abcdefghij klmnop.,:-日本語é", min_size=1, max_size=60).filter(
    lambda s: s.strip())


def long_text(max_repeat: int):
    """A text of one to `max_repeat` copies of a phrase: short, long and very long items."""
    return st.tuples(WORDS, st.integers(1, max_repeat)).map(lambda t: " ".join([t[0]] * t[1]))


@st.composite
def stores(draw):
    return {
        "goal": draw(long_text(60)),
        "constraints": draw(st.lists(long_text(12), max_size=12)),
        "preferences": draw(st.lists(long_text(12), max_size=25)),
        "questions": draw(st.lists(long_text(20), max_size=12)),
    }


def _fill(store, case):
    run, _ = start_run(store, case["goal"], case["constraints"])
    for n, text in enumerate(case["preferences"]):
        remember(store, f"{text} ({n})", kind="preference", source="user", evidence=["user"],
                 principal=resolve_principal(store))
    for text in case["questions"]:
        append_event(store, run.ref, "question", text)
    return run


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=stores())
def test_the_minimum_stays_under_the_bound_and_pinned_items_that_fit_are_in(case):
    with fresh_store() as store:
        run = _fill(store, case)
        count = counter_for(store.settings.tokens).count
        ess = gather(store, run, principal=resolve_principal(store))
        text = ess.text()
        # What must stay out: the minimum never exceeds the bound, however much is stored.
        assert count(text) <= BOUND
        # What must get in: every pinned item is either shown byte for byte, or it would not
        # have fit beside the pinned items that are shown (pinned text is never cut).
        assert ess.state is not None
        pinned = [(c.ref, c.text) for c in ess.state.constraints]
        prefs = list_user_preferences(store, resolve_principal(store), scope_of(run))
        pinned += [(preference_ref(p), p.text) for p in prefs]
        shown = {i.ref: i for i in ess.items if i.pinned and not i.optional}
        used = sum(count(i.floor) + 1 for i in shown.values())
        assert used <= PINNED_ROOM
        for ref, body in pinned:
            if ref in shown:
                assert body in shown[ref].floor and shown[ref].floor in text
                continue
            line_cost = count(_uncapped_lines(store, run, prefs)[ref]) + 1
            assert used + line_cost > PINNED_ROOM, (ref, used, line_cost)
        # Whatever is left out is counted in a pointer line, per section.
        left = len(pinned) - len(shown)
        assert sum(n for s, n in ess.left_out.items()
                   if s in ("constraints", "preferences")) == left
        for section, n in ess.left_out.items():
            assert f"+ {n} more " in text, section
        # Both commands accept that minimum and keep every essential in it.
        minimum = count(text)
        pack = build_pack(store, run.ref, budget=minimum, skills=[], principal="owner")
        for built in (pack.text,
                      build_context(store, run=run.ref, budget=minimum, save=False,
                                    principal=resolve_principal(store)).text):
            assert count(built) <= minimum
            for item in ess.items:
                if not item.optional:  # questions past the ceiling: shown only with room
                    assert item.floor in built


def _uncapped_lines(store, run, prefs):
    """ref → the line of every pinned item before the ceiling: the run's constraints as the
    essentials make them, and a line for every preference (the essentials read only those
    that could fit)."""
    from agentstate.context import essentials

    saved = essentials.cap
    essentials.cap = lambda ess, count: ess
    try:
        lines = {i.ref: i.floor for i in gather(store, run,
                                                principal=resolve_principal(store)).items}
    finally:
        essentials.cap = saved
    for p in prefs:
        ref = preference_ref(p)
        lines[ref] = essentials._preference_item(ref, p.scope, p.text).floor
    return lines


PREFERENCES = 983  # the store: a tenth of 10k memories are pinned preferences


def _many_preferences(store, n: int = PREFERENCES) -> None:
    with store.transaction():
        for i in range(n):
            remember(store, f"preference number {i}: always run the linter on module m{i} "
                     "before committing, and keep the changelog entry short",
                     kind="preference", source="user", evidence=["user"],
                     principal=resolve_principal(store))


def test_983_pinned_preferences_fit_context_8000_resume_and_session_start(initialised, cli):
    from agentstate.store.db import open_store

    cli.ok("run", "start", "Make the importer stream large transcripts", "-c",
           "keep the public API stable")
    store = open_store(start=initialised)
    try:
        _many_preferences(store)
    finally:
        store.close()
    packed = cli.json("context", "--budget", "8000")
    assert packed["tokens"] <= 8000
    pointer = "more preferences: `agentstate memory list --kind preference`"
    assert pointer in packed["text"]
    resumed = cli.ok("resume").stdout
    assert pointer in resumed and len(resumed) < 20_000
    counted = cli.json("resume", "--budget", "2000")["budget"]
    assert counted["minimum"] <= BOUND and counted["tokens"] <= 2000
    # SessionStart injects the resume pack within its 2,000-token budget.
    session = {"session_id": "s-1", "hook_event_name": "SessionStart", "source": "startup",
               "cwd": str(initialised), "transcript_path": None}
    prompt = dict(session, hook_event_name="UserPromptSubmit", prompt="Continue the work")
    assert run_agentstate("hook", "claude-code", cwd=initialised,
                          input=json.dumps(prompt)).returncode == 0
    proc = run_agentstate("hook", "claude-code", cwd=initialised, input=json.dumps(session))
    assert proc.returncode == 0, proc.stderr
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    store = open_store(start=initialised)
    try:
        assert counter_for(store.settings.tokens).count(context) <= 2000
    finally:
        store.close()
    assert pointer in context


def test_preferences_rank_the_most_specific_then_the_newest_first(store):
    run, _ = start_run(store, "goal")
    _many_preferences(store, 200)
    remember(store, "on this run always write the tests first", kind="preference",
             source="user", evidence=["user"], scope=f"run:{run.id}",
             principal=resolve_principal(store))
    ess = gather(store, run, principal=resolve_principal(store))
    shown = [i for i in ess.items if i.section == "preferences" and not i.pointer]
    assert "on this run always write the tests first" in shown[0].floor
    assert "preference number 199:" in shown[1].floor  # the newest repo-wide one next
    assert ess.left_out["preferences"] == 201 - len(shown)


def test_a_preference_scoped_to_another_run_is_not_pinned_in_this_runs_essentials(store):
    """The essentials pin what applies to this run: a preference the user scoped to another
    run (or branch, or path) stays out of this run's packs, one scoped to this run is in."""
    other, _ = start_run(store, "the other task")
    run, _ = start_run(store, "this task")
    who = resolve_principal(store)
    remember(store, "in the other task keep the old parser", kind="preference", source="user",
             evidence=["user"], scope=f"run:{other.id}", principal=who)
    remember(store, "in this task write the tests first", kind="preference", source="user",
             evidence=["user"], scope=f"run:{run.id}", principal=who)
    ess = gather(store, run, principal=who)
    text = ess.text()
    assert "in this task write the tests first" in text
    assert "keep the old parser" not in text
    assert [p.text for p in ess.preferences] == ["in this task write the tests first"]
    pack = build_pack(store, run.ref, principal=who)
    assert "write the tests first" in pack.text and "keep the old parser" not in pack.text
