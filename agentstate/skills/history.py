"""A skill's history (versions, loads, tests), diffs between releases, and the consistency
check between the database mirror and the git registry (for `agentstate doctor`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from agentstate.errors import InvalidInput, NotFound
from agentstate.skills import registry, release_files
from agentstate.skills.acceptance import SkillTest, tests_of
from agentstate.skills.records import (
    SkillVersion,
    current_release,
    draft_path,
    get_version,
    parse_target,
    versions_of,
)
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

# ---------------------------------------------------------------- history, diff


@dataclass
class SkillHistory:
    name: str
    current: str | None
    draft: str | None  # path of the draft in the registry work tree
    draft_changed: bool  # the draft differs from the current version
    versions: list[SkillVersion]
    tests: list[SkillTest]


def skill_history(store: Store, name: str) -> SkillHistory:
    name, _ = parse_target(name)
    rows = versions_of(store, name)
    if not rows:
        raise NotFound(f"no skill named {name!r}")
    loads = {r["version"]: r["n"] for r in store.rows(
        "SELECT version, count(*) AS n FROM skill_loads WHERE name = ? GROUP BY version",
        (name,))}
    versions = [replace(r, loads=loads.get(r.version, 0)) for r in rows]
    current = current_release(store, name)
    folder = draft_path(store, name)
    tree = registry.tree_hash(folder) if folder.is_dir() else None
    tests = tests_of(store, name)
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
    return release_files.diff_versions(store.skills_path, name, numbers[0], numbers[1])



# ---------------------------------------------------------------- consistency


def check_registry(store: Store) -> list[str]:
    """Problems between the database mirror and the git registry (empty: consistent).

    Every released row (published or revoked) must have its tag pointing at its commit with
    the recorded tree (a revoked row whose commit is gone too is history only); every
    `<name>/v<N>` tag must have a row. Meant for `agentstate doctor`.
    """
    problems = []
    tag_list = registry.list_tags(store.skills_path)
    rows = store.rows(
        "SELECT name, version, status, commit_sha, tree FROM skill_versions "
        "WHERE status != 'candidate' ORDER BY name, version")
    released = {registry.tag_name(r["name"], r["version"]): r for r in rows}
    repo_path = store.skills_path
    for tag, row in released.items():
        if tag not in tag_list:
            if row["status"] == "revoked" and not (
                    row["commit_sha"] and registry.commit_exists(repo_path, row["commit_sha"])):
                continue  # revoked and its content gone (a lost registry): history only
            problems.append(f"{make_ref('skill', row['name'], row['version'])} "
                            f"({row['status']}) has no tag {tag} in the registry")
            continue
        commit, tree = release_files.tag_target(repo_path, row["name"], row["version"])
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
