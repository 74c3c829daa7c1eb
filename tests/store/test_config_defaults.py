"""Settings: the default policy written by `init` is the one the code applies, and a bad
config.toml is one line naming the file and the key, caught when the file is read."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import pytest

from agentstate.config import (
    PrincipalSpec,
    Settings,
    ToolDefinition,
    load_settings,
    parse_settings,
)
from agentstate.config_template import TEMPLATE
from agentstate.errors import InvalidInput
from agentstate.store.principals import resolve_principal
from tests.conftest import configure, run_agentstate


def _commented_keys(section: str) -> dict:
    """`# key = value   # why` lines of a section: defaults shown but not set."""
    lines = TEMPLATE.split(f"[{section}]", 1)[1].split("\n[", 1)[0].splitlines()
    shown = {}
    for line in lines:
        match = re.match(r"^# ([a-z_]+ = [^#]+?)\s*(?:#.*)?$", line)
        if match:
            shown.update(tomllib.loads(match.group(1)))
    return shown


def _as_toml(value):
    """Settings in the shape config.toml spells them (tuples as lists, no unset keys)."""
    if isinstance(value, Settings):
        return {f.name: _as_toml(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if dataclasses.is_dataclass(value):
        out = {f.name: _as_toml(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if "declared" in out:  # [principals]: `default` beside one table per principal
            out.update(out.pop("declared"))
        return {k: v for k, v in out.items() if v is not None}
    if isinstance(value, tuple):
        return [_as_toml(v) for v in value]
    if hasattr(value, "items"):
        return {k: _as_toml(v) for k, v in value.items()}
    return value


def test_template_shows_every_setting_with_its_default():
    written = tomllib.loads(TEMPLATE)
    shown = {name: {**_commented_keys(name), **table} for name, table in written.items()}
    assert shown == _as_toml(Settings())  # every key of every section, at its default
    assert parse_settings(written) == Settings()


def test_a_missing_file_is_the_defaults_and_settings_are_frozen(tmp_path):
    settings = load_settings(tmp_path / "config.toml")
    assert settings == Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.memory.max_chars = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        settings.principals.declared["intruder"] = PrincipalSpec()  # type: ignore[index]


def test_values_are_typed_at_load():
    settings = parse_settings({
        "tokens": {"calibration": 2},
        "memory": {"min_relevance": 0},
        "context": {"classes": ["evidence", "pinned"], "default_budget": 500},
        "tools": {"allow": ["git"], "timeout": 0,
                  "definitions": [{"name": " mcp-search ", "description": "find\n  things"}]},
    })
    assert settings.tokens.calibration == 2.0 and isinstance(settings.tokens.calibration, float)
    assert settings.memory.min_relevance == 0.0 and settings.memory.max_chars == 4000
    assert settings.context.classes == ("evidence", "pinned")
    assert settings.context.default_budget == 500 and settings.context.task_items == 25
    assert settings.tools.allow == ("git",) and settings.tools.deny == Settings().tools.deny
    assert settings.tools.timeout == 0.0
    assert settings.tools.definitions == (ToolDefinition("mcp-search", "find things"),)


@pytest.mark.parametrize(
    "toml, message",
    [
        ('[memory]\nmin_relevance = "0.3"',
         "[memory] min_relevance must be a number between 0 and 1, got '0.3'"),
        ("[memory]\nmin_relevance = 1.5",
         "[memory] min_relevance must be a number between 0 and 1, got 1.5"),
        ("[memory]\nmax_chars = 0", "[memory] max_chars must be a whole number >= 1, got 0"),
        ("[memory]\nmax_chars = true",
         "[memory] max_chars must be a whole number >= 1, got True"),
        ("[resume]\nrecent_events = 2.5",
         "[resume] recent_events must be a whole number >= 0, got 2.5"),
        ('[tokens]\nencoding = ""', "[tokens] encoding must be a non-empty string, got ''"),
        ("[tokens]\ncalibration = nan",
         "[tokens] calibration must be a number between 0.1 and 10, got nan"),
        ("[context]\ndefault_budget = 0",
         "[context] default_budget must be a whole number from 1 to 1000000000, got 0"),
        ("[context]\ntask_items = -1", "[context] task_items must be a whole number >= 0"),
        ("[context]\nsystem_file = 3", "[context] system_file must be a string, got 3"),
        ('[context]\nclasses = ["pinned", "gossip"]',
         "[context] classes must be a list of some of pinned, task, catalog, evidence, "
         "trajectory, index (unknown class 'gossip')"),
        ('[tools]\nallow = "git"', "[tools] allow must be a list of strings, got 'git'"),
        ("[tools]\ntimeout = -1",
         "[tools] timeout must be a number of seconds (0 for no limit), got -1"),
        ("[tools]\ntimeout = inf",
         "[tools] timeout must be a number of seconds (0 for no limit), got inf"),
        ('[tools]\ndefinitions = [{description = "no name"}]',
         "[tools] definitions must be a list of tables"),
        ('[tools]\ndefinitions = [{name = "x", descripton = "typo"}]',
         "(unknown key 'descripton')"),
        ("memory = 3", "[memory] must be a table, got 3"),
        ("[memory]\nmax_char = 10",
         "[memory] max_char is not a setting agentstate knows (did you mean max_chars?)"),
        ("[resume]\nlimit = 10",
         "[resume] limit is not a setting agentstate knows (known keys: recent_events)"),
        ("[memroy]\nmax_chars = 10",
         "[memroy] is not a table agentstate knows; did you mean [memory]?"),
        ('[principals]\ndefault = "bob"',
         "[principals] default must name a declared principal (agent, owner), got 'bob'"),
        ('[principals]\nbob = ["repo"]', "[principals] bob must be a table [principals.bob]"),
        ('[principals.bot]\nread = "repo"',
         "[principals.bot] read must be a list of strings, got 'repo'"),
        ('[principals.agent]\nsource = ["model"]',
         "[principals.agent] source is not a setting agentstate knows (did you mean sources?)"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_file_and_the_key(tmp_path, monkeypatch, toml,
                                                           message):
    path = tmp_path / "store" / "config.toml"
    path.parent.mkdir()
    path.write_text(toml + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        load_settings(path)
    text = caught.value.message
    assert text.startswith(f"{path}: ") and message in text  # absolute from elsewhere
    assert "\n" not in text
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInput, match=r"^store/config\.toml: \["):  # as typed from here
        load_settings(path)


def test_unknown_tables_are_ignored_for_forward_compatibility():
    assert parse_settings({"telemetry": {"enabled": False}, "version": 2}) == Settings()


def test_principal_tables_are_laid_over_the_built_in_ones():
    settings = parse_settings({"principals": {
        "default": "bot",
        "agent": {"read": ["repo"]},
        "bot": {"read": ["*"]},
    }}).principals
    default_agent = Settings().principals.declared["agent"]
    assert settings.default == "bot"
    assert settings.declared["agent"] == dataclasses.replace(default_agent, read=("repo",))
    assert settings.declared["bot"] == PrincipalSpec(read=("*",), write=(), sources=None)
    assert settings.declared["owner"] == Settings().principals.declared["owner"]


def test_the_example_value_fails_every_command_the_same_way(initialised):
    # `min_relevance = "0.3"` used to be refused by recall and accepted by context.
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("min_relevance = 0.2",
                                                 'min_relevance = "0.3"'))
    expected = (".agentstate/config.toml: [memory] min_relevance must be a number between 0 "
                "and 1, got '0.3'")
    for args in (("recall", "parser"), ("context", "--query", "parser"), ("events",)):
        proc = run_agentstate(*args, cwd=initialised)
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert proc.stderr.strip() == f"error: {expected}", args
    doctor = run_agentstate("doctor", "--json", cwd=initialised)
    assert doctor.returncode == 1 and expected in doctor.stdout


def test_init_with_a_committed_bad_config_makes_nothing(cli, repo):
    # A CI checkout: config.toml is committed, the rest of the store is not.
    root = repo / ".agentstate"
    root.mkdir()
    (root / "config.toml").write_text("[tools]\ntimout = 30\n")
    result = cli("init")
    assert result.exit_code == 1
    assert "[tools] timout is not a setting agentstate knows (did you mean timeout?)" in \
        result.stderr
    assert sorted(p.name for p in root.iterdir()) == ["config.toml"]
    (root / "config.toml").write_text("[tools]\ntimeout = 30\n")
    cli.ok("init")
    assert (root / "state.db").exists()


def test_each_call_site_follows_its_setting(store):
    from agentstate.context.assemble import build_context
    from agentstate.memory.recall import recall
    from agentstate.memory.write import remember
    from agentstate.tools.runner import run_tool

    configure(store, "memory", max_chars=12)
    with pytest.raises(InvalidInput, match="the limit is 12"):
        remember(store, "thirteen char", kind="fact", principal=resolve_principal(store))
    configure(store, "memory", max_chars=4000)

    remember(store, "the parser cache survives a reload of the parser", kind="fact",
             principal=resolve_principal(store))
    remember(store, "the parser is written in rust", kind="fact",
             principal=resolve_principal(store))
    configure(store, "memory", min_relevance=0.0)
    assert len(recall(store, "parser cache reload", principal=resolve_principal(store)).hits) == 2
    configure(store, "memory", min_relevance=1.0)
    strict = recall(store, "parser cache reload", principal=resolve_principal(store))
    assert len(strict.hits) == 1 and strict.withheld == {"low_relevance": 1}

    configure(store, "context", default_budget=321)
    assert build_context(store, query="parser", save=False,
                         principal=resolve_principal(store)).budget == 321
    calibrated = build_context(store, query="parser", budget=4000, save=False,
                               principal=resolve_principal(store))
    configure(store, "tokens", calibration=2.0)
    assert build_context(store, query="parser", budget=4000, save=False,
                         principal=resolve_principal(store)).tokens > \
        calibrated.tokens * 1.9

    configure(store, "tools", timeout=0.3)
    result = run_tool(store, ["python3", "-c", "import time; time.sleep(10)"])
    assert result.timed_out


def test_default_agent_principal_cannot_claim_user_authority(cli, initialised):
    refused = cli("remember", "the deploy branch is main", "--kind", "fact", "--as", "agent",
                  "--source", "user", "--json")
    assert refused.exit_code == 3
    assert "may not claim" in refused.json()["error"]["message"]
    stored = cli.json("remember", "the deploy branch is main", "--kind", "fact", "--as", "agent",
                      "--source", "model")
    assert stored
    owner = cli("remember", "the deploy branch is main", "--kind", "fact", "--json")
    assert owner.exit_code == 0
