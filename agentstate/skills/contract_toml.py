"""skill.toml: what the Agent Skills format leaves out (triggers, inputs, outputs,
preconditions, steps, resources, required tools, failure handling, acceptance, provenance),
read into a Contract with every problem at its line."""

from __future__ import annotations

import re
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any

from agentstate.skills.folder_layout import SKILL_TOML
from agentstate.skills.problems import ProblemCollector

CONTRACT_VERSION = 1
CONTRACT_KEYS = (
    "contract", "triggers", "inputs", "outputs", "preconditions", "steps", "resources",
    "required_tools", "failure", "acceptance", "provenance",
)
# Placeholders every command may use, filled in by the tool layer's caller.
BUILTIN_PARAMS = {
    "skill": "the skill's folder (absolute path)",
    "repo": "the repository's work tree (absolute path)",
    "tmp_dir": "a fresh temporary directory",
}
PARAM_RE = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
IDENT_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass
class Command:
    argv: list[str]
    line: int | None = None
    cwd: str = "repo"  # repo | skill
    expect_exit: int = 0
    timeout: float | None = None

    @property
    def text(self) -> str:
        return shlex.join(self.argv)


@dataclass
class Step:
    do: str
    run: Command | None = None
    line: int | None = None


@dataclass
class Param:
    name: str
    description: str = ""
    default: str | None = None
    required: bool = False


@dataclass
class Contract:
    triggers: list[str] = field(default_factory=list)
    inputs: list[Param] = field(default_factory=list)
    outputs: list[Param] = field(default_factory=list)
    preconditions: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    required_tools: list[str] = field(default_factory=list)
    failure: list[dict[str, str]] = field(default_factory=list)
    acceptance: list[Command] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)


def command_params(argv: list[str]) -> set[str]:
    return {m.group(1) for arg in argv for m in PARAM_RE.finditer(arg)}


def toml_line(text: str, key: str, occurrence: int = 0, table: bool = False) -> int | None:
    """Best-effort line of a key (or the n-th `[[key]]` header) in TOML text."""
    if table:
        pattern = re.compile(rf"^\s*\[\[\s*{re.escape(key)}\s*\]\]", re.M)
    else:
        pattern = re.compile(rf"^\s*(?:\[\s*{re.escape(key)}\s*\]|{re.escape(key)}\s*=)", re.M)
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    match = matches[occurrence] if occurrence < len(matches) else matches[0]
    return text.count("\n", 0, match.start()) + 1


def _command(value: Any, line: int | None, where: str, out: ProblemCollector) -> list[str] | None:
    if isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError as exc:
            out.error(SKILL_TOML, line, "command-syntax",
                      f"{where}: cannot split {value!r} ({exc})")
            return None
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        argv = list(value)
    else:
        out.error(SKILL_TOML, line, "command-type",
                  f"{where}: `run` must be a command line string or a list of strings")
        return None
    if not argv:
        out.error(SKILL_TOML, line, "command-empty", f"{where}: `run` is empty")
        return None
    return argv


def _str_list(data: dict[str, Any], key: str, text: str, out: ProblemCollector) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        out.error(SKILL_TOML, toml_line(text, key), "contract-type",
                  f"`{key}` must be a list of non-empty strings")
        return []
    return [v.strip() for v in value]


def _params(data: dict[str, Any], key: str, text: str, out: ProblemCollector) -> list[Param]:
    value = data.get(key, [])
    if not isinstance(value, list):
        out.error(SKILL_TOML, toml_line(text, key), "contract-type",
                  f"`{key}` must be an array of tables ([[{key}]])")
        return []
    params = []
    for index, item in enumerate(value):
        line = toml_line(text, key, index, table=True)
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            out.error(SKILL_TOML, line, "contract-type", f"each [[{key}]] needs a `name` string")
            continue
        name = item["name"]
        if not IDENT_RE.match(name):
            out.error(SKILL_TOML, line, "param-name",
                      f"[[{key}]] name {name!r}: use lowercase letters, digits and '_'")
        if name in BUILTIN_PARAMS and key == "inputs":
            out.error(SKILL_TOML, line, "param-name",
                      f"[[inputs]] name {name!r} is reserved ({BUILTIN_PARAMS[name]})")
        unknown = set(item) - {"name", "description", "default", "required"}
        if unknown:
            out.error(SKILL_TOML, line, "contract-key",
                      f"[[{key}]] {name!r}: unknown key(s) {', '.join(sorted(unknown))}")
        if not str(item.get("description", "")).strip():
            out.error(SKILL_TOML, line, "param-description",
                      f"[[{key}]] {name!r} needs a `description`")
        default = item.get("default")
        if default is not None and not isinstance(default, str | int | float | bool):
            out.error(SKILL_TOML, line, "contract-type",
                      f"[[{key}]] {name!r}: `default` must be a string or number")
        params.append(Param(name=name, description=str(item.get("description", "")),
                            default=None if default is None else str(default),
                            required=bool(item.get("required", False))))
    return params


def parse_contract(text: str, out: ProblemCollector) -> Contract | None:
    """Parse skill.toml into a Contract; structural problems go to `out`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        out.error(SKILL_TOML, int(match.group(1)) if match else None, "toml-invalid",
                  f"skill.toml is not valid TOML: {exc}")
        return None
    for key in data:
        if key not in CONTRACT_KEYS:
            out.error(SKILL_TOML, toml_line(text, key), "contract-key",
                      f"unknown skill.toml key {key!r}; allowed: {', '.join(CONTRACT_KEYS)}")
    version = data.get("contract", CONTRACT_VERSION)
    if version != CONTRACT_VERSION:
        out.error(SKILL_TOML, toml_line(text, "contract"), "contract-version",
                  f"`contract = {version!r}` is not supported; this agentstate reads "
                  f"contract = {CONTRACT_VERSION}")
    contract = Contract(
        triggers=_str_list(data, "triggers", text, out),
        preconditions=_str_list(data, "preconditions", text, out),
        resources=_str_list(data, "resources", text, out),
        required_tools=_str_list(data, "required_tools", text, out),
        inputs=_params(data, "inputs", text, out),
        outputs=_params(data, "outputs", text, out),
    )
    contract.steps = _steps(_tables(data, "steps", text, out, "`steps` must be an array of "
                                    "tables ([[steps]])"), text, out)
    contract.failure = _failures(_tables(
        data, "failure", text, out,
        "`failure` must be an array of tables ([[failure]] with `when` and `do`)"), text, out)
    contract.acceptance = _acceptance(_tables(
        data, "acceptance", text, out,
        "`acceptance` must be an array of tables ([[acceptance]] with `run`)"), text, out)
    provenance = data.get("provenance", {})
    if not isinstance(provenance, dict):
        out.error(SKILL_TOML, toml_line(text, "provenance"), "contract-type",
                  "`provenance` must be a table")
        provenance = {}
    contract.provenance = provenance
    for command in [s.run for s in contract.steps if s.run] + contract.acceptance:
        if command.cwd not in ("repo", "skill"):
            out.error(SKILL_TOML, command.line, "command-cwd",
                      f"`cwd` must be \"repo\" or \"skill\", not {command.cwd!r}")
    return contract


def _tables(data: dict[str, Any], key: str, text: str, out: ProblemCollector,
            message: str) -> list[Any]:
    """An array of tables of skill.toml (empty when absent); anything else is reported."""
    items = data.get(key, [])
    if not isinstance(items, list):
        out.error(SKILL_TOML, toml_line(text, key), "contract-type", message)
        return []
    return items


def _steps(items: list[Any], text: str, out: ProblemCollector) -> list[Step]:
    steps = []
    for index, item in enumerate(items):
        line = toml_line(text, "steps", index, table=True)
        if not isinstance(item, dict) or not str(item.get("do", "")).strip():
            out.error(SKILL_TOML, line, "step-do", "each [[steps]] needs a `do` description")
            continue
        unknown = set(item) - {"do", "run", "cwd"}
        if unknown:
            out.error(SKILL_TOML, line, "contract-key",
                      f"[[steps]]: unknown key(s) {', '.join(sorted(unknown))}")
        run = None
        if "run" in item:
            argv = _command(item["run"], line, f"step {index + 1}", out)
            if argv:
                run = Command(argv=argv, line=line, cwd=str(item.get("cwd", "repo")))
        steps.append(Step(do=str(item["do"]).strip(), run=run, line=line))
    return steps


def _failures(items: list[Any], text: str, out: ProblemCollector) -> list[dict[str, str]]:
    failures = []
    for index, item in enumerate(items):
        line = toml_line(text, "failure", index, table=True)
        if (not isinstance(item, dict) or not str(item.get("when", "")).strip()
                or not str(item.get("do", "")).strip()):
            out.error(SKILL_TOML, line, "failure-type",
                      "each [[failure]] needs `when` (the symptom) and `do` (the response)")
            continue
        failures.append({"when": str(item["when"]), "do": str(item["do"])})
    return failures


def _acceptance(items: list[Any], text: str, out: ProblemCollector) -> list[Command]:
    commands = []
    for index, item in enumerate(items):
        line = toml_line(text, "acceptance", index, table=True)
        if not isinstance(item, dict) or "run" not in item:
            out.error(SKILL_TOML, line, "acceptance-run", "each [[acceptance]] needs `run`")
            continue
        unknown = set(item) - {"run", "cwd", "expect_exit", "timeout"}
        if unknown:
            out.error(SKILL_TOML, line, "contract-key",
                      f"[[acceptance]]: unknown key(s) {', '.join(sorted(unknown))}")
        argv = _command(item["run"], line, f"acceptance {index + 1}", out)
        expect = item.get("expect_exit", 0)
        timeout = item.get("timeout")
        if not isinstance(expect, int) or isinstance(expect, bool):
            out.error(SKILL_TOML, line, "contract-type", "`expect_exit` must be an integer")
            expect = 0
        if timeout is not None and (not isinstance(timeout, int | float) or timeout <= 0):
            out.error(SKILL_TOML, line, "contract-type", "`timeout` must be a positive number")
            timeout = None
        if argv:
            commands.append(Command(argv=argv, line=line, cwd=str(item.get("cwd", "repo")),
                                    expect_exit=expect, timeout=timeout))
    return commands
