"""The essentials read only what their ceiling can show (issue 24): preferences ranked in SQL
(memory/preferences.py), tokenized and loaded no further than one could still fit, with a
count for the pointer line. The old path — every preference loaded, ranked in Python, all of
them handed to the ceiling — is the oracle: both must give the same essentials."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.context import essentials
from agentstate.context.essentials import gather, preference_ref, scope_of
from agentstate.maintenance.init import init_store
from agentstate.memory.forget import forget
from agentstate.memory.model import list_user_preferences
from agentstate.memory.preferences import ranked_user_preferences
from agentstate.memory.scopes import scope_applies
from agentstate.memory.write import remember
from agentstate.runs.log import start_run
from agentstate.runs.worktree import snapshot
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import open_store
from agentstate.store.principals import resolve_principal
from agentstate.tokens import counter_for

# Scopes of every kind: the run's own and another run's, branches that match and that do
# not, paths that match the run's dirty file and one that does not, repo- and user-wide.
SCOPES = ["repo", "user", "branch:main", "branch:feature", "branch:other", "path:src/*",
          "path:docs/guide.md", "RUN", "OTHER"]
READER = '\n[principals.reader]\nread = ["repo", "branch:*", "path:src/*"]\nwrite = []\n'


def _text(i: int) -> str:
    """Long, middling and (every 7th) very short preferences: a short one deep in the
    ranking still gets into the room a long one left."""
    if i % 7 == 0:
        return f"tabs {i}"
    if i % 5 == 0:  # a word a token: the word bound is nearly the count
        return f"number {i} " + " ".join(["keep the code in the same style as the rest"] * (i % 9))
    words = " ".join(f"word{i}x{j}" for j in range(3 + (i * 5) % 40))
    return f"preference {i}: always {words}"


def _fill(store, run_id: str, other_id: str) -> None:
    owner = resolve_principal(store)
    for i in range(160):
        scope = SCOPES[i % len(SCOPES)].replace("RUN", f"run:{run_id}").replace(
            "OTHER", f"run:{other_id}")
        # Every 11th is a key written again below (its first version superseded), every
        # 13th expires tomorrow.
        key = f"pref-{i}" if i % 11 == 0 else None
        until = "2026-01-16T00:00:00Z" if i % 13 == 0 else None
        remember(store, _text(i), kind="preference", scope=scope, key=key, source="user",
                 evidence=["user"], until=until, principal=owner)
        if key:
            remember(store, _text(i) + " (restated)", kind="preference", scope=scope, key=key,
                     source="user", evidence=["user"], principal=owner)
        store.clock.advance(timedelta(seconds=i % 3 // 2))  # most share a timestamp with one
    # Candidates: preferences the user did not state; a forgotten one; a non-preference.
    for i in range(5):
        remember(store, f"the model thinks {i} tabs are best", kind="preference",
                 source="model", principal=owner)
    gone = remember(store, "forget me: prefer spaces", kind="preference", source="user",
                    evidence=["user"], principal=owner)
    forget(store, gone.ref, principal=owner)
    remember(store, "the build uses make", kind="fact", source="user", evidence=["user"],
             principal=owner)
    store.clock.advance(timedelta(days=2))  # past the expiry of every 13th


@pytest.fixture
def filled(repo):
    init_store(target=repo)
    config = repo / ".agentstate" / "config.toml"
    config.write_text(config.read_text() + READER)
    (repo / "src").mkdir()
    (repo / "src" / "a.py").write_text("x = 1\n")  # the run's dirty file: path:src/* applies
    store = open_store(start=repo, clock=Clock(datetime(2026, 1, 15, 9, 0, tzinfo=UTC)),
                       ids=IdSource(seed=11))
    other, _ = start_run(store, "an earlier task")
    run, _ = start_run(store, "ship the parser", ["keep the public API stable"],
                       worktree=snapshot(repo))
    assert scope_of(run) == {"run": run.ref, "branch": "main", "paths": ["src/a.py"]}
    _fill(store, run.id, other.id)
    yield store, run
    store.close()


def _old_ranking(store, principal, scope):
    """Every preference loaded, then the most specific scope first, then the newest."""
    prefs = list_user_preferences(store, principal, scope)
    return sorted(reversed(prefs), key=lambda p: -(scope_applies(str(p.scope), scope) or 0.0))


def _old_gather(store, run, principal, monkeypatch):
    """The essentials as they were built before: every ranked preference handed to `cap`."""
    def everything(ranked, room, count):
        prefs = _old_ranking(store, principal, scope_of(run))
        return prefs, [essentials._preference_item(preference_ref(p), str(p.scope), p.text)
                       for p in prefs]

    with monkeypatch.context() as patch:
        patch.setattr(essentials, "fitting_preferences", everything)
        return gather(store, run, principal=principal)


def _shape(ess):
    return {"text": ess.text(), "wide": ess.text(full=[i.ref for i in ess.items]),
            "items": [(i.ref, i.floor, i.optional) for i in ess.items],
            "left_out": ess.left_out,
            "preferences": [preference_ref(p) for p in ess.preferences]}


@pytest.mark.parametrize("who", ["owner", "reader"])
@pytest.mark.parametrize("with_run", [True, False])
def test_sql_ranking_and_reading_what_fits_give_the_old_essentials(filled, who, with_run,
                                                                    monkeypatch):
    store, run = filled
    principal = resolve_principal(store, who)
    the_run = run if with_run else None
    scope = scope_of(the_run)
    old = _old_ranking(store, principal, scope)
    ranked = ranked_user_preferences(store, principal, scope)
    # The same preferences in the same order, and the count the pointer line gives.
    assert [line.ref for line in ranked.lines()] == [preference_ref(p) for p in old]
    assert ranked.total == len(old)
    assert len({p.scope for p in old}) >= (5 if who == "owner" else 3)
    new, before = gather(store, the_run, principal=principal), _old_gather(
        store, the_run, principal, monkeypatch)
    assert _shape(new) == _shape(before)
    assert new.left_out["preferences"] == len(old) - len(new.preferences) > 40
    # The records handed on are the full ones (evidence loaded), the ones shown.
    assert [p.evidence for p in new.preferences] == [p.evidence for p in before.preferences]
    # A long one was passed over and a later, shorter one still got in: the case that needs
    # reading past the first line that does not fit.
    ranks = [preference_ref(p) for p in old]
    shown = [ranks.index(preference_ref(p)) for p in new.preferences]
    assert shown != list(range(len(shown))), shown


def test_a_principal_sees_only_what_it_may_read_and_what_is_live(filled):
    store, run = filled
    reader = resolve_principal(store, "reader")
    lines = list(ranked_user_preferences(store, reader, scope_of(run)).lines())
    assert {line.scope for line in lines} == {"repo", "branch:main", "path:src/*"}
    owner = list(ranked_user_preferences(store, resolve_principal(store), None).lines())
    texts = [line.text for line in owner]
    assert not any("model thinks" in t or "forget me" in t for t in texts)  # candidate, gone
    assert not any(t == _text(13) for t in texts)  # expired
    assert _text(11) not in texts and _text(11) + " (restated)" in texts  # superseded


def test_reading_stops_at_what_the_ceiling_can_show(filled, monkeypatch):
    """Lines are read lazily: past the room's last chance, no further row is read."""
    store, run = filled
    ranked = ranked_user_preferences(store, resolve_principal(store), None)
    read = []
    lines = ranked.lines

    def counted():
        for line in lines():
            read.append(line)
            yield line
    monkeypatch.setattr(ranked, "lines", counted)
    count = counter_for(store.settings.tokens).count
    # A room only one long line fits in: reading stops once it is taken.
    prefs, items = essentials.fitting_preferences(ranked, 40, count)
    assert len(prefs) == len(items) == 1
    assert len(read) < ranked.total // 4


TEXTS = st.text(alphabet=st.sampled_from(list("ab é日 \t\n\r\x0b\x0c\x1c\x85\u2028\u3000.-:(")),
                max_size=40)


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, scope=st.sampled_from(["repo", "path:src/a b.py", "branch:x\x0cy"]))
def test_a_line_has_at_least_as_many_tokens_as_words(text, scope):
    """The bound fitting_preferences skips lines by without counting them."""
    from agentstate.config import TokenSettings

    item = essentials._preference_item("mem:abc123@v2", scope, text)
    count = counter_for(TokenSettings()).count
    assert count(text) >= essentials._words(text)
    assert count(item.floor) >= essentials._words(item.floor)
    assert essentials._words(item.floor) + 1 >= essentials._CHEAPEST_PREFERENCE


def test_what_fits_any_room_is_what_counting_every_line_takes(filled):
    """The word bound and the early stop skip lines without counting them; at every room
    size they take what counting every line in rank order takes."""
    store, run = filled
    count = counter_for(store.settings.tokens).count
    principal = resolve_principal(store)
    every = [(line.ref, count(essentials._preference_item(line.ref, line.scope, line.text)
                              .floor) + 1)
             for line in ranked_user_preferences(store, principal, scope_of(run)).lines()]
    for room in range(0, 320, 3):
        left, taken = room, []
        for ref, cost in every:
            if cost <= left:
                left -= cost
                taken.append(ref)
        ranked = ranked_user_preferences(store, principal, scope_of(run))
        prefs, items = essentials.fitting_preferences(ranked, room, count)
        assert [i.ref for i in items] == [preference_ref(p) for p in prefs] == taken, room
