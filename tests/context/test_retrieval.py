"""Retrieval for context packs: stemming, CJK, budget fill, hostile queries, grouped labels,
and the duplicate drop that only happens when the copy is in the text."""

from __future__ import annotations

import pytest

from agentstate.context.assemble import build_context
from agentstate.errors import AgentStateError
from agentstate.memory.search import search_events
from agentstate.memory.terms import stem
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for
from tests.conftest import shown_at


def test_english_inflections_find_each_other(store):
    run, _ = start_run(store, "reading")
    e1 = append_event(store, run.ref, "note", "Caroline: Researching adoption agencies")
    e2 = append_event(store, run.ref, "note", "she researched it for weeks")
    e3 = append_event(store, run.ref, "note", "more research is needed")
    append_event(store, run.ref, "note", "an unrelated remark about lunch")
    for query in ("research", "researching", "researched", "What did Caroline research?"):
        assert {h.ref for h in search_events(store, query)} >= {e1.ref, e2.ref, e3.ref}, query
    assert stem("researching") == stem("researched") == "research"


def test_cjk_is_still_found_beside_the_stemmed_index(store):
    run, _ = start_run(store, "调查")
    e = append_event(store, run.ref, "observation", "登录接口在高并发时返回错误 while testing")
    append_event(store, run.ref, "observation", "the login page works")
    assert [h.ref for h in search_events(store, "登录接口")] == [e.ref]
    assert [h.ref for h in search_events(store, "并发 tested")][0] == e.ref


def test_a_one_term_query_on_a_big_store_fills_the_evidence_share(store):
    """A one-word query that many events match: a large budget is used, not capped by a
    fixed top-K of hits."""
    run, _ = start_run(store, "a long conversation")
    for n in range(1200):
        append_event(store, run.ref, "note",
                     f"turn {n}: the garden had tomatoes number {n} and some other words")
    other, _ = start_run(store, "now")  # the conversation is not the current run
    pack = build_context(store, run=other.ref, query="tomatoes", budget=16000, save=False,
                         principal=resolve_principal(store))
    evidence = [e for e in pack.manifest
                if e.cls == "evidence" and e.decision in ("included", "compressed")]
    assert pack.tokens <= 16000
    assert pack.tokens > 0.8 * 16000, pack.tokens
    assert len(evidence) > 300


HOSTILE = [
    '"', "*", "NEAR(", "a OR b", "-", "NOT AND OR", '"unbalanced', "foo*bar", "(x", "^start",
    "col:value", "NEAR(a b, 3)", "the of and", "？！。", "!!! ...", "登录 login 接口 -x",
    "x" * 100_000, "word " * 20_000,
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_give_a_pack_or_one_error_never_over_budget(store, query):
    run, _ = start_run(store, "fix the login test")
    append_event(store, run.ref, "note", "login fails: NEAR the OR gate \"quoted\" text")
    append_event(store, run.ref, "note", "登录接口 returns an error")
    try:
        pack = build_context(store, query=query, budget=300, save=False,
                             principal=resolve_principal(store))
    except AgentStateError as exc:
        assert "\n" not in str(exc)
        return
    assert pack.tokens <= 300
    assert counter_for(store.settings.tokens).count(pack.text) == pack.tokens


def test_only_punctuation_is_a_clear_error_on_the_command_line(cli, initialised):
    result = cli("context", "--no-run", "--query", "?!.")
    output = result.stdout + result.stderr
    assert result.exit_code == 1 and "Traceback" not in output
    assert "no words to search for" in output


def test_evidence_is_grouped_with_one_header_and_short_labels(store):
    old, _ = start_run(store, "old work")
    for n in range(6):
        append_event(store, old.ref, "note", f"the parser fails on nested tables, case {n}")
    current, _ = start_run(store, "now")
    pack = build_context(store, run=current.ref, query="parser nested tables", budget=4000,
                         save=False, principal=resolve_principal(store))
    header = f"### {old.ref} · user (trusted)"
    assert pack.text.count(header) == 1
    lines = pack.text.split(header, 1)[1].strip().splitlines()[:6]
    # Each event is labelled by its place in the run the header names (`run:…#N`).
    assert [line.split(" ")[1].split("]")[0] for line in lines] == [f"[#{n}" for n in range(1, 7)]
    # The date is printed once while it repeats (a note, the log's unmarked kind, is not
    # named); every line keeps its ref.
    assert lines[0].split("]")[0].endswith("· 2026-01-15") and "note" not in lines[0]
    assert all("·" not in line.split("]")[0] for line in lines[1:])
    assert "(trusted)" not in "\n".join(lines)
    for entry in pack.manifest:
        if entry.cls == "evidence" and entry.decision != "dropped":
            assert shown_at(store, entry, pack.text) >= 0 and entry.note


def test_a_duplicate_drop_names_a_ref_that_is_in_the_text(store):
    """An event that is both a search hit and in the run's trajectory: whichever copy is
    dropped as a duplicate names the other, and that one is in the text — at every budget,
    including ones where the trajectory copy does not fit."""
    run, _ = start_run(store, "g")
    for n in range(30):
        append_event(store, run.ref, "note", f"filler event number {n} about nothing much")
    hit = append_event(store, run.ref, "note", "the zeppelin schedule moved to friday " * 3)
    for budget in (120, 160, 200, 260, 400, 800, 3000):
        try:
            pack = build_context(store, query="zeppelin schedule", budget=budget, save=False,
                                 principal=resolve_principal(store))
        except AgentStateError:
            continue
        copies = [e for e in pack.manifest if e.ref == hit.ref]
        placed = [e for e in copies if e.decision in ("included", "compressed")]
        for entry in pack.manifest:
            if entry.reason.startswith("duplicate of "):
                named = entry.reason.removeprefix("duplicate of ").split(" ", 1)[0]
                assert named in pack.text, (budget, entry)
        if any(e.reason.startswith("duplicate of ") for e in copies):
            assert placed, budget  # dropped as a duplicate only when the copy is placed
        assert len(placed) <= 1


def test_evidence_shown_as_one_line_by_policy_says_so(store):
    """Hits past the strongest few, and neighbours, are one line by policy: the manifest
    says `one line`, not `older` (which is the trajectory's reason) nor `budget`."""
    old, _ = start_run(store, "old work")
    for n in range(12):
        append_event(store, old.ref, "note", f"the parser fails on nested tables, case {n}. "
                                             "More detail follows in a second sentence.")
    current, _ = start_run(store, "now")
    pack = build_context(store, run=current.ref, query="parser nested tables", budget=6000,
                         save=False, principal=resolve_principal(store))
    evidence = [e for e in pack.manifest if e.cls == "evidence"]
    one_line = [e for e in evidence if e.decision == "compressed"]
    assert one_line and all(e.reason == "one line" for e in one_line)
    assert not any(e.reason == "older" for e in evidence)


def test_the_event_search_is_sized_by_the_room_left_for_evidence(store):
    """A run whose task state fills the budget does not gather hundreds of hits it cannot
    show; with the same budget and room to spare, the pool grows with it."""
    past, _ = start_run(store, "a long conversation")
    for n in range(600):
        append_event(store, past.ref, "note", f"turn {n}: the garden had tomatoes, case {n}")
    busy, _ = start_run(store, "tomatoes")
    for n in range(40):
        append_event(store, busy.ref, "question",
                     f"open question {n}: " + " ".join(f"word{n}x{k}" for k in range(60)))
    full = build_context(store, run=busy.ref, query="tomatoes", budget=8000, save=False,
                         principal=resolve_principal(store))
    free = build_context(store, query="tomatoes", budget=8000, save=False, no_run=True,
                         principal=resolve_principal(store))

    def gathered(pack):
        return sum(e.cls == "evidence" and e.ref.startswith("evt:") for e in pack.manifest)

    floor = store.settings.context.evidence_events
    assert gathered(full) <= 3 * floor < gathered(free)
    assert full.tokens <= 8000 and free.tokens > 0.8 * 8000


def test_an_event_kind_other_than_note_is_named_in_its_label(store):
    old, _ = start_run(store, "old work")
    append_event(store, old.ref, "decision", "the parser keeps nested tables flat")
    append_event(store, old.ref, "note", "the parser fails on nested tables")
    current, _ = start_run(store, "now")
    pack = build_context(store, run=current.ref, query="parser nested tables", budget=4000,
                         save=False, principal=resolve_principal(store))
    labels = [line.split("]")[0] for line in pack.text.splitlines() if line.startswith("- [#")]
    assert any(label.endswith("· decision · 2026-01-15") for label in labels)
    assert not any("note" in label for label in labels)


def _talk(store, hit_text: str) -> tuple[list[str], dict[str, str]]:
    """Seven turns whose fifth is the only hit for "marathon March": the refs, and the
    evidence notes of a pack asked that from another run."""
    talk, _ = start_run(store, "a conversation")
    texts = ["Ann: lunch was fine", "Ann: nothing new at work", "Bob: and the garden?",
             "Ann: so how was your weekend?", hit_text, "Ann: wow, well done",
             "Bob: it hurt for a week though"]
    refs = [append_event(store, talk.ref, "note", text).ref for text in texts]
    now, _ = start_run(store, "now")
    pack = build_context(store, run=now.ref, query="marathon March", budget=3000,
                         save=False, principal=resolve_principal(store))
    return refs, {e.ref: e.note for e in pack.manifest if e.cls == "evidence"}


def test_turns_up_to_two_away_from_a_hit_join_at_a_decaying_weight(store):
    """Turns one and two away from a hit that asks nothing join as one-line context at
    NEXT_WEIGHT and a quarter of its score; three away does not."""
    from agentstate.context.event_items import NEXT_WEIGHT

    refs, notes = _talk(store, "Bob: I ran the marathon in March")
    far, two, one, hit, after, later = refs[1:]
    for near in (after, one):
        assert notes[near] == f"next to {hit} (neighbour, {NEXT_WEIGHT:g} × its score)"
    for near in (later, two):
        assert notes[near] == f"next to {hit} (neighbour, 0.25 × its score)"
    assert far not in notes


def test_the_turn_after_a_hit_ending_with_a_question_ranks_as_its_reply(store):
    """The turn right after a hit whose last sentence is a question (an attached image's
    caption after it aside) is its reply, at REPLY_WEIGHT of the hit's score; the turn
    before stays at NEXT_WEIGHT. A question inside a turn that goes on is no such hit."""
    from agentstate.context.event_items import NEXT_WEIGHT, REPLY_WEIGHT, ends_asking

    refs, notes = _talk(store, "Bob: I ran the marathon in March. Ever run one? "
                               "[image: a photo of runners at a finish line]")
    _, two, one, hit, after, later = refs[1:]
    assert notes[after] == f"next to {hit} (neighbour, {REPLY_WEIGHT:g} × its score)"
    assert notes[one] == f"next to {hit} (neighbour, {NEXT_WEIGHT:g} × its score)"
    for near in (later, two):
        assert notes[near] == f"next to {hit} (neighbour, 0.25 × its score)"
    assert ends_asking("Ann: how was it?") and ends_asking("Ann: how was it?  ")
    assert not ends_asking("Ann: how was it? Mine was wet.")
    assert not ends_asking("Ann: it was [really?] wet.")


def test_a_long_matching_sentence_is_shown_as_a_window_around_the_match():
    from agentstate.context.compression import focus_line

    text = ("Caroline: Thanks, Melanie. " + "It was a long week with many small errands " * 3
            + "and then the zeppelin landed near the old harbour at noon " + "and more " * 20)
    line = focus_line("evt:abcd1234 · 2023-05-08", text, ("zeppelin",), 80)
    assert line.startswith("- [evt:abcd1234 · 2023-05-08] Caroline: … ")  # ref and speaker
    assert "zeppelin landed" in line and line.endswith(" …")
    body = line.split("] ", 1)[1]
    assert len(body) <= len("Caroline: … ") + 80 + len(" …")
    # Cut at word boundaries on both sides.
    words = set(text.split())
    assert all(w in words for w in body.split() if w not in ("…", "Caroline:"))
    # A sentence that fits is shown as it is; with no match, the first sentence as before.
    assert focus_line("r", "A: the zeppelin landed.", ("zeppelin",), 80) == \
        "- [r] A: the zeppelin landed."
    assert focus_line("r", "A: nothing here. Second.", ("zeppelin",), 80) == \
        "- [r] A: nothing here. …"


def test_whole_hits_only_where_the_room_affords_them(store):
    """A small budget shows every hit as one short line (more items fit); a large one shows
    the strongest hits whole. Every item keeps its ref either way."""
    old, _ = start_run(store, "old work")
    for n in range(40):
        append_event(store, old.ref, "note",
                     f"Turn {n}: the parser fails on nested tables in case {n}, " + "and then "
                     "it goes on to say a great deal more about other things " * 4)
    current, _ = start_run(store, "now")

    def evidence(budget):
        pack = build_context(store, run=current.ref, query="parser nested tables",
                             budget=budget, save=False, principal=resolve_principal(store))
        return pack, [e for e in pack.manifest if e.cls == "evidence"
                      and e.decision in ("included", "compressed")]

    small, small_items = evidence(1000)
    large, large_items = evidence(6000)
    assert small_items and not any(e.decision == "included" for e in small_items)
    # One whole hit per WHOLE_PER tokens of the room evidence has (a little under the
    # budget), the strongest ones.
    from agentstate.context.event_items import WHOLE_PER

    whole = [e for e in large_items if e.decision == "included"]
    assert 3 < len(whole) <= 6000 // WHOLE_PER
    assert min(e.score for e in whole) >= max(
        e.score for e in large_items if e.decision == "compressed")
    for pack, items in ((small, small_items), (large, large_items)):
        assert all(shown_at(store, e, pack.text) >= 0 for e in items)
    # Short lines in the small pack: the text around the match, not the whole sentence —
    # but for the complete items at the top, whose answer line is wider: here every hit
    # is as strong as the best, so each is complete (at most one per CONFIDENT_CAP_PER
    # tokens of room); a weaker neighbour, where one fits, is a short line.
    from agentstate.context.event_items import CONFIDENT_CAP_PER, SHORT_LINE_CHARS

    lines = [line for line in small.text.splitlines() if line.startswith("- [#")]
    wide = [line for line in lines if len(line.split("] ", 1)[1]) > SHORT_LINE_CHARS + 4]
    assert 0 < len(wide) <= 1000 // CONFIDENT_CAP_PER
    assert all("parser fails on nested tables" in line for line in wide)


def test_a_small_pack_does_not_restate_the_goal_and_hints_only_at_more_memories(store):
    run, _ = start_run(store, "fix the parser on nested tables")
    append_event(store, run.ref, "note", "the parser fails on nested tables")
    small = build_context(store, query="parser", budget=1000, save=False,
                          principal=resolve_principal(store))
    large = build_context(store, query="parser", budget=4000, save=False,
                          principal=resolve_principal(store))
    assert "goal (restated)" not in small.text and "goal (restated)" in large.text
    assert "## Goal" in small.text  # the goal itself is an essential, at every budget
    # No memory matched: a `recall` hint would point at nothing more.
    assert "agentstate recall" not in large.text
    from agentstate.memory.write import remember

    for n in range(store.settings.context.evidence_memories + 1):
        remember(store, f"the parser needs care with tables, note {n}", kind="fact",
                 principal=resolve_principal(store))
    assert "agentstate recall" in build_context(store, query="parser", budget=4000,
                                                 save=False,
                                                 principal=resolve_principal(store)).text


def test_the_best_hit_is_kept_when_it_is_also_one_of_the_newest_events(store):
    # The strongest hit is the run's newest event, which the trajectory shows whole. The hit
    # gives way to that copy, and the copy's class (trajectory) is decided after evidence:
    # when the weaker hits fill the budget first, both were dropped and the pack held every
    # hit but the one that answers. Now such a hit is decided at its own rank (assemble.py,
    # `_allocate`) where its copy would be lost.
    run, _ = start_run(store, "a conversation")
    for n in range(80):
        append_event(store, run.ref, "note",
                     f"Mel: we talked about the garden again, week {n}, and the rain.")
    answer = append_event(store, run.ref, "note",
                          "Caroline: the garden club elected Rosa as its new treasurer.")
    for budget in (700, 1200, 2500):
        pack = build_context(store, query="who is the garden club treasurer", budget=budget,
                             save=False, principal=resolve_principal(store))
        shown = {e.ref for e in pack.manifest if e.decision in ("included", "compressed")}
        assert answer.ref in shown, budget
        assert "Rosa" in pack.text, budget
        # ... shown once: in its timeline where the budget reaches it, else as evidence,
        # the other copy its duplicate.
        rows = {e.cls: (e.decision, e.reason) for e in pack.manifest if e.ref == answer.ref}
        shown = [cls for cls, (decision, _) in rows.items()
                 if decision in ("included", "compressed")]
        assert len(shown) == 1, (budget, rows)
        other = "trajectory" if shown == ["evidence"] else "evidence"
        assert rows[other] == ("dropped", f"duplicate of {answer.ref}"), (budget, rows)


def test_a_newest_event_shown_in_the_timeline_is_not_shown_twice(store):
    # Where the budget reaches the timeline, the hit still gives way to its whole copy there
    # (the run's newest events stay whole in their place): the second allocation is only
    # for hits that would otherwise be lost.
    run, _ = start_run(store, "a conversation")
    for n in range(5):
        append_event(store, run.ref, "note", f"Mel: the garden again, week {n}.")
    answer = append_event(store, run.ref, "note",
                          "Caroline: the garden club elected Rosa as its new treasurer.")
    pack = build_context(store, query="who is the garden club treasurer", budget=4000,
                         save=False, principal=resolve_principal(store))
    rows = {e.cls: e.decision for e in pack.manifest if e.ref == answer.ref}
    assert rows == {"evidence": "dropped", "trajectory": "included"}
