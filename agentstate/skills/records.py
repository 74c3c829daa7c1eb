"""Skill records: the `skill_versions` rows and the lookups every other skills module uses.

Rows in `skill_versions` mirror the registry. A draft folder lives in the registry's work
tree (`.agentstate/skills/<name>/`); its candidate row (status `candidate`, no commit) records
where it came from. Publishing (`agentstate.skills.publishing`) turns the row into
`published`; revoking (`agentstate.skills.revocation`) keeps the row but the version can no
longer be loaded, matched or exported.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput, NotFound
from agentstate.lazy_re import LazyPattern
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref

if TYPE_CHECKING:
    from agentstate.skills import skill_file as mf

# The skill file's parser (8 dataclasses, 4 patterns) and the registry are imported where
# they are used: every `context` pack reads this module's rows (`any_published`) and never
# parses a skill file.
_NAME_AT = LazyPattern(r"^(?:skill:)?([a-z0-9-]+)(?:@v([0-9]+))?$")


@dataclass(frozen=True)
class SkillVersion:
    """One row of `skill_versions`: a draft (candidate), a release, or a revoked release."""

    name: str
    version: int
    status: SkillStatus
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


def row_to_version(row: dict[str, Any], loads: int = 0) -> SkillVersion:
    return SkillVersion(
        name=row["name"], version=row["version"], status=SkillStatus(row["status"]),
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
    from agentstate.skills.skill_md import check_name

    name, version = match.group(1), match.group(2)
    problems = check_name(name)
    if problems:
        raise InvalidInput(problems[0])
    if version is not None and int(version) < 1:
        raise InvalidInput(f"versions start at v1: {text!r}")
    return name, int(version) if version else None


def versions_of(store: Store, name: str) -> list[SkillVersion]:
    """Every version of skill `name` (any status), oldest first."""
    return [row_to_version(r) for r in store.rows(
        "SELECT * FROM skill_versions WHERE name = ? ORDER BY version", (name,))]


def get_version(store: Store, name: str, version: int) -> SkillVersion:
    found = find_version(store, name, version)
    if found is None:
        known = version_numbers(store, name)
        if not known:
            raise NotFound(f"no skill named {name!r} (see `agentstate skill list --all`)")
        versions = ", ".join(f"v{n}" for n in known)
        raise NotFound(f"skill {name!r} has no version v{version} (it has {versions})")
    return found


def find_version(store: Store, name: str, version: int) -> SkillVersion | None:
    """Version `version` of skill `name`, or None when there is no such row."""
    rows = store.rows(
        "SELECT * FROM skill_versions WHERE name = ? AND version = ?", (name, version))
    return row_to_version(rows[0]) if rows else None


def version_numbers(store: Store, name: str) -> list[int]:
    """The version numbers recorded for skill `name` (any status), lowest first."""
    return [r[0] for r in store.conn.execute(
        "SELECT version FROM skill_versions WHERE name = ? ORDER BY version", (name,))]


def any_published(store: Store) -> bool:
    """Whether any skill version is published (revoked ones and drafts do not count)."""
    return store.value(
        "SELECT 1 FROM skill_versions WHERE status = 'published' LIMIT 1") is not None


def current_release(store: Store, name: str) -> SkillVersion | None:
    """The highest published (not revoked) version: what load, match and export use."""
    rows = store.rows(
        "SELECT * FROM skill_versions WHERE name = ? AND status = 'published' "
        "ORDER BY version DESC LIMIT 1", (name,))
    return row_to_version(rows[0]) if rows else None


def candidate_version(store: Store, name: str) -> SkillVersion | None:
    """The draft waiting to be published (the newest version, if a candidate)."""
    rows = versions_of(store, name)
    return rows[-1] if rows and rows[-1].status == SkillStatus.CANDIDATE else None


def next_version_number(store: Store, name: str) -> int:
    """The number the next version of `name` gets (numbers are never reused)."""
    return int(store.value(
        "SELECT COALESCE(MAX(version), 0) FROM skill_versions WHERE name = ?", (name,))) + 1


def draft_path(store: Store, name: str) -> Path:
    return store.skills_path / name


@contextmanager
def registry_lock(store: Store, *, recover: bool = True) -> Iterator[list[str]]:
    """One writer of the registry at a time (git's index is not shared safely).

    Whoever takes the lock first finishes or rolls back an interrupted publish (the publish
    journal, agentstate.skills.journal); the context value lists what that repaired."""
    # O_CREAT without truncation: taking the lock never rewrites the file.
    fd = os.open(store.root / "skills.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            repaired: list[str] = []
            if recover:
                from agentstate.skills.journal import recover as recover_publishes

                repaired = recover_publishes(store)
            yield repaired
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def principal_name(store: Store, principal: Principal | str) -> tuple[str, bool]:
    """(principal, may approve): the principal the caller acts for (an entry point resolved
    it, see store.principals); approving is the owner-only action `approve`."""
    from agentstate.store.principals import acting

    who = acting(store, principal)
    return who.name, who.may("approve")


def record_candidate(store: Store, name: str, folder: mf.SkillFolder,
                     provenance: dict[str, Any]) -> SkillVersion:
    """Record (or refresh) the candidate row for the draft in the registry work tree."""
    existing = candidate_version(store, name)
    triggers = json.dumps(folder.contract.triggers if folder.contract else [])
    description = folder.description
    with store.transaction():
        if existing:
            store.conn.execute(
                "UPDATE skill_versions SET description = ?, triggers = ?, provenance = ? "
                "WHERE name = ? AND version = ?",
                (description, triggers, json.dumps(provenance, sort_keys=True), name,
                 existing.version),
            )
            version = existing.version
        else:
            version = next_version_number(store, name)
            store.insert("skill_versions", {
                "name": name, "version": version, "status": SkillStatus.CANDIDATE.value,
                "commit_sha": None, "tree": None, "tag": None, "description": description,
                "triggers": triggers, "approver": None, "reasons": "[]",
                "provenance": json.dumps(provenance, sort_keys=True), "created": store.now(),
            })
    return get_version(store, name, version)


def release_folder(store: Store, row: SkillVersion) -> Path:
    """A released version checked out under .agentstate/cache (rebuilt if it drifted)."""
    # Inside the registry folder (ignored by the host repository's .gitignore for
    # .agentstate/skills/, and excluded from the registry's own git by info/exclude).
    from agentstate.skills import registry, release_files

    dest = store.skills_path / registry.CACHE_DIR / row.name / f"v{row.version}"
    if not dest.is_dir() or registry.tree_hash(dest) != row.tree:
        release_files.materialize(store.skills_path, row.name, row.version, dest)
    return dest
