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
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from agentstate.skills import manifest as mf
from agentstate.skills import registry
from agentstate.store.db import Store


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
    skipped: dict[str, str] = field(default_factory=dict)  # name → why


def install_shipped(store: Store) -> InstallResult:
    """Publish every shipped skill that is not installed yet (see module docstring).

    All of them are released together (one commit, one tag each, rows in one transaction);
    on any failure nothing is left: no commit, tag, row or copied draft.
    """
    from agentstate import __version__
    from agentstate.skills.publishing import PreparedRelease, release
    from agentstate.skills.records import record_candidate, registry_lock, version_rows

    result = InstallResult()
    if _all_installed(store):
        return result  # the common case (every init after the first): no lock, no writes
    with registry_lock(store):
        todo = []
        for source in shipped_skills():
            name = source.name
            tree = registry.tree_hash(source)
            rows = version_rows(store, name)
            if any(r["tree"] == tree for r in rows):
                continue  # this exact content is (or was) installed: nothing to do
            draft = store.skills_path / name
            if rows:
                last = rows[-1]
                origin = json.loads(last["provenance"] or "{}").get("origin")
                if last["status"] == "revoked":
                    result.skipped[name] = "revoked here; a newer shipped version is not forced"
                    continue
                if origin != "shipped" or last["status"] != "published":
                    result.skipped[name] = "a skill of this name exists that is not the shipped one"
                    continue
            elif draft.exists():
                result.skipped[name] = f"{draft} exists and was not installed by agentstate"
                continue
            report = mf.validate_folder(source, store.settings.tools, check_tools=False,
                                        display=f"skills/{name}")
            if not report.ok:
                result.skipped[name] = "; ".join(str(p) for p in report.errors)
                continue
            todo.append((source, draft, tree))
        if not todo:
            return result
        copied, items = [], []
        try:
            for source, draft, tree in todo:
                if draft.exists():
                    shutil.rmtree(draft)
                shutil.copytree(source, draft, symlinks=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                copied.append(draft)
                folder = mf.load_folder(draft)
                provenance = {
                    "origin": "shipped", "agentstate": __version__, "principal": "agentstate",
                    "sources": ["agentstate"], "untrusted": [], "injection": [],
                }
                row = record_candidate(store, draft.name, folder, provenance)
                items.append(PreparedRelease(
                    name=draft.name, version=row["version"], tree=tree, folder=folder,
                    approver="agentstate (shipped)", reasons=[], provenance=provenance,
                    test="shipped",
                ))
            published = release(store, items)
        except BaseException:
            with store.transaction() as conn:
                for draft in copied:
                    conn.execute("DELETE FROM skill_versions WHERE name = ? AND "
                                 "status = 'candidate'", (draft.name,))
            for draft in copied:
                shutil.rmtree(draft, ignore_errors=True)
            raise
    result.published = [p.ref for p in published]
    return result


def _all_installed(store: Store) -> bool:
    from agentstate.skills.records import version_rows

    for source in shipped_skills():
        tree = registry.tree_hash(source)
        if not any(r["tree"] == tree for r in version_rows(store, source.name)):
            return False
    return True


def install_into(root: Path) -> list[str]:
    """`init`'s entry point: open the store at `root` (a `.agentstate` dir, possibly still
    being staged) and install the shipped skills. Returns the refs published."""
    from agentstate.store.db import open_store

    store = open_store(root, migrate=False)
    try:
        return install_shipped(store).published
    finally:
        store.close()
