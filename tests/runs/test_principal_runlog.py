"""A principal's `sources` rule holds on the run log as on memory: an agent cannot write as the
user, and what it writes without --source is recorded as the model's."""

from __future__ import annotations

import pytest

from agentstate.errors import Refused
from agentstate.runs.log import append_event, start_run
from agentstate.store.principals import default_source, resolve_principal


def test_agent_events_default_to_model_and_cannot_claim_user(cli, initialised):
    env = {"AGENTSTATE_PRINCIPAL": "agent"}
    started = cli.json("run", "start", "agent task", "-c", "keep the API", env=env)
    constraint = cli.json("events", "--kind", "constraint")
    assert [e["source"] for e in constraint] == ["model"]
    assert started["run"]["ref"]
    note = cli.json("log", "note", "found the flaky test", env=env)
    assert note["source"] == "model"
    refused = cli("log", "note", "I am the user", "--source", "user", "--json", env=env)
    assert refused.exit_code == 3 and "may not claim" in refused.json()["error"]["message"]
    assert all(e["text"] != "I am the user" for e in cli.json("events"))
    tool = cli.json("log", "observation", "pytest: 3 failed", "--source", "tool:pytest", env=env)
    assert tool["source"] == "tool:pytest"
    checkpoint = cli.json("checkpoint", "--note", "half way", env=env)
    assert checkpoint
    owner = cli.json("log", "note", "owner speaking")
    assert owner["source"] == "user"


def test_domain_check_applies_only_when_a_principal_is_named(store):
    agent = resolve_principal(store, "agent")
    owner = resolve_principal(store, "owner")
    assert default_source(agent) == "model" and default_source(owner) == "user"
    run, _ = start_run(store, "goal")
    with pytest.raises(Refused):
        append_event(store, run.ref, "note", "x", source="user", claimed_by=agent)
    with pytest.raises(Refused):
        start_run(store, "goal 2", ["rule"], source="user", claimed_by=agent)
    event = append_event(store, run.ref, "note", "y", source="user", claimed_by=owner)
    assert event.source == "user"
