"""Authoring drafts: `skill new` (a valid scaffold), `skill add` (import a folder as a
candidate) and `skill validate` (which folders a list of targets names, and their reports).

A scaffold is a draft, not a release: it gets its version number only when `skill publish`
releases it, and publish refuses it while it still holds the scaffold's placeholders (the
placeholder body, the placeholder check whose `--self-test` always passes, the placeholder
description): see `scaffold_leftovers`.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from agentstate.config import ToolSettings
from agentstate.errors import InvalidInput, NotFound
from agentstate.safety import refuse_secrets
from agentstate.skills import problems as skill_problems
from agentstate.skills import registry, skill_md
from agentstate.skills import skill_file as mf
from agentstate.skills.records import (
    candidate_version,
    draft_path,
    principal_name,
    record_candidate,
    registry_lock,
    versions_of,
)
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref

# ---------------------------------------------------------------- new


# Placeholder text a scaffold is written with; while any is left, publish refuses the draft.
PLACEHOLDER_BODY = "Say here, for an agent, how to do this kind of task"
PLACEHOLDER_SCRIPT = "Placeholder check for the"
PLACEHOLDER_DESCRIPTION = "Describe what {name} does and when to use it."

SCAFFOLD_MD = """\
---
name: {name}
description: {description}
---

# {title}

Say here, for an agent, how to do this kind of task: what to check first, the steps, how to
tell it worked, and what to do when it does not. Keep it short; put long material in
`references/` and code in `scripts/`.

## Steps

1. Check the preconditions listed in `skill.toml`.
2. Run the steps' commands through the tool layer: `agentstate exec -- COMMAND`.
3. Confirm the result with the acceptance command.
"""

SCAFFOLD_TOML = """\
# The contract of this skill (read by `agentstate skill validate/test/publish`).
contract = 1
# Phrases of tasks this skill is for; `agentstate skill match` ranks by them.
triggers = ["{trigger}"]
# What must be true before starting.
preconditions = ["The repository is checked out and clean enough to work in."]
# Every program a step or acceptance command runs (checked against PATH and [tools]).
required_tools = ["python3"]
# Files in this folder the steps use (scripts/, references/, assets/).
resources = ["scripts/check.py"]

[[inputs]]
name = "target"
description = "What to work on (a path relative to the repository)."
default = "."

[[outputs]]
name = "result"
description = "What the procedure produces or confirms."

[[steps]]
do = "Run the check on the target."
# Commands never run through a shell. Placeholders: {{skill}}, {{repo}}, {{tmp_dir}} and inputs.
run = "python3 {{skill}}/scripts/check.py {{target}}"

[[failure]]
when = "the check fails"
do = "Read its output, fix the cause, and run it again; do not skip it."

[[acceptance]]
# Must exit 0 (or expect_exit) for the skill to be publishable.
run = "python3 {{skill}}/scripts/check.py --self-test"
"""

SCAFFOLD_SCRIPT = '''\
"""Placeholder check for the {name} skill: replace with the real procedure."""

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if argv[:1] == ["--self-test"]:
        print("self-test ok")
        return 0
    target = Path(argv[0] if argv else ".")
    if not target.exists():
        print(f"{{target}} does not exist", file=sys.stderr)
        return 1
    print(f"checked {{target}}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


@dataclass
class NewSkill:
    name: str
    path: str
    ref: str | None  # a candidate's ref (`skill add`); None for a `skill new` draft
    files: list[str]
    draft: bool = False  # a scaffold in the registry: versioned only when published


def scaffold_leftovers(folder: Path, name: str) -> list[str]:
    """What in a draft is still the scaffold's placeholder (empty: it has been written)."""
    def read(rel: str) -> str:
        try:
            return (folder / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return ""

    found = []
    skill_md = read(mf.SKILL_MD)
    if PLACEHOLDER_BODY in skill_md:
        found.append(f"{mf.SKILL_MD} still has the scaffold's placeholder body "
                     f"(\"{PLACEHOLDER_BODY}…\"): write the procedure an agent should follow")
    if PLACEHOLDER_DESCRIPTION.format(name=name) in skill_md:
        found.append(f"{mf.SKILL_MD} still has the placeholder description: say what {name} "
                     "does and when to use it")
    if PLACEHOLDER_SCRIPT in read("scripts/check.py"):
        found.append("scripts/check.py is the scaffold's placeholder, whose --self-test always "
                     "passes: make it (and the [[acceptance]] command) check the real outcome")
    return found


def write_scaffold(dest: Path, name: str, description: str) -> list[str]:
    title = name.replace("-", " ").capitalize()
    # Plain when YAML reads it back unchanged, else a double-quoted (JSON-style) scalar.
    plain = re.fullmatch(r"[A-Za-z0-9(][^:#\n]*[^:\s]", description) is not None
    quoted = description if plain else json.dumps(description, ensure_ascii=False)
    files = {
        mf.SKILL_MD: SCAFFOLD_MD.format(name=name, description=quoted, title=title),
        mf.SKILL_TOML: SCAFFOLD_TOML.format(trigger=name.replace("-", " ")),
        "scripts/check.py": SCAFFOLD_SCRIPT.format(name=name),
    }
    staging = dest.with_name(dest.name + ".new-agentstate")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, text in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(files)


def new_skill(store: Store | None, name: str, *, description: str | None = None,
              path: Path | None = None, principal: Principal | str | None) -> NewSkill:
    """Write a valid scaffold: into the registry as a candidate, or into `path`/NAME.
    `principal` is recorded as the candidate's maker; None only for a scaffold outside any
    store (`path`), which records nothing."""
    problems = skill_md.check_name(name)
    if problems:
        raise InvalidInput(problems[0])
    description = (description or PLACEHOLDER_DESCRIPTION.format(name=name)).strip()
    # The Agent Skills limit, checked here rather than at publish: a draft that could never
    # be published is not written.
    if len(description) > skill_md.DESCRIPTION_MAX:
        raise InvalidInput(f"the description is {len(description):,} characters; the limit "
                           f"is {skill_md.DESCRIPTION_MAX:,} (the Agent Skills rule for "
                           "`description`)")
    if "\n" in description or "\r" in description:
        raise InvalidInput("the description must be one line")
    refuse_secrets(description, "the description")
    if path is not None:
        dest = path / name
        if dest.exists():
            raise InvalidInput(f"{dest} already exists")
        files = write_scaffold(dest, name, description)
        return NewSkill(name=name, path=str(dest), ref=None, files=files)
    if store is None:
        raise InvalidInput("no store: pass --path DIR to scaffold outside the registry")
    dest = draft_path(store, name)
    if dest.exists() or versions_of(store, name):
        raise InvalidInput(f"skill {name!r} already exists (edit {dest} and publish a new "
                           "version, or choose another name)")
    if principal is None:
        raise TypeError("new_skill in the registry needs the principal it acts for")
    principal, may_approve = principal_name(store, principal)
    with registry_lock(store):
        files = write_scaffold(dest, name, description)
        try:
            folder = mf.load_folder(dest)
            row = record_candidate(store, name, folder, {
                "origin": "new", "principal": principal, "principal_may_approve": may_approve,
                "sources": ["user"], "untrusted": [], "injection": [],
            })
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise
    del row  # the candidate row records where the draft came from; its number is not shown
    return NewSkill(name=name, path=str(dest), ref=None, files=files, draft=True)


# ---------------------------------------------------------------- add (import a folder)


def add_skill(store: Store, path: Path, *, replace: bool = False,
              principal: Principal | str) -> NewSkill:
    """Copy a skill folder (e.g. from the repository's own skills/) into the registry as a
    candidate. Its files are untrusted input, so publishing it needs a human --approve."""
    import subprocess

    folder = path.resolve()
    if not folder.is_dir() or not (folder / mf.SKILL_MD).is_file():
        raise InvalidInput(f"{path} is not a skill folder (no SKILL.md)")
    name = folder.name
    problems = skill_md.check_name(name)
    if problems:
        raise InvalidInput(f"folder name: {problems[0]}")
    dest = draft_path(store, name)
    if dest.resolve() == folder:
        raise InvalidInput(f"{path} is already the registry draft")
    if dest.exists() and not replace:
        if registry.tree_hash(dest) == registry.tree_hash(folder):
            row = candidate_version(store, name)
            if not row:
                rows = versions_of(store, name)
                row = rows[-1] if rows else None
            return NewSkill(name=name, path=str(dest), files=[],
                            ref=make_ref("skill", name, row.version) if row else None)
        raise InvalidInput(f"the registry already has a draft {name!r} that differs; pass "
                           "--replace to overwrite the draft (releases are not touched)")
    try:
        rel = folder.relative_to(store.work_tree).as_posix()
    except ValueError:
        rel = str(folder)
    head = subprocess.run(["git", "-C", str(store.work_tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    source = f"file:{rel}@{head or 'worktree'}"
    principal, may_approve = principal_name(store, principal)
    files = [f.relative_to(folder).as_posix() for f in mf.skill_files(folder)]
    with registry_lock(store):
        staging = dest.with_name(dest.name + ".add-agentstate")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(folder, staging, symlinks=True,
                        ignore=shutil.ignore_patterns(*mf.IGNORED_PARTS, "*.pyc"))
        backup = dest.with_name(dest.name + ".old-agentstate")
        shutil.rmtree(backup, ignore_errors=True)
        if dest.exists():
            dest.rename(backup)
        try:
            staging.rename(dest)
            row = record_candidate(store, name, mf.load_folder(dest), {
                "origin": "import", "path": rel, "principal": principal,
                "principal_may_approve": may_approve, "sources": [source],
                "untrusted": [f"files imported from {source}"], "injection": [],
            })
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            shutil.rmtree(staging, ignore_errors=True)
            if backup.exists():
                backup.rename(dest)
            raise
        shutil.rmtree(backup, ignore_errors=True)
    return NewSkill(name=name, path=str(dest), ref=make_ref("skill", name, row.version),
                    files=sorted(files))


# ---------------------------------------------------------------- validate


def resolve_targets(store: Store | None, targets: list[str]) -> list[Path]:
    """Skill folders named by NAME (registry draft), a folder, or any file inside a folder."""
    if not targets:
        if store is None:
            raise InvalidInput("no store here: name skill folders or files to validate")
        staging = (".new-agentstate", ".add-agentstate", ".old-agentstate", ".tmp-agentstate")
        return sorted(p for p in store.skills_path.iterdir()
                      if p.is_dir() and not p.name.startswith(".")
                      and not p.name.endswith(staging))
    folders: list[Path] = []
    for target in targets:
        path = Path(target)
        if path.exists():
            folder = _enclosing_skill(path)
            if folder is None:
                if path.is_dir():
                    folder = path  # validate reports what is missing
                else:
                    continue  # a file outside any skill (pre-commit passes every file)
            if folder not in folders:
                folders.append(folder)
            continue
        if store is not None and "/" not in target and draft_path(store, target).exists():
            folder = draft_path(store, target)
            if folder not in folders:
                folders.append(folder)
            continue
        raise NotFound(f"no skill folder or file {target!r}")
    return folders


def _enclosing_skill(path: Path) -> Path | None:
    path = path.resolve()
    start = path if path.is_dir() else path.parent
    for candidate in (start, *start.parents):
        if (candidate / mf.SKILL_MD).exists() or (candidate / mf.SKILL_TOML).exists():
            return candidate
        if (candidate / ".git").exists():
            break
    return None


def validate_targets(store: Store | None, tools: ToolSettings, targets: list[str],
                     *, spec_only: bool = False) -> list[skill_problems.ValidationReport]:
    reports = []
    cwd = Path.cwd().resolve()
    for folder in resolve_targets(store, targets):
        try:
            display = str(folder.resolve().relative_to(cwd)) or "."
        except ValueError:
            display = str(folder)
        limits = store.settings.skills if store is not None else None
        reports.append(mf.validate_folder(folder, tools, spec_only=spec_only, display=display,
                                          limits=limits))
    return reports
