"""A skill whose required tool cannot run here is unavailable: listed with why, never matched,
offered in context or resume packs, or loaded; doctor names it. Through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import author_scaffold

DECLARED = 'definitions = [{name = "legacylint", description = "the old lint wrapper"}]'


def _config(repo: Path) -> Path:
    return repo / ".agentstate" / "config.toml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def _publish(cli, repo: Path, name: str, description: str, trigger: str,
             tools: list[str]) -> None:
    cli.ok("skill", "new", name, "--description", description)
    folder = author_scaffold(repo / ".agentstate" / "skills" / name)
    toml = folder / "skill.toml"
    text = toml.read_text(encoding="utf-8")
    start = text.index("triggers = [")
    text = text[:start] + f'triggers = ["{trigger}"]' + text[text.index("\n", start):]
    quoted = ", ".join(f'"{t}"' for t in tools)
    text = text.replace('required_tools = ["python3"]', f"required_tools = [{quoted}]")
    toml.write_text(text, encoding="utf-8")
    assert cli.json("skill", "publish", name)["ref"] == f"skill:{name}@v1"


def _setup(cli, repo: Path) -> None:
    cli.ok("init")
    _edit(_config(repo), "definitions = []", DECLARED)
    _publish(cli, repo, "lint-legacy", "Lint the changed files with the legacylint wrapper.",
             "lint the changed files", ["python3", "legacylint"])
    _publish(cli, repo, "lint-ruff", "Lint Python code with ruff and fix what it reports.",
             "lint the changed python files", ["python3"])
    # Both work while the tool is declared.
    assert "lint-legacy" in [m["name"] for m in cli.json("skill", "match",
                                                           "lint the changed files")]
    _edit(_config(repo), DECLARED, "definitions = []")  # the wrapper's definition is gone


def test_tool_no_longer_defined_makes_the_skill_unavailable(cli, repo):
    _setup(cli, repo)
    listed = {e["name"]: e for e in cli.json("skill", "list")}
    why = listed["lint-legacy"]["unavailable"]
    assert "'legacylint'" in why and "[tools] definitions" in why
    assert listed["lint-ruff"]["unavailable"] is None
    human = cli.ok("skill", "list").stdout
    assert "[unavailable] required tool 'legacylint'" in human

    matched = [m["name"] for m in cli.json("skill", "match", "lint the changed files")]
    assert "lint-legacy" not in matched and matched[0] == "lint-ruff"

    refused = cli("skill", "load", "lint-legacy")
    assert refused.exit_code == 3
    assert "skill:lint-legacy@v1 is unavailable here" in refused.stderr
    assert "'legacylint'" in refused.stderr and "Traceback" not in refused.stderr
    assert cli("skill", "load", "lint-legacy@v1").exit_code == 3
    assert cli("skill", "load", "lint-ruff").exit_code == 0

    doctor = cli("doctor", "--json").json()["data"]
    check = {c["name"]: c for c in doctor["checks"]}["skill-tools"]
    assert check["status"] == "warn"
    assert [u["skill"] for u in check["data"]["unavailable"]] == ["skill:lint-legacy@v1"]


def test_unavailable_skill_is_not_offered_in_context_or_resume(cli, repo):
    _setup(cli, repo)
    cli.ok("run", "start", "lint the changed files before the review")
    pack = cli.ok("context", "--query", "lint the changed files").stdout
    assert "skill:lint-ruff@v1" in pack and "lint-legacy" not in pack
    resumed = cli.ok("resume").stdout
    assert "skill:lint-ruff@v1" in resumed and "lint-legacy" not in resumed
    start = json.loads(cli.ok("hook", "claude-code", input=json.dumps({
        "hook_event_name": "SessionStart", "source": "startup", "session_id": "s1",
        "cwd": str(repo)})).stdout)
    offered = start["hookSpecificOutput"]["additionalContext"]
    assert "skill:lint-ruff@v1" in offered and "lint-legacy" not in offered


def test_tool_not_allowed_any_more(cli, repo):
    _setup(cli, repo)
    # python3 taken out of the allow list: both skills need it.
    _edit(_config(repo), '"python", "python3", ', '"python", ')
    listed = {e["name"]: e["unavailable"] for e in cli.json("skill", "list")}
    assert "'python3' is not allowed" in listed["lint-ruff"]
    assert cli.json("skill", "match", "lint the changed python files") == []
    refused = cli("skill", "load", "lint-ruff")
    assert refused.exit_code == 3 and "'python3' is not allowed" in refused.stderr
