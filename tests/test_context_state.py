"""The shared working-state derivation (agentstate.runs.state) that context and resume use."""

from __future__ import annotations

from agentstate.runs.log import append_event, start_run
from agentstate.runs.state import derive_state


def test_derive_state_open_pending_superseded(store):
    run, constraints = start_run(store, "fix the flaky test", ["no new dependencies"])
    ref = run.ref
    q1 = append_event(store, ref, "question", "why does it fail on CI only?")
    q2 = append_event(store, ref, "question", "which python version?")
    append_event(store, ref, "answer", "3.11", resolves=q2.ref)
    v1 = append_event(store, ref, "verify", "run the suite 10 times")
    v2 = append_event(store, ref, "verify", "check on macOS")
    append_event(store, ref, "failed", "still flaky", resolves=v2.ref)
    h1 = append_event(store, ref, "hypothesis", "a race in the fixture")
    h2 = append_event(store, ref, "hypothesis", "timezone")
    append_event(store, ref, "diagnosis", "the fixture races", resolves=h1.ref)
    old = append_event(store, ref, "constraint", "keep py3.10 support")
    append_event(store, ref, "constraint", "keep py3.11 support", supersedes=old.ref)

    state = derive_state(store, ref)
    assert state.goal == "fix the flaky test"
    assert [i.ref for i in state.open_questions] == [q1.ref]
    assert [i.ref for i in state.pending_verifications] == [v1.ref]
    assert [i.ref for i in state.failed_verifications] == [v2.ref]
    assert [i.ref for i in state.hypotheses] == [h2.ref]
    assert [i.text for i in state.diagnoses] == ["the fixture races"]
    texts = [i.text for i in state.constraints]
    assert texts == ["no new dependencies", "keep py3.11 support"]
    assert constraints[0].ref == state.constraints[0].ref
    assert state.last_seq == 12  # 1 constraint at start + 11 logged
