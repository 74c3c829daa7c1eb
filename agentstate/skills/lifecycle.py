"""A skill's life: new / propose → validate → test → publish → (load) → revoke.

Rows in `skill_versions` mirror the registry. A draft folder lives in the registry's work
tree (`.agentstate/skills/<name>/`); its candidate row (status `candidate`, no commit) records
where it came from. Publishing commits the folder, tags `<name>/v<N>` and turns the row into
`published`, all or nothing. Revoking keeps the row, the commit and the tag (history) but the
version can no longer be loaded, matched or exported.

Trust: a candidate needs an explicit human `--approve` when its content came from untrusted
sources (tool output, files, fetched documents; see store.sources.is_untrusted), when any of
its text reads as injected instructions (safety.find_injection), or when nothing records where
the draft came from (files that simply appeared in the registry). Only a principal allowed to
write every scope (`write = ["*"]`, the owner by default) may approve; the approval is
recorded with the version.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import CorruptStore, InvalidInput, NotFound, Refused
from agentstate.safety import find_injection, refuse_secrets
from agentstate.skills import manifest as mf
from agentstate.skills import registry
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

STATUSES = ("candidate", "published", "revoked")
_NAME_AT = re.compile(r"^(?:skill:)?([a-z0-9-]+)(?:@v([0-9]+))?$")


# ---------------------------------------------------------------- records


@dataclass
class SkillVersion:
    name: str
    version: int
    status: str
    ref: str
    commit: str | None
    tree: str | None
    tag: str | None
    description: str
    triggers: list[str]
    approver: str | None
    reasons: list[str]
    provenance: dict[str, Any]
    created: str
    published: str | None
    revoked: str | None
    revoked_by: str | None
    revoke_reason: str | None
    loads: int = 0


def row_to_version(row: dict, loads: int = 0) -> SkillVersion:
    return SkillVersion(
        name=row["name"], version=row["version"], status=row["status"],
        ref=make_ref("skill", row["name"], row["version"]), commit=row["commit_sha"],
        tree=row["tree"], tag=row["tag"], description=row["description"],
        triggers=json.loads(row["triggers"] or "[]"), approver=row["approver"],
        reasons=json.loads(row["reasons"] or "[]"),
        provenance=json.loads(row["provenance"] or "{}"), created=row["created"],
        published=row["published"], revoked=row["revoked"], revoked_by=row["revoked_by"],
        revoke_reason=row["revoke_reason"], loads=loads,
    )


def parse_target(text: str) -> tuple[str, int | None]:
    """`name`, `name@v3` or `skill:name@v3` → (name, version or None)."""
    match = _NAME_AT.match((text or "").strip())
    if not match:
        raise InvalidInput(f"not a skill name or ref: {text!r} (expected NAME, NAME@vN or "
                           "skill:NAME@vN)")
    name, version = match.group(1), match.group(2)
    problems = mf.check_name(name)
    if problems:
        raise InvalidInput(problems[0])
    if version is not None and int(version) < 1:
        raise InvalidInput(f"versions start at v1: {text!r}")
    return name, int(version) if version else None


def version_rows(store: Store, name: str) -> list[dict]:
    """Every row of skill `name`, oldest version first."""
    return list(store.db.query(
        "SELECT * FROM skill_versions WHERE name = ? ORDER BY version", (name,)))


def get_version(store: Store, name: str, version: int) -> SkillVersion:
    rows = list(store.db.query(
        "SELECT * FROM skill_versions WHERE name = ? AND version = ?", (name, version)))
    if not rows:
        known = version_rows(store, name)
        if not known:
            raise NotFound(f"no skill named {name!r} (see `agentstate skill list --all`)")
        versions = ", ".join(f"v{r['version']}" for r in known)
        raise NotFound(f"skill {name!r} has no version v{version} (it has {versions})")
    return row_to_version(rows[0])


def current_release(store: Store, name: str) -> SkillVersion | None:
    """The highest published (not revoked) version: what load, match and export use."""
    rows = list(store.db.query(
        "SELECT * FROM skill_versions WHERE name = ? AND status = 'published' "
        "ORDER BY version DESC LIMIT 1", (name,)))
    return row_to_version(rows[0]) if rows else None


def _candidate(store: Store, name: str) -> dict | None:
    rows = version_rows(store, name)
    return rows[-1] if rows and rows[-1]["status"] == "candidate" else None


def _next_version(store: Store, name: str) -> int:
    row = store.conn.execute(
        "SELECT COALESCE(MAX(version), 0) FROM skill_versions WHERE name = ?", (name,)
    ).fetchone()
    return int(row[0]) + 1


def draft_path(store: Store, name: str) -> Path:
    return store.skills_path / name


@contextmanager
def registry_lock(store: Store) -> Iterator[None]:
    """One writer of the registry at a time (git's index is not shared safely)."""
    # O_CREAT without truncation: taking the lock never rewrites the file.
    fd = os.open(store.root / "skills.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def principal_name(store: Store) -> tuple[str, bool]:
    """(principal, may approve): AGENTSTATE_PRINCIPAL or [principals] default."""
    try:
        from agentstate.memory.model import resolve_principal

        who = resolve_principal(store)
        return who.name, "*" in who.write
    except ImportError:  # pragma: no cover - memory domain always ships with this one
        section = store.config.get("principals", {})
        name = os.environ.get("AGENTSTATE_PRINCIPAL") or section.get("default") or "owner"
        entry = section.get(name, {}) if isinstance(section.get(name), dict) else {}
        return name, "*" in entry.get("write", [])


def record_candidate(store: Store, name: str, folder: mf.SkillFolder,
                     provenance: dict[str, Any]) -> dict:
    """Record (or refresh) the candidate row for the draft in the registry work tree."""
    existing = _candidate(store, name)
    triggers = json.dumps(folder.contract.triggers if folder.contract else [])
    description = folder.description
    with store.transaction():
        if existing:
            store.conn.execute(
                "UPDATE skill_versions SET description = ?, triggers = ?, provenance = ? "
                "WHERE name = ? AND version = ?",
                (description, triggers, json.dumps(provenance, sort_keys=True), name,
                 existing["version"]),
            )
            version = existing["version"]
        else:
            version = _next_version(store, name)
            store.db["skill_versions"].insert({
                "name": name, "version": version, "status": "candidate", "commit_sha": None,
                "tree": None, "tag": None, "description": description, "triggers": triggers,
                "approver": None, "reasons": "[]",
                "provenance": json.dumps(provenance, sort_keys=True), "created": store.now(),
            })
    return next(r for r in version_rows(store, name) if r["version"] == version)


# ---------------------------------------------------------------- new


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
    ref: str | None  # the candidate's ref when created in the registry
    files: list[str]


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
              path: Path | None = None) -> NewSkill:
    """Write a valid scaffold: into the registry as a candidate, or into `path`/NAME."""
    problems = mf.check_name(name)
    if problems:
        raise InvalidInput(problems[0])
    description = (description or f"Describe what {name} does and when to use it.").strip()
    if len(description) > mf.DESCRIPTION_MAX:
        raise InvalidInput(f"the description is longer than {mf.DESCRIPTION_MAX} characters")
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
    if dest.exists() or version_rows(store, name):
        raise InvalidInput(f"skill {name!r} already exists (edit {dest} and publish a new "
                           "version, or choose another name)")
    principal, may_approve = principal_name(store)
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
    return NewSkill(name=name, path=str(dest), ref=make_ref("skill", name, row["version"]),
                    files=files)


# ---------------------------------------------------------------- add (import a folder)


def add_skill(store: Store, path: Path, *, replace: bool = False) -> NewSkill:
    """Copy a skill folder (e.g. from the repository's own skills/) into the registry as a
    candidate. Its files are untrusted input, so publishing it needs a human --approve."""
    import subprocess

    folder = path.resolve()
    if not folder.is_dir() or not (folder / mf.SKILL_MD).is_file():
        raise InvalidInput(f"{path} is not a skill folder (no SKILL.md)")
    name = folder.name
    problems = mf.check_name(name)
    if problems:
        raise InvalidInput(f"folder name: {problems[0]}")
    dest = draft_path(store, name)
    if dest.resolve() == folder:
        raise InvalidInput(f"{path} is already the registry draft")
    if dest.exists() and not replace:
        if registry.tree_hash(dest) == registry.tree_hash(folder):
            row = _candidate(store, name) or (version_rows(store, name) or [None])[-1]
            return NewSkill(name=name, path=str(dest), files=[],
                            ref=make_ref("skill", name, row["version"]) if row else None)
        raise InvalidInput(f"the registry already has a draft {name!r} that differs; pass "
                           "--replace to overwrite the draft (releases are not touched)")
    try:
        rel = folder.relative_to(store.work_tree).as_posix()
    except ValueError:
        rel = str(folder)
    head = subprocess.run(["git", "-C", str(store.work_tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False).stdout.strip()
    source = f"file:{rel}@{head or 'worktree'}"
    principal, may_approve = principal_name(store)
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
    return NewSkill(name=name, path=str(dest), ref=make_ref("skill", name, row["version"]),
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


def validate_targets(store: Store | None, config: dict, targets: list[str],
                     *, spec_only: bool = False) -> list[mf.ValidationReport]:
    reports = []
    cwd = Path.cwd().resolve()
    for folder in resolve_targets(store, targets):
        try:
            display = str(folder.resolve().relative_to(cwd)) or "."
        except ValueError:
            display = str(folder)
        reports.append(mf.validate_folder(folder, config, spec_only=spec_only, display=display))
    return reports


# ---------------------------------------------------------------- test


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
    def sub(match: re.Match) -> str:
        return values.get(match.group(1), match.group(0))

    return [mf.PARAM_RE.sub(sub, arg) for arg in argv]


def param_values(contract: mf.Contract, folder: Path, repo: Path, tmp_dir: Path,
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
        if row.status == "candidate":
            folder = draft_path(store, name)
            tested = "draft"
        else:
            folder = release_folder(store, row)
            tested = row.ref
    else:
        folder = draft_path(store, name)
        tested = "draft"
        if not folder.is_dir():
            if version_rows(store, name):
                raise NotFound(f"skill {name!r} has no draft in {store.skills_path}; test a "
                               f"release with {name}@vN")
            raise NotFound(f"no skill named {name!r}")
    out = mf._Collector(name)
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
            missing = sorted(mf.command_params(argv))
            if missing:
                raise InvalidInput(
                    f"acceptance command {command.text!r} needs a value for "
                    f"{', '.join('{' + m + '}' for m in missing)}: pass --param NAME=VALUE or "
                    "give the input a default")
            cwd = folder if command.cwd == "skill" else store.work_tree
            result = run_tool(store, argv, run_ref=run_ref, timeout=command.timeout, cwd=cwd,
                              purpose=f"skill:{name} acceptance")
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
        run_id = _event_run(store, results[0].event)
    store.db["skill_tests"].insert({
        "id": report.id, "name": name, "tree": tree or "", "passed": int(passed),
        "results": json.dumps([r.__dict__ for r in results], ensure_ascii=False),
        "run": run_id, "ts": store.now(),
    })
    return report


def _event_run(store: Store, event_ref: str) -> str | None:
    rows = list(store.db.query("SELECT run FROM events WHERE id = ?",
                               (event_ref.split(":", 1)[1],)))
    return rows[0]["run"] if rows else None


def last_test(store: Store, name: str, tree: str | None) -> dict | None:
    rows = list(store.db.query(
        "SELECT * FROM skill_tests WHERE name = ? AND tree = ? ORDER BY ts DESC, rowid DESC "
        "LIMIT 1", (name, tree or "")))
    return rows[0] if rows else None


def release_folder(store: Store, row: SkillVersion) -> Path:
    """A released version checked out under .agentstate/cache (rebuilt if it drifted)."""
    # Inside the registry folder (ignored by the host repository's .gitignore for
    # .agentstate/skills/, and excluded from the registry's own git by info/exclude).
    dest = store.skills_path / registry.CACHE_DIR / row.name / f"v{row.version}"
    if not dest.is_dir() or registry.tree_hash(dest) != row.tree:
        registry.materialize(store.skills_path, row.name, row.version, dest)
    return dest


# ---------------------------------------------------------------- publish


@dataclass
class PublishResult:
    ref: str
    name: str
    version: int
    commit: str
    tree: str
    tag: str
    approver: str | None
    reasons: list[str]  # why approval was needed (empty when it was not)
    test: str  # the skill_tests id whose pass allowed the publish


def approval_reasons(store: Store, name: str, folder: Path, candidate: dict | None) -> list[str]:
    """Why this draft needs a human --approve (empty: it does not)."""
    reasons: list[str] = []
    current = current_release(store, name)
    if candidate is None and current is None:
        reasons.append("nothing records where this draft came from (not created by `skill "
                       "new` or `skill propose`): treat its files as untrusted")
    elif candidate is None:
        principal, may_approve = principal_name(store)
        if not may_approve:
            reasons.append(f"the draft was edited after {current.ref} and is being published "
                           f"by principal {principal!r}, which may not approve skills")
    provenance = json.loads(candidate["provenance"]) if candidate else {}
    creator = provenance.get("principal")
    if creator and provenance.get("principal_may_approve") is False:
        reasons.append(f"created by principal {creator!r}, which may not approve skills")
    for item in provenance.get("untrusted", []):
        reasons.append(f"content came from an untrusted source: {item}")
    for item in provenance.get("injection", []):
        reasons.append(f"the source run read text that reads as injected instructions: {item}")
    for file in sorted(mf.skill_files(folder)):
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for phrase in find_injection(text):
            reasons.append(f"{file.relative_to(folder).as_posix()} reads like instructions "
                           f"aimed at an agent: {phrase!r}")
    return reasons


def _record_release(store: Store, name: str, version: int, *, commit: str, tree: str,
                    tag: str, folder: mf.SkillFolder, approver: str | None,
                    reasons: list[str], provenance: dict[str, Any]) -> None:
    """The database half of a publish (one transaction)."""
    now = store.now()
    with store.transaction() as conn:
        conn.execute("DELETE FROM skill_versions WHERE name = ? AND version = ? AND "
                     "status = 'candidate'", (name, version))
        store.db["skill_versions"].insert({
            "name": name, "version": version, "status": "published", "commit_sha": commit,
            "tree": tree, "tag": tag, "description": folder.description,
            "triggers": json.dumps(folder.contract.triggers if folder.contract else []),
            "approver": approver, "reasons": json.dumps(reasons),
            "provenance": json.dumps(provenance, sort_keys=True), "created": now,
            "published": now,
        })


def publish_skill(store: Store, target: str, *, approve: bool = False,
                  run_ref: str | None = None, params: dict[str, str] | None = None
                  ) -> PublishResult:
    """Validate, test (unless this exact tree already passed), check trust, then commit + tag
    + row together. Refused (exit 3) with every reason when anything is missing."""
    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)  # NotFound for an unknown version
        if row.status == "revoked":
            raise Refused(f"{row.ref} is revoked ({row.revoke_reason}); a revoked version is "
                          "never published again — change the draft and publish a new version")
        if row.status == "published":
            raise InvalidInput(f"{row.ref} is already published")
    folder_path = draft_path(store, name)
    if not folder_path.is_dir():
        if version_rows(store, name):
            raise NotFound(f"skill {name!r} has no draft in {store.skills_path} to publish")
        raise NotFound(f"no skill named {name!r} (create one with `agentstate skill new "
                       f"{name}` or `skill propose`)")
    with registry_lock(store):
        return _publish_locked(store, name, folder_path, approve=approve, run_ref=run_ref,
                               params=params)


def _publish_locked(store: Store, name: str, folder_path: Path, *, approve: bool,
                    run_ref: str | None, params: dict[str, str] | None) -> PublishResult:
    report = mf.validate_folder(folder_path, store.config, display=f"skills/{name}")
    reasons = [str(p) for p in report.errors]
    tree = registry.tree_hash(folder_path)
    if tree is None:
        raise InvalidInput(f"the draft {folder_path} is empty")
    same = [r for r in version_rows(store, name)
            if r["tree"] == tree and r["status"] != "candidate"]
    if same:
        row = row_to_version(same[-1])
        if row.status == "revoked":
            raise Refused(f"this content was published as {row.ref} and revoked "
                          f"({row.revoke_reason}); change it before publishing again")
        raise InvalidInput(f"nothing to publish: the draft is identical to {row.ref}")
    for file in mf.skill_files(folder_path):
        try:
            refuse_secrets(file.read_text(encoding="utf-8"),
                           f"{name}/{file.relative_to(folder_path).as_posix()}")
        except UnicodeDecodeError:
            continue
    # Trust before anything runs: an untrusted candidate's acceptance commands are not
    # executed by publish until a human has approved it.
    candidate = _candidate(store, name)
    trust = approval_reasons(store, name, folder_path, candidate)
    principal, may_approve = principal_name(store)
    approver = None
    if trust:
        if not approve:
            raise Refused(
                f"publish {name} needs a human --approve: " + "; ".join(reasons + trust),
                details={"reasons": reasons + trust, "approval_required": True})
        if not may_approve:
            raise Refused(
                f"principal {principal!r} may not approve skills (only a principal with "
                "write = [\"*\"] may): " + "; ".join(reasons + trust),
                details={"reasons": reasons + trust, "approval_required": True})
        approver = principal
    elif approve and may_approve:
        approver = principal
    test_id = ""
    if not reasons:
        passed = last_test(store, name, tree)
        if passed and passed["passed"]:
            test_id = passed["id"]
        else:
            report_ = run_acceptance(store, name, run_ref=run_ref, params=params)
            test_id = report_.id
            if report_.tree != tree:
                reasons.append("the draft changed while it was being tested")
            for result in report_.results:
                if not result.ok:
                    reasons.append(f"acceptance failed: {result.command} → {result.status}"
                                   f" (expected exit {result.expected})")
    if reasons:
        raise Refused(f"publish {name} refused: " + "; ".join(reasons),
                      details={"reasons": reasons})
    folder = mf.load_folder(folder_path)
    version = candidate["version"] if candidate else _next_version(store, name)
    current = current_release(store, name)
    provenance = json.loads(candidate["provenance"]) if candidate else {
        "origin": "edited", "principal": principal,
        "previous": current.ref if current else None,
    }
    # Which recorded acceptance run (skill_tests.id) let this content through.
    provenance = {**provenance, "acceptance_test": test_id}
    prepared = PreparedRelease(name=name, version=version, tree=tree, folder=folder,
                               approver=approver, reasons=trust, provenance=provenance,
                               test=test_id)
    return release(store, [prepared])[0]


@dataclass
class PreparedRelease:
    """A draft that passed every check, ready to be released."""

    name: str
    version: int
    tree: str
    folder: mf.SkillFolder
    approver: str | None
    reasons: list[str]
    provenance: dict[str, Any]
    test: str


def release(store: Store, items: list[PreparedRelease]) -> list[PublishResult]:
    """Commit + tag + rows for checked drafts, all together or not at all.

    The git side goes first (one commit, one tag per skill); if the database write (or
    anything after the commit) fails, the tags are deleted and HEAD/index reset, so neither a
    tag nor a commit nor a row is left behind.
    """
    releases = [(i.name, i.version) for i in items]
    if len(items) == 1:
        item = items[0]
        message = f"{item.name} v{item.version}: {item.folder.description[:60]}"
    else:
        message = "release " + ", ".join(f"{n} v{v}" for n, v in releases)
    commit, trees, previous = registry.commit_releases(store.skills_path, releases, message)
    try:
        for item in items:
            if trees.get(item.name) != item.tree:
                raise CorruptStore(
                    f"committed tree of {item.name} ({str(trees.get(item.name))[:12]}) differs "
                    f"from the checked tree {item.tree[:12]}; nothing was published")
        with store.transaction():
            for item in items:
                _record_release(store, item.name, item.version, commit=commit, tree=item.tree,
                                tag=registry.tag_name(item.name, item.version),
                                folder=item.folder, approver=item.approver,
                                reasons=item.reasons, provenance=item.provenance)
    except BaseException:
        registry.undo_releases(store.skills_path, releases, previous)
        raise
    return [
        PublishResult(ref=make_ref("skill", i.name, i.version), name=i.name, version=i.version,
                      commit=commit, tree=i.tree, tag=registry.tag_name(i.name, i.version),
                      approver=i.approver, reasons=i.reasons, test=i.test)
        for i in items
    ]


# ---------------------------------------------------------------- revoke


@dataclass
class RevokeResult:
    revoked: list[str]
    current: str | None  # the version load/match/export use now (None: out of the catalog)
    reason: str
    exports_updated: list[str] = field(default_factory=list)


def revoke_skill(store: Store, target: str, reason: str) -> RevokeResult:
    """Revoke one version (NAME@vN) or every published version (NAME). History is kept.

    After revoking NAME@vN the current version is the highest remaining published one (the
    previous release, if any); after revoking NAME no version is current and the skill
    leaves the catalog and the exports.
    """
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("--reason is required: say why the skill is withdrawn")
    refuse_secrets(reason, "the reason")
    name, version = parse_target(target)
    if version is not None:
        row = get_version(store, name, version)
        if row.status == "revoked":
            raise InvalidInput(f"{row.ref} is already revoked ({row.revoke_reason})")
        if row.status == "candidate":
            raise InvalidInput(f"{row.ref} is a candidate, not a release; delete or edit the "
                               "draft instead")
        targets = [version]
    else:
        rows = version_rows(store, name)
        if not rows:
            raise NotFound(f"no skill named {name!r}")
        targets = [r["version"] for r in rows if r["status"] == "published"]
        if not targets:
            raise InvalidInput(f"skill {name!r} has no published version to revoke")
    principal, _ = principal_name(store)
    now = store.now()
    with store.transaction() as conn:
        for v in targets:
            conn.execute(
                "UPDATE skill_versions SET status = 'revoked', revoked = ?, revoked_by = ?, "
                "revoke_reason = ? WHERE name = ? AND version = ? AND status = 'published'",
                (now, principal, reason, name, v),
            )
    current = current_release(store, name)
    from agentstate.skills.export import refresh_existing_exports

    updated = refresh_existing_exports(store)
    return RevokeResult(revoked=[make_ref("skill", name, v) for v in targets],
                        current=current.ref if current else None, reason=reason,
                        exports_updated=updated)


# ---------------------------------------------------------------- history, diff


@dataclass
class SkillHistory:
    name: str
    current: str | None
    draft: str | None  # path of the draft in the registry work tree
    draft_changed: bool  # the draft differs from the current version
    versions: list[SkillVersion]
    tests: list[dict]


def skill_history(store: Store, name: str) -> SkillHistory:
    name, _ = parse_target(name)
    rows = version_rows(store, name)
    if not rows:
        raise NotFound(f"no skill named {name!r}")
    loads = {r["version"]: r["n"] for r in store.db.query(
        "SELECT version, count(*) AS n FROM skill_loads WHERE name = ? GROUP BY version",
        (name,))}
    versions = [row_to_version(r, loads.get(r["version"], 0)) for r in rows]
    current = current_release(store, name)
    folder = draft_path(store, name)
    tree = registry.tree_hash(folder) if folder.is_dir() else None
    tests = []
    for row in store.db.query(
            "SELECT id, tree, passed, ts FROM skill_tests WHERE name = ? ORDER BY ts, rowid",
            (name,)):
        tests.append({"id": row["id"], "tree": row["tree"], "passed": bool(row["passed"]),
                      "ts": row["ts"]})
    return SkillHistory(
        name=name, current=current.ref if current else None,
        draft=str(folder) if folder.is_dir() else None,
        draft_changed=bool(tree and (current is None or tree != current.tree)),
        versions=versions, tests=tests,
    )


def skill_diff(store: Store, name: str, va: str, vb: str) -> str:
    name, _ = parse_target(name)
    numbers = []
    for text in (va, vb):
        match = re.fullmatch(r"v?([0-9]+)", text.strip())
        if not match:
            raise InvalidInput(f"not a version: {text!r} (expected vN)")
        row = get_version(store, name, int(match.group(1)))
        if row.commit is None:
            raise InvalidInput(f"{row.ref} is a candidate, not a release; nothing to diff")
        numbers.append(row.version)
    return registry.diff_versions(store.skills_path, name, numbers[0], numbers[1])



# ---------------------------------------------------------------- consistency


def check_registry(store: Store) -> list[str]:
    """Problems between the database mirror and the git registry (empty: consistent).

    Every released row (published or revoked) must have its tag pointing at its commit with
    the recorded tree; every `<name>/v<N>` tag must have a row. Meant for `agentstate doctor`.
    """
    problems = []
    tag_list = registry.list_tags(store.skills_path)
    rows = list(store.db.query(
        "SELECT name, version, status, commit_sha, tree FROM skill_versions "
        "WHERE status != 'candidate' ORDER BY name, version"))
    released = {registry.tag_name(r["name"], r["version"]): r for r in rows}
    repo_path = store.skills_path
    for tag, row in released.items():
        if tag not in tag_list:
            problems.append(f"{make_ref('skill', row['name'], row['version'])} "
                            f"({row['status']}) has no tag {tag} in the registry")
            continue
        commit, tree = registry.tag_target(repo_path, row["name"], row["version"])
        if commit != row["commit_sha"]:
            problems.append(f"tag {tag} points at {commit[:12]}, the database says "
                            f"{str(row['commit_sha'])[:12]}")
        elif tree != row["tree"]:
            problems.append(f"tag {tag}: folder tree {str(tree)[:12]} differs from the "
                            f"recorded {str(row['tree'])[:12]}")
    for tag in tag_list:
        if re.fullmatch(r"[a-z0-9-]+/v[0-9]+", tag) and tag not in released:
            problems.append(f"tag {tag} has no release row in the database")
    return problems
