"""A skill folder: `SKILL.md` (Agent Skills format, skills.skill_md) + `skill.toml` (our
contract, skills.contract_toml), loaded and validated as a whole: the contract's commands and
tools against the `[tools]` policy, the files the body and the contract refer to, and every
file's safety (skills.file_checks).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agentstate.config import SkillSettings, ToolSettings
from agentstate.skills.contract_toml import (
    BUILTIN_PARAMS,
    PARAM_RE,
    Contract,
    command_params,
    parse_contract,
    toml_line,
)
from agentstate.skills.file_checks import check_files
from agentstate.skills.folder_layout import SKILL_MD, SKILL_TOML
from agentstate.skills.problems import Problem, ProblemCollector, ValidationReport
from agentstate.skills.skill_md import (
    SkillDoc,
    allowed_tool_commands,
    check_front_matter,
    parse_skill_md,
)

T = TypeVar("T")

RESOURCE_DIRS = ("scripts", "references", "assets")
# Files a SKILL.md body points at: markdown link targets that are relative paths, and
# `{skill}/...` paths. (Bare words like `scripts/test` may name the *repository's* files.)
_BODY_REF = re.compile(
    r"\]\((?!https?:|mailto:|#|/)([^)\s#]+)(?:#[^)]*)?\)|\{skill\}/([A-Za-z0-9_./-]*[A-Za-z0-9_])"
)



@dataclass
class SkillFolder:
    path: Path
    name: str  # from the front matter (or the folder name when unreadable)
    doc: SkillDoc | None
    contract: Contract | None

    @property
    def description(self) -> str:
        return str(self.doc.front.get("description", "")) if self.doc else ""


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
        out.error(SKILL_TOML, toml_line(toml_text, "triggers"), "triggers-missing",
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
            out.error(SKILL_TOML, toml_line(toml_text, "required_tools"), rule, problem)


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
        res_line = toml_line(toml_text, "resources")
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
