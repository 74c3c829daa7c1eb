"""`agentstate doctor --repair`: mend what `doctor` reports about the skills registry.

In order: what an interrupted restore left is removed, and replaced stores kept aside beyond
`[retention] keep_restore_copies` (agentstate.maintenance.restore); a
missing registry is created again (as `init` would); the registry lock is taken,
which finishes or rolls back interrupted publishes from the journal; stale git locks, tags
without rows and untagged commits are dealt with and missing tags recreated
(agentstate.skills.repair); the shipped skills are restored; released versions whose content
is gone for good are revoked (they can never load). What each step did is returned, one line
per change.
"""

from __future__ import annotations

from pathlib import Path


def repair_store(root: Path) -> list[str]:
    from agentstate.maintenance.restore import remove_restore_leftovers, trim_aside_copies
    from agentstate.skills.records import registry_lock
    from agentstate.skills.registry import ensure_registry
    from agentstate.skills.repair import mark_lost, repair_registry
    from agentstate.skills.shipped import install_shipped
    from agentstate.store.db import open_store

    actions = remove_restore_leftovers(root)
    actions += [f"removed {path}, a replaced store beyond [retention] keep_restore_copies"
                for path in trim_aside_copies(root, _keep_restore_copies(root))]
    store = open_store(root)  # applies pending migrations (the journal table among them)
    try:
        if ensure_registry(store.skills_path):
            actions.append(f"created the skills registry {store.skills_path}")
        with registry_lock(store) as recovered:
            actions += recovered
            actions += repair_registry(store)
        installed = install_shipped(store)
        actions += [f"restored shipped {ref} into the registry" for ref in installed.restored]
        actions += [f"published shipped {ref}" for ref in installed.published]
        with registry_lock(store) as recovered:
            actions += recovered
            actions += mark_lost(store)
    finally:
        store.close()
    return actions


def _keep_restore_copies(root: Path) -> int:
    """The bound from config.toml; a file that does not load trims nothing (doctor reports
    the file itself)."""
    from agentstate.config import CONFIG_NAME, load_settings
    from agentstate.errors import AgentStateError

    try:
        return load_settings(root / CONFIG_NAME).retention.keep_restore_copies
    except AgentStateError:
        return 1 << 30
