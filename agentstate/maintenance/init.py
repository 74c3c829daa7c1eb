"""`agentstate init`: the store, the skills registry and the shipped skills.

Running it again creates whatever part is missing and changes nothing else. A deleted or
emptied registry is created again and the shipped skills are restored into it at the versions
the database records (see agentstate.skills.shipped: a revoked version stays revoked).
"""

from __future__ import annotations

from pathlib import Path

from agentstate.store.init import InitResult, create_store


def init_store(
    start: Path | None = None,
    target: Path | None = None,
    override: str | Path | None = None,
) -> InitResult:
    """Create whatever part of `.agentstate/` is missing (see store.init.create_store for
    where; a brand-new store is staged and renamed into place, skills included)."""
    return create_store(start=start, target=target, override=override, extra=_extra)


def _extra(root: Path, result: InitResult) -> None:
    _skills(root, result)
    from agentstate.sync.gitsetup import INFO_ATTRIBUTES, ensure_gitattributes

    # The shared folder (agentstate sync) merges by union. The rule goes to this clone's own
    # .git/info/attributes, never to a tracked file a teammate's init would also create.
    if ensure_gitattributes(root):
        result.created.append(f"{INFO_ATTRIBUTES} (shared/*.jsonl merge=union)")


def _skills(root: Path, result: InitResult) -> None:
    from agentstate.skills.registry import ensure_registry
    from agentstate.skills.shipped import install_into

    if ensure_registry(root / "skills"):
        result.created.append("skills/ (git repository)")
    installed = install_into(root)
    for ref in installed.restored:
        result.created.append(f"skill {ref} (shipped, restored into the registry)")
    for ref in installed.published:
        result.created.append(f"skill {ref} (shipped, published)")
