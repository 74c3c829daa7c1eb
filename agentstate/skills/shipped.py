"""Skills shipped with agentstate (the top-level `skills/` folder), installed by `init`.

Where they are found: the package carries them as `agentstate/bundled_skills/` — in the
source tree that is a symlink to `../skills`, and setuptools copies the files through it into
the wheel as package data (`[tool.setuptools.package-data]`). An editable install reads the
source tree's `skills/` through the same symlink; the second candidate below covers a source
checkout where the symlink was not preserved (e.g. a Windows checkout without symlinks).

Installing copies each skill into the registry's work tree and publishes it (commit, tag,
row) with provenance `shipped`. Their acceptance commands are not re-run at `init` — init
must not run commands in a user's repository — they run in agentstate's own test suite, and
`agentstate skill test NAME@vN` runs them here on demand. Idempotent: a skill already
present (any version with the same content, or a draft/skill of the same name that did not
come from agentstate) is left alone, so a second `init` changes nothing; a newer shipped
version of a skill whose current version was shipped is published as the next version.

Restore: when the registry was deleted or emptied (`rm -rf .agentstate/skills; agentstate
init`), a shipped skill whose release row is still in the database but whose tag is gone is
committed and tagged again at the SAME version from the shipped files (only when they are the
recorded content, tree for tree). The row keeps its status: a version revoked here gets its
tag back as history but stays revoked, and a revoked skill gets no newer shipped version.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.skills import registry
from agentstate.skills import skill_file as mf
from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store

if TYPE_CHECKING:
    from agentstate.skills.publishing import PreparedRelease
    from agentstate.skills.records import SkillVersion


def shipped_root() -> Path | None:
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "bundled_skills", package.parent / "skills"):
        if candidate.is_dir() and any(candidate.glob(f"*/{mf.SKILL_MD}")):
            return candidate
    return None


def shipped_skills() -> list[Path]:
    root = shipped_root()
    if root is None:
        return []
    return sorted(p.parent for p in root.glob(f"*/{mf.SKILL_MD}"))


@dataclass
class InstallResult:
    published: list[str] = field(default_factory=list)  # refs
    restored: list[str] = field(default_factory=list)  # refs re-tagged in a new registry
    skipped: dict[str, str] = field(default_factory=dict)  # name → why


def install_shipped(store: Store) -> InstallResult:
    """Publish every shipped skill that is not installed yet (see module docstring).

    All of them are released together (one commit, one tag each, rows in one transaction);
    on any failure nothing is left: no commit, tag, row or copied draft.
    """
    from agentstate.skills.publishing import release
    from agentstate.skills.records import registry_lock

    result = InstallResult()
    if _all_installed(store):
        return result  # the common case (every init after the first): no lock, no writes
    with registry_lock(store):
        todo, restore = _shipped_work(store, result)
        if not todo and not restore:
            return result
        copied: list[Path] = []
        try:
            items = _restorations(restore) + _new_releases(store, todo, copied)
            published = release(store, items)
        except BaseException:
            with store.transaction() as conn:
                for draft in copied:
                    conn.execute("DELETE FROM skill_versions WHERE name = ? AND "
                                 "status = 'candidate'", (draft.name,))
            for draft in copied:
                shutil.rmtree(draft, ignore_errors=True)
            raise
    result.restored = [p.ref for p, i in zip(published, items, strict=True)
                       if i.mode == "restore"]
    result.published = [p.ref for p, i in zip(published, items, strict=True)
                        if i.mode == "publish"]
    return result


_ToPublish = tuple[Path, Path, str]  # shipped folder, draft folder, tree hash
_ToRestore = tuple[Path, Path, str, "SkillVersion"]  # … and the release whose tag is gone


def _shipped_work(store: Store, result: InstallResult
                  ) -> tuple[list[_ToPublish], list[_ToRestore]]:
    """Which shipped skills to publish and which releases to restore (a tag gone); the
    others are installed already or skipped (with the reason in `result.skipped`)."""
    from agentstate.skills.records import versions_of

    todo: list[_ToPublish] = []
    restore: list[_ToRestore] = []
    tags = registry.tag_commits(store.skills_path)
    for source in shipped_skills():
        name = source.name
        tree = registry.tree_hash(source)
        if tree is None:  # shipped_skills() found it by its SKILL.md: never empty
            continue
        rows = versions_of(store, name)
        draft = store.skills_path / name
        same = [r for r in rows if r.tree == tree and r.status != SkillStatus.CANDIDATE]
        if same:
            row = same[-1]
            if registry.tag_name(name, row.version) not in tags:
                if draft.exists() and registry.tree_hash(draft) != tree:
                    result.skipped[name] = (f"its release tag is gone but {draft} differs "
                                            "from the shipped files; not restored")
                else:
                    restore.append((source, draft, tree, row))
            continue  # this exact content is (or was) installed
        why = _not_ours(rows, draft) or _invalid(store, source)
        if why:
            result.skipped[name] = why
            continue
        todo.append((source, draft, tree))
    return todo, restore


def _not_ours(rows: list[SkillVersion], draft: Path) -> str | None:
    """Why a shipped skill must not be published over what the registry holds, if so."""
    if rows:
        last = rows[-1]
        origin = last.provenance.get("origin")
        if last.status == SkillStatus.REVOKED:
            return "revoked here; a newer shipped version is not forced"
        if origin == "shipped" and last.status == SkillStatus.CANDIDATE:
            return None  # an install interrupted before its release: redo it
        if origin != "shipped" or last.status != SkillStatus.PUBLISHED:
            return "a skill of this name exists that is not the shipped one"
    elif draft.exists():
        return f"{draft} exists and was not installed by agentstate"
    return None


def _invalid(store: Store, source: Path) -> str | None:
    report = mf.validate_folder(source, store.settings.tools, check_tools=False,
                                display=f"skills/{source.name}")
    return None if report.ok else "; ".join(str(p) for p in report.errors)


def _copy(source: Path, draft: Path) -> None:
    shutil.copytree(source, draft, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _restorations(restore: list[_ToRestore]) -> list[PreparedRelease]:
    """Releases whose tag is gone, released again as they were (the draft copied back if
    it is missing)."""
    from agentstate.skills.publishing import PreparedRelease

    items = []
    for source, draft, tree, row in restore:
        if not draft.exists():
            _copy(source, draft)
        items.append(PreparedRelease(
            name=draft.name, version=row.version, tree=tree,
            folder=mf.load_folder(draft), approver=row.approver, reasons=[],
            provenance=row.provenance, test="shipped",
            mode="restore"))
    return items


def _new_releases(store: Store, todo: list[_ToPublish], copied: list[Path]
                  ) -> list[PreparedRelease]:
    """Each shipped skill copied into the registry and recorded as a candidate (every
    draft copied is added to `copied`, for the caller to remove on failure)."""
    from agentstate.distribution import __version__
    from agentstate.skills.publishing import PreparedRelease
    from agentstate.skills.records import record_candidate

    items = []
    for source, draft, tree in todo:
        if draft.exists():
            shutil.rmtree(draft)
        _copy(source, draft)
        copied.append(draft)
        folder = mf.load_folder(draft)
        provenance = {
            "origin": "shipped", "agentstate": __version__, "principal": "agentstate",
            "sources": ["agentstate"], "untrusted": [], "injection": [],
        }
        row = record_candidate(store, draft.name, folder, provenance)
        items.append(PreparedRelease(
            name=draft.name, version=row.version, tree=tree, folder=folder,
            approver="agentstate (shipped)", reasons=[], provenance=provenance,
            test="shipped",
        ))
    return items


def _all_installed(store: Store) -> bool:
    """Every shipped skill has a row for its content and, if released, its tag."""
    from agentstate.skills.records import versions_of

    tags = None
    for source in shipped_skills():
        tree = registry.tree_hash(source)
        rows = [r for r in versions_of(store, source.name) if r.tree == tree]
        if not rows:
            return False
        released = [r for r in rows if r.status != SkillStatus.CANDIDATE]
        if not released:
            return False  # an install interrupted before its release
        tags = registry.tag_commits(store.skills_path) if tags is None else tags
        if registry.tag_name(source.name, released[-1].version) not in tags:
            return False
    return True


def install_into(root: Path) -> InstallResult:
    """`init`'s entry point: open the store at `root` (a `.agentstate` dir, possibly still
    being staged) and install (or restore) the shipped skills."""
    from agentstate.store.db import open_store

    store = open_store(root, migrate=False)
    try:
        return install_shipped(store)
    finally:
        store.close()
