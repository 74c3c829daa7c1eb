"""The default policy written by `init` is the one the code applies."""

from __future__ import annotations

import re
import tomllib

from agentstate.config import DEFAULTS, TEMPLATE


def _commented_keys(section: str) -> dict:
    """`# key = value   # why` lines of a section: defaults shown but not set."""
    lines = TEMPLATE.split(f"[{section}]", 1)[1].split("\n[", 1)[0].splitlines()
    shown = {}
    for line in lines:
        match = re.match(r"^# ([a-z_]+ = [^#]+?)\s*(?:#.*)?$", line)
        if match:
            shown.update(tomllib.loads(match.group(1)))
    return shown


def test_template_and_defaults_agree():
    written = tomllib.loads(TEMPLATE)
    assert set(written) == set(DEFAULTS)
    for section, values in DEFAULTS.items():
        expected = dict(values) if isinstance(values, dict) else values
        if isinstance(expected, dict):
            shown = {**_commented_keys(section), **written[section]}
            assert shown == expected, section
        else:
            assert written[section] == expected


def test_default_agent_principal_cannot_claim_user_authority(cli, initialised):
    refused = cli("remember", "the deploy branch is main", "--kind", "fact", "--as", "agent",
                  "--json")
    assert refused.exit_code == 3
    assert "may not claim" in refused.json()["error"]["message"]
    stored = cli.json("remember", "the deploy branch is main", "--kind", "fact", "--as", "agent",
                      "--source", "model")
    assert stored
    owner = cli("remember", "the deploy branch is main", "--kind", "fact", "--json")
    assert owner.exit_code == 0
