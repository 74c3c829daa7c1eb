"""`agentstate gc`: the retention period applied to the run log, then VACUUM.

Composition above the domains: the memory domain names the events memories cite, the
context domain the events stored packs list, and the runs domain removes the rest
(agentstate.runs.retention). The period is `[retention] keep_events_days`; 0 (the default)
keeps everything and gc changes nothing. The cutoff comes from the store's one clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from agentstate.store.db import Store
from agentstate.store.principals import Principal


@dataclass
class GcResult:
    configured: bool           # False: keep_events_days = 0, nothing was looked at
    keep_events_days: int
    cutoff: str | None         # events older than this (of finished runs) were candidates
    dry_run: bool
    candidates: int = 0
    removed: int = 0
    collected: int = 0         # bodies removed, rows kept (cited by memories or packs…)
    already_collected: int = 0
    cited: int = 0             # distinct events cited by memories or stored packs
    body_bytes: int = 0        # text and meta removed (or that would be)
    bytes_before: int = 0      # state.db + WAL on disk
    bytes_after: int = 0
    reclaimed: int = 0
    vacuumed: bool = False


def gc(store: Store, *, dry_run: bool = False, principal: Principal | str) -> GcResult:
    from agentstate.store.principals import acting, check_whole_store

    # Removing events of every run is an owner action (a dry run changes nothing).
    if not dry_run:
        check_whole_store(acting(store, principal), "collect events (gc)",
                          write=True)
    days = store.settings.retention.keep_events_days
    if days <= 0:
        return GcResult(configured=False, keep_events_days=days, cutoff=None, dry_run=dry_run)
    from agentstate.context.manifest import event_refs_in_packs
    from agentstate.memory.indexes import event_index_set_aside
    from agentstate.memory.model import event_refs_cited
    from agentstate.runs.retention import apply_retention
    from agentstate.store.clock import format_ts

    try:
        cutoff = format_ts(store.clock.now() - timedelta(days=days))
    except OverflowError:  # a period longer than the calendar: nothing is that old
        cutoff = "0001-01-01T00:00:00.000000Z"
    keep = event_refs_cited(store) | event_refs_in_packs(store)
    result = GcResult(configured=True, keep_events_days=days, cutoff=cutoff, dry_run=dry_run,
                      cited=len(keep), bytes_before=_db_bytes(store))
    counts = apply_retention(store, cutoff, keep, dry_run=dry_run, bulk=event_index_set_aside)
    result.candidates, result.removed = counts.candidates, counts.removed
    result.collected, result.already_collected = counts.collected, counts.already_collected
    result.body_bytes = counts.body_bytes
    if not dry_run and (counts.removed or counts.collected):
        _compact(store)
        result.vacuumed = True
    result.bytes_after = _db_bytes(store)
    result.reclaimed = max(0, result.bytes_before - result.bytes_after)
    return result


def _compact(store: Store) -> None:
    """Merge the event indexes (deleted entries leave their b-trees), then give the freed
    pages back to the file system."""
    from agentstate.memory.indexes import optimize_indexes

    with store.transaction() as conn:
        optimize_indexes(conn, ["events_fts", "events_tri"])
    store.vacuum()


def _db_bytes(store: Store) -> int:
    total = 0
    for suffix in ("", "-wal"):
        path = store.db_path.with_name(store.db_path.name + suffix)
        if path.exists():
            total += path.stat().st_size
    return total
