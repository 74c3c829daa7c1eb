"""`agentstate gc`: the retention period applied to the run log, then VACUUM.

Composition above the domains: the memory domain names the events memories cite, the
context domain the events stored packs list, and the runs domain removes the rest
(agentstate.runs.retention). The period is `[retention] keep_events_days`; 0 (the default)
keeps everything and gc changes nothing. The cutoff comes from the store's one clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from agentstate.runs.retention import RetentionCounts
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
    rewritten: bool = False     # the store was rewritten with what stays (most rows went)


def gc(store: Store, *, dry_run: bool = False, principal: Principal | str,
       rewrite: bool | None = None) -> GcResult:
    """`rewrite`: None chooses by the share removed (see `_remove`); True or False forces
    the rewrite or the in-place removal (the tests compare the two)."""
    from agentstate.store.principals import acting, check_whole_store

    # Removing events of every run is an owner action (a dry run changes nothing).
    if not dry_run:
        check_whole_store(acting(store, principal), "collect events (gc)",
                          write=True)
    days = store.settings.retention.keep_events_days
    if days <= 0:
        return GcResult(configured=False, keep_events_days=days, cutoff=None, dry_run=dry_run)
    from agentstate.context.pack_refs import event_refs_in_packs
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
    if dry_run:
        counts = apply_retention(store, cutoff, keep, dry_run=True)
    else:
        counts = _remove(store, cutoff, keep, result, rewrite)
    result.candidates, result.removed = counts.candidates, counts.removed
    result.collected, result.already_collected = counts.collected, counts.already_collected
    result.body_bytes = counts.body_bytes
    result.bytes_after = _db_bytes(store)
    result.reclaimed = max(0, result.bytes_before - result.bytes_after)
    return result


def _remove(store: Store, cutoff: str, keep: set[str], result: GcResult,
            rewrite_store: bool | None) -> RetentionCounts:
    """Remove under the store's write lock, choosing by the share removed: when more rows go
    than stay, the store is rewritten with what stays (store/rewrite.py: a copy of the rows
    that stay, copied back in one transaction); otherwise rows are deleted in place, in time
    proportional to what goes, and the file is compacted (VACUUM). Either way removed text
    leaves the file."""
    from agentstate.memory.indexes import event_index_rewrite_plan
    from agentstate.runs.retention import (
        COLLECTED,
        drop_marks,
        mark_retention,
        remove_in_place,
        rewrite_plan,
        stay_count,
    )
    from agentstate.store.rewrite import Rewrite

    with Rewrite(store) as rewrite:
        counts = mark_retention(rewrite.conn, cutoff, keep)
        if rewrite_store is None:
            rewrite_store = counts.removed > stay_count(rewrite.conn, counts.removed)
        if rewrite_store:
            plan = rewrite_plan(store.root, store.now()).add(
                event_index_rewrite_plan(COLLECTED))
            rewrite.build(plan)
            rewrite.swap()
            result.rewritten = result.vacuumed = True
            return counts
        if counts.removed or counts.collected:
            remove_in_place(rewrite.conn, store.root, store.now())
        drop_marks(rewrite.conn)
        rewrite.commit()
    if counts.removed or counts.collected:
        _compact(store)
        result.vacuumed = True
    return counts


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
