"""A skill folder: `SKILL.md` (Agent Skills format) + `skill.toml` (our contract), and its
validation.

SKILL.md front matter follows the open Agent Skills specification so agents that read skills
natively can use the folder as is:
  name           required; 1-64 chars of a-z, 0-9 and '-'; no leading, trailing or double
                 hyphen; equal to the folder name
  description    required; 1-1024 chars
  license        optional string
  compatibility  optional; 1-500 chars
  metadata       optional map of string keys to string values
  allowed-tools  optional; space-separated string of tool names
and no other key. skill.toml carries what the spec leaves out: triggers, inputs, outputs,
preconditions, steps, resources, required tools, failure handling, acceptance, provenance.

Every problem names its file and line, like a compiler, so the validator works as a
pre-commit hook and in editors.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agentstate.config import SkillSettings, ToolSettings
from agentstate.skills.file_checks import check_files
from agentstate.skills.folder_layout import SKILL_MD, SKILL_TOML

T = TypeVar("T")

CONTRACT_VERSION = 1

NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
BODY_LINES_WARN = 500  # the spec recommends keeping SKILL.md under 500 lines
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
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
RESOURCE_DIRS = ("scripts", "references", "assets")
# Files a SKILL.md body points at: markdown link targets that are relative paths, and
# `{skill}/...` paths. (Bare words like `scripts/test` may name the *repository's* files.)
_BODY_REF = re.compile(
    r"\]\((?!https?:|mailto:|#|/)([^)\s#]+)(?:#[^)]*)?\)|\{skill\}/([A-Za-z0-9_./-]*[A-Za-z0-9_])"
)


@dataclass
class Problem:
    file: str
    line: int | None
    rule: str
    message: str
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message} [{self.rule}]"


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


@dataclass
class SkillDoc:
    """A parsed SKILL.md."""

    front: dict[str, Any]
    body: str
    body_line: int
    key_lines: dict[str, int]


@dataclass
class SkillFolder:
    path: Path
    name: str  # from the front matter (or the folder name when unreadable)
    doc: SkillDoc | None
    contract: Contract | None

    @property
    def description(self) -> str:
        return str(self.doc.front.get("description", "")) if self.doc else ""


@dataclass
class ValidationReport:
    path: str
    name: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


# ---------------------------------------------------------------- SKILL.md


class ProblemCollector:
    """Gathers the problems found while reading a skill folder (errors and warnings)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.problems: list[Problem] = []

    def error(self, file: str, line: int | None, rule: str, message: str) -> None:
        self.problems.append(Problem(f"{self.display}/{file}", line, rule, message))

    def warn(self, file: str, line: int | None, rule: str, message: str) -> None:
        self.problems.append(Problem(f"{self.display}/{file}", line, rule, message, "warning"))


def split_front_matter(text: str) -> tuple[str, str, int] | None:
    """(front matter text, body, body's first line number) or None when there is none."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), index + 2
    return "", "", -1  # opened, never closed


def parse_skill_md(text: str, out: ProblemCollector) -> SkillDoc | None:
    """Parse SKILL.md; problems go to `out`. Front matter lines are real file lines."""
    import yaml

    split = split_front_matter(text)
    if split is None:
        out.error(SKILL_MD, 1, "front-matter-missing",
                  "no front matter: SKILL.md must start with a '---' line, then YAML with "
                  "name and description, then '---'")
        return None
    front_text, body, body_line = split
    if body_line < 0:
        out.error(SKILL_MD, 1, "front-matter-unclosed",
                  "front matter is not closed: add a '---' line after the YAML")
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: faster
    try:
        node = yaml.compose(front_text, Loader=loader)
        data = yaml.load(front_text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        out.error(SKILL_MD, line, "yaml-invalid", f"front matter is not valid YAML: {problem}")
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode | type(None)):
        out.error(SKILL_MD, 2, "front-matter-type",
                  "front matter must be a YAML mapping of keys to values")
        return None
    key_lines: dict[str, int] = {}
    for key_node, _ in node.value if node is not None else []:
        key = str(key_node.value)
        line = key_node.start_mark.line + 2
        if key in key_lines:
            out.error(SKILL_MD, line, "duplicate-key",
                      f"key {key!r} appears twice (first on line {key_lines[key]})")
        key_lines.setdefault(key, line)
    return SkillDoc(front={str(k): v for k, v in data.items()}, body=body,
                    body_line=body_line, key_lines=key_lines)


def check_front_matter(doc: SkillDoc, folder_name: str, out: ProblemCollector) -> None:
    front, lines = doc.front, doc.key_lines
    for key in front:
        if key not in SPEC_KEYS:
            hint = " (put custom fields under `metadata`, or in skill.toml)"
            out.error(SKILL_MD, lines.get(key), "unknown-key",
                      f"unknown front matter key {key!r}; allowed: {', '.join(SPEC_KEYS)}{hint}")
    _check_name_key(front.get("name"), lines.get("name"), folder_name, out)
    _check_description(front.get("description"), lines.get("description"), out)
    if "license" in front and not (isinstance(front["license"], str) and front["license"].strip()):
        out.error(SKILL_MD, lines.get("license"), "license-type",
                  "`license` must be a non-empty string (a license name or a bundled file)")
    if "compatibility" in front:
        value = front["compatibility"]
        if not isinstance(value, str) or not value.strip():
            out.error(SKILL_MD, lines.get("compatibility"), "compatibility-type",
                      "`compatibility` must be a non-empty string")
        elif len(value) > COMPATIBILITY_MAX:
            out.error(SKILL_MD, lines.get("compatibility"), "compatibility-length",
                      f"`compatibility` is {len(value)} characters; at most {COMPATIBILITY_MAX}")
    if "metadata" in front:
        _check_metadata(front["metadata"], lines.get("metadata"), out)
    if "allowed-tools" in front and not isinstance(front["allowed-tools"], str):
        out.error(SKILL_MD, lines.get("allowed-tools"), "allowed-tools-type",
                  "`allowed-tools` must be a space-separated string of tool names")
    if not doc.body.strip():
        out.warn(SKILL_MD, doc.body_line, "body-empty",
                 "SKILL.md has no instructions after the front matter")
    elif doc.body.count("\n") > BODY_LINES_WARN:
        out.warn(SKILL_MD, doc.body_line, "body-long",
                 f"SKILL.md body is over {BODY_LINES_WARN} lines; move detail to references/")


def _check_name_key(name: Any, line: int | None, folder_name: str,
                    out: ProblemCollector) -> None:
    if name is None:
        out.error(SKILL_MD, 2, "name-missing", "front matter has no `name`")
    elif not isinstance(name, str):
        out.error(SKILL_MD, line, "name-type", "`name` must be a string")
    else:
        check_name(name, out, line)
        if name != folder_name:
            out.error(SKILL_MD, line, "name-mismatch",
                      f"`name` is {name!r} but the folder is {folder_name!r}; they must be equal")


def _check_description(description: Any, line: int | None, out: ProblemCollector) -> None:
    if description is None:
        out.error(SKILL_MD, 2, "description-missing", "front matter has no `description`")
    elif not isinstance(description, str):
        out.error(SKILL_MD, line, "description-type", "`description` must be a string")
    elif not description.strip():
        out.error(SKILL_MD, line, "description-empty", "`description` is empty")
    elif len(description) > DESCRIPTION_MAX:
        out.error(SKILL_MD, line, "description-length",
                  f"`description` is {len(description)} characters; at most {DESCRIPTION_MAX}")


def _check_metadata(value: Any, line: int | None, out: ProblemCollector) -> None:
    if not isinstance(value, dict):
        out.error(SKILL_MD, line, "metadata-type",
                  "`metadata` must be a mapping of string keys to string values")
        return
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            out.error(SKILL_MD, line, "metadata-type",
                      f"`metadata` entry {key!r}: keys and values must be strings "
                      f"(quote {item!r})")


def check_name(name: str, out: ProblemCollector | None = None,
               line: int | None = None) -> list[str]:
    """The spec's name rules; returns the messages (and reports them to `out`)."""
    messages = []
    if not name:
        messages.append(("name-length", "`name` is empty"))
    elif len(name) > NAME_MAX:
        messages.append(("name-length", f"`name` is {len(name)} characters; at most {NAME_MAX}"))
    if name and not re.fullmatch(r"[a-z0-9-]+", name):
        messages.append(("name-chars", f"`name` {name!r} may only contain lowercase letters, "
                                       "digits and hyphens"))
    elif name and (name.startswith("-") or name.endswith("-")):
        messages.append(("name-hyphen", f"`name` {name!r} must not start or end with a hyphen"))
    elif "--" in name:
        messages.append(("name-hyphen", f"`name` {name!r} must not contain '--'"))
    if out is not None:
        for rule, message in messages:
            out.error(SKILL_MD, line, rule, message)
    return [m for _, m in messages]


def allowed_tool_commands(value: str) -> list[str]:
    """Command prefixes pre-approved by `allowed-tools` (`Bash(git status:*)` → `git status`)."""
    found = []
    for match in re.finditer(r"Bash\(([^)]*)\)", value or ""):
        inner = match.group(1).strip()
        inner = re.sub(r":?\*$", "", inner).strip()
        if inner:
            found.append(inner)
    return found


# ---------------------------------------------------------------- skill.toml


def _toml_line(text: str, key: str, occurrence: int = 0, table: bool = False) -> int | None:
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
        out.error(SKILL_TOML, _toml_line(text, key), "contract-type",
                  f"`{key}` must be a list of non-empty strings")
        return []
    return [v.strip() for v in value]


def _params(data: dict[str, Any], key: str, text: str, out: ProblemCollector) -> list[Param]:
    value = data.get(key, [])
    if not isinstance(value, list):
        out.error(SKILL_TOML, _toml_line(text, key), "contract-type",
                  f"`{key}` must be an array of tables ([[{key}]])")
        return []
    params = []
    for index, item in enumerate(value):
        line = _toml_line(text, key, index, table=True)
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
            out.error(SKILL_TOML, _toml_line(text, key), "contract-key",
                      f"unknown skill.toml key {key!r}; allowed: {', '.join(CONTRACT_KEYS)}")
    version = data.get("contract", CONTRACT_VERSION)
    if version != CONTRACT_VERSION:
        out.error(SKILL_TOML, _toml_line(text, "contract"), "contract-version",
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
        out.error(SKILL_TOML, _toml_line(text, "provenance"), "contract-type",
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
        out.error(SKILL_TOML, _toml_line(text, key), "contract-type", message)
        return []
    return items


def _steps(items: list[Any], text: str, out: ProblemCollector) -> list[Step]:
    steps = []
    for index, item in enumerate(items):
        line = _toml_line(text, "steps", index, table=True)
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
        line = _toml_line(text, "failure", index, table=True)
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
        line = _toml_line(text, "acceptance", index, table=True)
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


# ---------------------------------------------------------------- whole folder


def read_text(path: Path, out: ProblemCollector, display: str) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        out.error(display, None, "encoding", f"{display} is not UTF-8 text")
    except OSError as exc:
        out.error(display, None, "unreadable", f"cannot read {display}: {exc.strerror or exc}")
    return None


def _parsed_file(folder: Path, name: str, parse: Callable[[str, ProblemCollector], T],
                 out: ProblemCollector) -> T | None:
    """One file of the folder parsed, or None when it is absent or cannot be read."""
    path = folder / name
    if not path.is_file():
        return None
    text = read_text(path, out, name)
    return None if text is None else parse(text, out)


def load_folder(path: Path, out: ProblemCollector | None = None) -> SkillFolder:
    """Parse a skill folder without judging it (problems, if any, go to `out`)."""
    out = out or ProblemCollector(path.name)
    doc = _parsed_file(path, SKILL_MD, parse_skill_md, out)
    contract = _parsed_file(path, SKILL_TOML, parse_contract, out)
    name = path.name
    if doc and isinstance(doc.front.get("name"), str):
        name = doc.front["name"]
    return SkillFolder(path=path, name=name, doc=doc, contract=contract)


def mf_param(text: str) -> bool:
    """True when a path contains a {placeholder} (it cannot be checked before filling)."""
    return PARAM_RE.search(text) is not None


def command_params(argv: list[str]) -> set[str]:
    return {m.group(1) for arg in argv for m in PARAM_RE.finditer(arg)}


def _script_refs(argv: list[str]) -> list[str]:
    """Paths inside the skill folder that a command uses (`{skill}/scripts/x`, `scripts/x`)."""
    refs = []
    for arg in argv:
        for candidate in (arg, arg.split("=", 1)[-1]):
            if candidate.startswith("{skill}/"):
                refs.append(candidate[len("{skill}/"):])
                break
            if candidate.split("/", 1)[0] in RESOURCE_DIRS and "/" in candidate:
                refs.append(candidate)
                break
    return refs


def _is_script_program(argv0: str) -> bool:
    return argv0.startswith("{skill}/") or argv0.split("/", 1)[0] in RESOURCE_DIRS


def validate_folder(
    path: Path,
    policy: ToolSettings,
    *,
    spec_only: bool = False,
    check_tools: bool = True,
    display: str | None = None,
    limits: SkillSettings | None = None,
) -> ValidationReport:
    """Every rule: the spec's front matter rules, the contract, tools (against the `[tools]`
    `policy`), scripts, and every file's safety (skills.file_checks: symlinks, sizes within
    `limits`, tool-name shadowing, secrets and injected instructions in any encoding)."""

    display = display or str(path)
    out = ProblemCollector(display)
    report = ValidationReport(path=display, name=path.name)
    if not path.is_dir():
        out.error("", None, "not-a-skill", f"{path} is not a directory")
        report.problems = _fix_paths(out.problems, display)
        return report
    if not (path / SKILL_MD).is_file():
        out.error(SKILL_MD, None, "skill-md-missing", "the folder has no SKILL.md")
    # The file checks first: load_folder below reads SKILL.md and skill.toml, which must not
    # be symlinks out of the folder.
    check_files(path, skill_files(path), policy, limits or SkillSettings(), out)
    if any(p.rule in ("symlink-outside", "symlink-dir") for p in out.problems):
        report.problems = _fix_paths(out.problems, display)
        return report
    folder = load_folder(path, out)
    report.name = folder.name
    if folder.doc is not None:
        _check_skill_md(folder.doc, path, policy, out)
    if spec_only:
        # Just the Agent Skills rules: skill.toml is not part of the spec, so problems that
        # load_folder found in it (e.g. not TOML) do not count here.
        contract_file = f"{display}/{SKILL_TOML}"
        kept = [p for p in out.problems if p.file != contract_file]
        report.problems = _fix_paths(kept, display)
        return report
    if not (path / SKILL_TOML).is_file():
        out.error(SKILL_TOML, None, "contract-missing",
                  "the folder has no skill.toml (triggers, steps, acceptance...); "
                  "`agentstate skill new NAME` writes one")
    if folder.contract is not None:
        toml_text = (path / SKILL_TOML).read_text(encoding="utf-8", errors="replace")
        _check_contract_sections(folder.contract, toml_text, out)
        _check_contract_tools(folder.contract, toml_text, policy, out, check_tools=check_tools)
        _check_contract_commands(folder.contract, path, policy, out)
        _check_contract_resources(folder.contract, path, toml_text, out)
    report.problems = _fix_paths(out.problems, display)
    return report


def _check_skill_md(doc: SkillDoc, path: Path, policy: ToolSettings,
                    out: ProblemCollector) -> None:
    """SKILL.md: the spec's front matter, `allowed-tools` within the policy, and every file
    the body refers to present."""
    from agentstate.tools.policy import check_command

    check_front_matter(doc, path.name, out)
    allowed = doc.front.get("allowed-tools")
    if isinstance(allowed, str):
        for prefix in allowed_tool_commands(allowed):
            try:
                argv = shlex.split(prefix)
            except ValueError:
                argv = prefix.split()
            if argv and not check_command(policy, argv).allowed:
                out.error(SKILL_MD, doc.key_lines.get("allowed-tools"),
                          "allowed-tools-policy",
                          f"`allowed-tools` pre-approves {prefix!r}, which the [tools] "
                          "policy does not allow (it would be a way around it)")
    for index, line in enumerate(doc.body.splitlines()):
        for link, skill_ref in _BODY_REF.findall(line):
            ref = link or skill_ref
            if mf_param(ref) or (path / ref).exists():
                continue
            out.error(SKILL_MD, doc.body_line + index, "resource-missing",
                      f"SKILL.md refers to {ref!r}, which is not in the folder")


def _check_contract_sections(contract: Contract, toml_text: str,
                             out: ProblemCollector) -> None:
    """The parts every skill.toml must have."""
    if not contract.triggers:
        out.error(SKILL_TOML, _toml_line(toml_text, "triggers"), "triggers-missing",
                  "`triggers` is empty: list phrases of tasks this skill is for")
    if not contract.steps:
        out.error(SKILL_TOML, None, "steps-missing", "no [[steps]]")
    if not contract.outputs:
        out.error(SKILL_TOML, None, "outputs-missing",
                  "no [[outputs]]: say what the procedure produces")
    if not contract.failure:
        out.error(SKILL_TOML, None, "failure-missing",
                  "no [[failure]] handling: say what to do when a step fails")
    if not contract.acceptance:
        out.error(SKILL_TOML, None, "acceptance-missing",
                  "no [[acceptance]] commands: a skill cannot be tested or published "
                  "without one")


def _check_contract_tools(contract: Contract, toml_text: str, policy: ToolSettings,
                          out: ProblemCollector, *, check_tools: bool) -> None:
    """Every required tool on PATH and allowed here (unless `check_tools` is off)."""
    from agentstate.tools.runner import tool_availability

    for tool in contract.required_tools if check_tools else []:
        for problem in tool_availability(policy, tool).problems:
            rule = "tool-missing" if "PATH" in problem else "tool-denied"
            out.error(SKILL_TOML, _toml_line(toml_text, "required_tools"), rule, problem)


def _check_contract_commands(contract: Contract, path: Path, policy: ToolSettings,
                             out: ProblemCollector) -> None:
    """Step and acceptance commands: placeholders declared, scripts present, programs
    declared in `required_tools` and allowed by the policy."""
    from agentstate.tools.policy import check_command, program_name

    declared = {p.name for p in contract.inputs} | set(BUILTIN_PARAMS)
    tools = set(contract.required_tools)
    commands = [("step", s.run) for s in contract.steps if s.run]
    commands += [("acceptance", c) for c in contract.acceptance]
    for what, command in commands:
        for param in sorted(command_params(command.argv) - declared):
            out.error(SKILL_TOML, command.line, "param-undeclared",
                      f"{what} command uses {{{param}}}, which is not an [[inputs]] name "
                      f"or one of {', '.join('{' + b + '}' for b in BUILTIN_PARAMS)}")
        for ref in _script_refs(command.argv):
            if not PARAM_RE.search(ref) and not (path / ref).exists():
                out.error(SKILL_TOML, command.line, "script-missing",
                          f"{what} command uses {ref!r}, which is not in the folder")
        program = command.argv[0]
        if _is_script_program(program):
            continue
        name = program_name(program)
        if name not in tools:
            out.error(SKILL_TOML, command.line, "tool-undeclared",
                      f"{what} command runs {name!r}; list it in `required_tools`")
        if not check_command(policy, [PARAM_RE.sub("x", a) for a in command.argv]).allowed:
            out.error(SKILL_TOML, command.line, "tool-denied",
                      f"{what} command {command.text!r} is not allowed by the [tools] policy")


def _check_contract_resources(contract: Contract, path: Path, toml_text: str,
                              out: ProblemCollector) -> None:
    for ref in contract.resources:
        res_line = _toml_line(toml_text, "resources")
        if ref.startswith("/") or ".." in Path(ref).parts:
            out.error(SKILL_TOML, res_line, "resource-path",
                      f"resource {ref!r} must be a relative path inside the folder")
        elif not (path / ref).exists():
            out.error(SKILL_TOML, res_line, "resource-missing",
                      f"resource {ref!r} is not in the folder")


def _fix_paths(problems: list[Problem], display: str) -> list[Problem]:
    for problem in problems:
        if problem.file.endswith("/"):
            problem.file = problem.file.rstrip("/") or display
    return problems


IGNORED_PARTS = {".git", "__pycache__", ".DS_Store"}


def skill_files(path: Path) -> list[Path]:
    """The files that make up a skill (what a release commits): no caches, no .git."""
    files = []
    for file in path.rglob("*"):
        parts = file.relative_to(path).parts
        if any(p in IGNORED_PARTS for p in parts) or file.suffix == ".pyc":
            continue
        if file.is_file() or file.is_symlink():
            files.append(file)
    return files
