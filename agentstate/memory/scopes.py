"""Scope specificity: does a memory's scope apply to the current work, and how closely?

`context` is a dict with any of: `run` (run ref or id), `branch` (name), `paths` (paths
relative to the repository root). A dimension the context does not mention never excludes a
memory: without a branch, `branch:*` memories apply, ranked as neutral.
"""

from __future__ import annotations

import fnmatch
from typing import Any

# How specific each scope is when it matches; the read gate ranks specific memories higher.
SPECIFICITY = {"user": 0.3, "repo": 0.4, "branch": 0.7, "path": 0.85, "run": 1.0}
NEUTRAL = 0.5


def scope_applies(scope: str, context: dict[str, Any] | None) -> float | None:
    """Specificity 0..1 when `scope` applies to `context`, None when it does not."""
    kind, _, value = scope.partition(":")
    if context is None or kind in ("repo", "user"):
        return SPECIFICITY.get(kind, NEUTRAL) if context is not None else NEUTRAL
    if kind == "run":
        run = context.get("run")
        if not run:
            return NEUTRAL
        return SPECIFICITY["run"] if str(run).removeprefix("run:") == value else None
    if kind == "branch":
        branch = context.get("branch")
        if not branch:
            return NEUTRAL
        return SPECIFICITY["branch"] if fnmatch.fnmatchcase(branch, value) else None
    if kind == "path":
        paths = context.get("paths") or []
        if not paths:
            return NEUTRAL
        matched = any(fnmatch.fnmatchcase(p, value) or p.startswith(value.rstrip("*"))
                      for p in paths)
        return SPECIFICITY["path"] if matched else None
    return NEUTRAL
