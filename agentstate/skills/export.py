"""Export current published versions into the folders agents discover skills in.

`agents` → `<work tree>/.agents/skills/`, `claude` → `<work tree>/.claude/skills/`. Each export
writes a small manifest (`.agentstate-export.json`) naming the folders agentstate put there,
so a later export (or a revocation) removes exactly those that are no longer current and never
touches skills a person put there by hand.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.output import warn
from agentstate.safety import refuse_secrets, scannable_text
from agentstate.skills import registry, release_files
from agentstate.skills.catalog import list_catalog
from agentstate.store.db import Store

TARGETS = {"agents": Path(".agents") / "skills", "claude": Path(".claude") / "skills"}
MANIFEST = ".agentstate-export.json"


@dataclass
class ExportResult:
    target: str
    path: str
    written: list[str] = field(default_factory=list)  # refs written or refreshed
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # names removed (revoked / unpublished)
    skipped: list[str] = field(default_factory=list)  # a hand-made folder has the name


def target_dir(store: Store, target: str) -> Path:
    if target not in TARGETS:
        raise InvalidInput(f"unknown export target {target!r}: expected agents or claude")
    return store.work_tree / TARGETS[target]


def _read_manifest(dest: Path) -> dict[str, Any]:
    path = dest / MANIFEST
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}
    return data.get("skills", {}) if isinstance(data, dict) else {}


def export_skills(store: Store, target: str) -> ExportResult:
    dest = target_dir(store, target)
    result = ExportResult(target=target, path=str(dest))
    previous = _read_manifest(dest)
    current = {}
    for entry in list_catalog(store):
        if entry.version is None:  # only include_all lists skills with no published version
            continue
        rows = store.rows(
            "SELECT tree FROM skill_versions WHERE name = ? AND version = ?",
            (entry.name, entry.version))
        tree = rows[0]["tree"]
        folder = dest / entry.name
        if folder.exists() and entry.name not in previous:
            result.skipped.append(entry.name)
            warn(f"{folder} exists and was not written by agentstate; left alone")
            continue
        if folder.is_dir() and registry.tree_hash(folder) == tree and not any(
                p.is_symlink() for p in folder.rglob("*")):
            result.unchanged.append(entry.ref)
        else:
            # Never a symlink in an agent's folder: links are written as copies or left out.
            files = release_files.materialize(store.skills_path, entry.name, entry.version,
                                              folder, links=False)
            for rel in files:
                path = folder / rel
                try:
                    text, _ = scannable_text(path.read_bytes())
                except OSError:
                    continue
                try:
                    refuse_secrets(text, f"{entry.ref} {rel}")
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
            result.written.append(entry.ref)
        current[entry.name] = {"version": entry.version, "tree": tree, "ref": entry.ref}
    for name in sorted(set(previous) - set(current)):
        shutil.rmtree(dest / name, ignore_errors=True)
        result.removed.append(name)
    if current or previous:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / MANIFEST).write_text(
            json.dumps({"generated_by": "agentstate skill export", "skills": current},
                       indent=2, sort_keys=True) + "\n",
            encoding="utf-8",
        )
    return result


def refresh_existing_exports(store: Store) -> list[str]:
    """Re-run every export that exists (after a revocation), so revoked skills leave them."""
    updated = []
    for target in TARGETS:
        dest = target_dir(store, target)
        if (dest / MANIFEST).exists():
            export_skills(store, target)
            updated.append(target)
    return updated
