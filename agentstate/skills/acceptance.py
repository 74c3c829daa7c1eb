"""`skill test`: run a skill's acceptance commands through the tool layer and record the
result in `skill_tests` (publishing reuses a pass recorded for the same tree).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput, NotFound
from agentstate.runs.lookups import run_of_event
from agentstate.skills import contract_toml, registry
from agentstate.skills import problems as skill_problems
from agentstate.skills import skill_file as mf
from agentstate.skills.records import (
    draft_path,
    get_version,
    parse_target,
    release_folder,
    versions_of,
)
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store


@dataclass
class AcceptanceResult:
    command: str
    ok: bool
    exit_code: int | None
    expected: int
    status: str
    event: str | None
    tool_call: str
    excerpt: str


@dataclass
class AcceptanceReport:
    name: str
    tree: str | None
    passed: bool
    results: list[AcceptanceResult] = field(default_factory=list)
    tested: str = "draft"  # draft | skill:name@vN
    id: str = ""


def fill_params(argv: list[str], values: dict[str, str]) -> list[str]:
    def sub(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    return [contract_toml.PARAM_RE.sub(sub, arg) for arg in argv]


def param_values(contract: contract_toml.Contract, folder: Path, repo: Path, tmp_dir: Path,
                 given: dict[str, str] | None) -> dict[str, str]:
    given = dict(given or {})
    known = {p.name for p in contract.inputs}
    unknown = sorted(set(given) - known)
    if unknown:
        raise InvalidInput(f"unknown parameter(s) {', '.join(unknown)}; this skill's inputs: "
                           f"{', '.join(sorted(known)) or '(none)'}")
    values = {"skill": str(folder.resolve()), "repo": str(repo), "tmp_dir": str(tmp_dir)}
    for param in contract.inputs:
        if param.name in given:
            values[param.name] = given[param.name]
        elif param.default is not None:
            values[param.name] = param.default
    return values


def run_acceptance(store: Store, target: str, *, run_ref: str | None = None,
                   params: dict[str, str] | None = None) -> AcceptanceReport:
    """Run the acceptance commands through the tool layer and record the result.

    NAME tests the draft in the registry work tree; NAME@vN tests a released version (checked
    out into a cache folder), e.g. a regression check in a new setting.
    """
    from agentstate.tools.runner import run_tool

    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)
        if row.status == SkillStatus.CANDIDATE:
            folder = draft_path(store, name)
            tested = "draft"
        else:
            folder = release_folder(store, row)
            tested = row.ref
    else:
        folder = draft_path(store, name)
        tested = "draft"
        if not folder.is_dir():
            if versions_of(store, name):
                raise NotFound(f"skill {name!r} has no draft in {store.skills_path}; test a "
                               f"release with {name}@vN")
            raise NotFound(f"no skill named {name!r}")
    out = skill_problems.ProblemCollector(name)
    # The file rules of validate and publish (symlinks out, sizes, a script named like an
    # allowed tool, secrets) hold before anything of the skill runs.
    from agentstate.skills.file_checks import check_files

    check_files(folder, mf.skill_files(folder), store.settings.tools, store.settings.skills, out)
    loaded = mf.load_folder(folder, out)
    contract = loaded.contract
    errors = [p for p in out.problems if p.severity == "error"]
    if contract is None or errors:
        detail = "; ".join(str(p) for p in errors) or "skill.toml is missing"
        raise InvalidInput(f"cannot test {name}: {detail}")
    if not contract.acceptance:
        raise InvalidInput(f"cannot test {name}: skill.toml has no [[acceptance]] commands")
    tree = registry.tree_hash(folder)
    tmp_dir = Path(tempfile.mkdtemp(prefix=f"agentstate-skill-{name}-"))
    results = []
    try:
        values = param_values(contract, folder, store.work_tree, tmp_dir, params)
        for command in contract.acceptance:
            argv = fill_params(command.argv, values)
            missing = sorted(contract_toml.command_params(argv))
            if missing:
                raise InvalidInput(
                    f"acceptance command {command.text!r} needs a value for "
                    f"{', '.join('{' + m + '}' for m in missing)}: pass --param NAME=VALUE or "
                    "give the input a default")
            cwd = folder if command.cwd == "skill" else store.work_tree
            result = run_tool(store, argv, run_ref=run_ref, timeout=command.timeout, cwd=cwd,
                              purpose=f"skill:{name} acceptance", writable=[tmp_dir])
            ok = (result.allowed and not result.not_found and not result.timed_out
                  and result.exit_code == command.expect_exit)
            results.append(AcceptanceResult(
                command=command.text, ok=ok, exit_code=result.exit_code,
                expected=command.expect_exit,
                status=result.status if result.allowed and not result.not_found
                and not result.timed_out else result.reason,
                event=result.event, tool_call=result.call_id, excerpt=result.excerpt,
            ))
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    passed = all(r.ok for r in results)
    report = AcceptanceReport(name=name, tree=tree, passed=passed, results=results, tested=tested,
                        id=store.new_id())
    run_id = None
    if results and results[0].event:
        run_id = run_of_event(store, results[0].event.removeprefix("evt:"))
    store.insert("skill_tests", {
        "id": report.id, "name": name, "tree": tree or "", "passed": int(passed),
        "results": json.dumps([r.__dict__ for r in results], ensure_ascii=False),
        "run": run_id, "ts": store.now(),
    })
    return report


@dataclass(frozen=True)
class SkillTest:
    """One recorded acceptance run of a skill's draft (a `skill_tests` row)."""

    id: str
    tree: str  # the folder tree tested ("" when the draft had none)
    passed: bool
    ts: str


_TEST_COLUMNS = "SELECT id, tree, passed, ts FROM skill_tests WHERE name = ?"


def _test(row: dict[str, Any]) -> SkillTest:
    return SkillTest(id=row["id"], tree=row["tree"], passed=bool(row["passed"]), ts=row["ts"])


def last_test(store: Store, name: str, tree: str | None) -> SkillTest | None:
    """The newest acceptance run of `name` on exactly this tree, or None."""
    row = store.row(_TEST_COLUMNS + " AND tree = ? ORDER BY ts DESC, rowid DESC LIMIT 1",
                    (name, tree or ""))
    return None if row is None else _test(row)


def tests_of(store: Store, name: str) -> list[SkillTest]:
    """Every acceptance run of `name`, oldest first."""
    return [_test(r) for r in store.rows(_TEST_COLUMNS + " ORDER BY ts, rowid", (name,))]
