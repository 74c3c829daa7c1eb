"""Team sync of shared facts through the host repository (`agentstate sync`).

Sits above the memory domain (like maintenance/): it reads and writes memories through
memory/'s functions and owns one table of its own (`shared_records`, see shared_tables.py); memory/
never imports it. The line format is in records.py, the files on disk (read confined and
bounded, written in id order) in shared_files.py, export.py writes, merge.py imports (what a
record meets on arriving in arrival.py, new chains written in bulk in merge_batch.py),
gitsetup.py keeps git merging the files by union.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.sync.records import SHARED_DIR

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal


@dataclass
class SyncResult:
    folder: str
    dry_run: bool
    exported: int = 0  # memory records written
    exported_evidence: int = 0
    exported_tombstones: int = 0
    removed_lines: int = 0  # lines of purged records taken out of the files
    imported: int = 0
    tombstoned: int = 0
    contested: int = 0
    skipped: int = 0
    pending_tombstones: int = 0
    files_written: list[str] = field(default_factory=list)
    refs: dict[str, list[str]] = field(default_factory=dict)  # imported/contested/tombstoned
    skipped_items: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary_lines(self, exported: bool = True, imported: bool = True) -> list[str]:
        """What `agentstate sync` prints for people (the CLI and the start-up fast path in
        agentstate/entry.py print these same lines)."""
        would = "would be " if self.dry_run else ""
        lines = []
        if exported:
            lines.append(f"exported: {self.exported} memor{'y' if self.exported == 1 else 'ies'}"
                         f", {self.exported_evidence} evidence ref(s), "
                         f"{self.exported_tombstones} tombstone(s) {would}written to "
                         f"{self.folder}")
            if self.removed_lines:
                lines.append(f"  {self.removed_lines} line(s) of purged records {would}"
                             "removed (older commits still hold them: rewrite git history "
                             "to erase them there)")
        if imported:
            lines.append(f"imported: {self.imported}, contested: {self.contested}, "
                         f"tombstoned: {self.tombstoned}" + (f" ({would}applied)" if would
                                                             else ""))
            lines += [f"  contested {ref}: `agentstate memory show {ref}`; confirm it or "
                      "forget it to settle" for ref in self.refs.get("contested", [])]
        lines += [f"skipped {item.get('where') or item.get('what')}: {item['reason']}"
                  for item in self.skipped_items]
        lines += [f"note: {warning}" for warning in self.warnings]
        return lines


def shared_path(store: Store) -> Path:
    return Path(store.root) / SHARED_DIR


def _flags(include_candidates: bool, include_quarantined: bool, principal: Principal | str
           ) -> str:
    # By name: the command line passes the Principal it resolved, the fast path likewise.
    name = principal if isinstance(principal, str) else principal.name
    return f"{include_candidates}|{include_quarantined}|{name}"


def nothing_new(store: Store, *, include_candidates: bool = False,
                include_quarantined: bool = False, principal: Principal | str
                ) -> SyncResult | None:
    """The result of a full sync when nothing changed since the last one (same memories,
    mappings, shared files, config and options: the stored digest says so), else None.
    Skips reading the folder and planning every version (issue 24)."""
    from agentstate.sync.gitsetup import ignore_warning
    from agentstate.sync.shared import nothing_new_digest, stored_digest

    path = shared_path(store)
    flags = _flags(include_candidates, include_quarantined, principal)
    digest = nothing_new_digest(store, path, flags)
    if digest is None or stored_digest(store) != digest:
        return None
    result = SyncResult(folder=str(path), dry_run=False)
    warning = ignore_warning(store.work_tree, path)
    if warning:
        result.warnings.append(warning)
    return result


def sync(store: Store, *, do_export: bool = True, do_import: bool = True,
         dry_run: bool = False, include_candidates: bool = False,
         include_quarantined: bool = False, principal: Principal | str) -> SyncResult:
    """Export then import (either alone on request). Bad shared files fail before anything
    is written (InvalidInput naming the file and line)."""
    result = SyncResult(folder=str(shared_path(store)), dry_run=dry_run)
    full = do_export and do_import and not dry_run
    flags = _flags(include_candidates, include_quarantined, principal)
    if full:
        unchanged = nothing_new(store, include_candidates=include_candidates,
                                include_quarantined=include_quarantined, principal=principal)
        if unchanged is not None:
            return unchanged
    # The folder's records, the export's lines and the import's rows are many small objects
    # with no cycle among them: the cyclic collector's passes over them free nothing
    # (store/collector.py). Off for the whole job rather than for each step: the objects
    # of a step were walked once more by the pass that followed it, and they are freed as
    # the job returns, before the collector is back (issue 24: ~8 ms of a first export).
    from agentstate.store.collector import without_collector

    return without_collector(lambda: _sync_folder(
        store, result, do_export=do_export, do_import=do_import, dry_run=dry_run,
        include_candidates=include_candidates, include_quarantined=include_quarantined,
        principal=principal, full=full, flags=flags))


def _sync_folder(store: Store, result: SyncResult, *, do_export: bool, do_import: bool,
                 dry_run: bool, include_candidates: bool, include_quarantined: bool,
                 principal: Principal | str, full: bool, flags: str) -> SyncResult:
    """`sync` past the digest's check."""
    # Imported only past the digest: export, merge and the record format pull in the secret
    # scanner (dozens of regular expressions to compile), ~100 ms that a sync with nothing
    # new never uses (issue 24: ≤ 0.2 s as a whole process).
    from agentstate.sync.export import (
        plan_export,
        removed_lines,
        updated,
        write_export,
        written_digests,
    )
    from agentstate.sync.gitsetup import ensure_gitattributes, ignore_warning
    from agentstate.sync.merge import import_folder
    from agentstate.sync.shared import (
        checked_files,
        keep_checked_files,
        keep_digest,
        nothing_new_digest,
        purged_record_ids,
    )
    from agentstate.sync.shared_files import read_folder

    path = shared_path(store)
    folder = read_folder(path, skip=purged_record_ids(store), checked=checked_files(store))
    checked = dict(folder.digests)  # every file read passed the checks (or it raised)
    if do_export:
        plan = plan_export(store, folder, include_candidates=include_candidates,
                           include_quarantined=include_quarantined)
        result.exported = plan.count("memory")
        result.exported_evidence = plan.count("evidence")
        result.exported_tombstones = plan.count("forget", "purge")
        result.removed_lines = len(removed_lines(folder, plan.dropped))
        result.skipped_items += plan.skipped
        if not dry_run:
            result.files_written = write_export(store, folder, plan)
            if result.files_written or path.is_dir():
                # Per clone (.git/info/attributes), nothing to commit: a store made before
                # the rule moved there, or joined from a clone, gets it here.
                ensure_gitattributes(store.root)
            if do_import:  # the folder as the export left it: only the import reads it
                folder = updated(folder, plan)
            # What the export wrote is checked lines kept and lines it made itself.
            checked.update(written_digests(path, result.files_written, plan.written))
    if not dry_run:
        keep_checked_files(store, checked)
    if do_import:
        merged = import_folder(store, folder, principal=principal, dry_run=dry_run)
        result.imported = len(merged.imported)
        result.contested = len(merged.contested)
        result.tombstoned = len(merged.tombstoned)
        result.pending_tombstones = merged.pending_tombstones
        result.skipped_items += merged.skipped
        result.refs = {"imported": merged.imported, "contested": merged.contested,
                       "tombstoned": merged.tombstoned, "purged": merged.purged}
    result.skipped = len(result.skipped_items)
    # Kept only after a sync that found nothing to do: its inputs are then a fixed point, so
    # the same inputs next time need no work either. (One that skipped records or holds
    # tombstones for unknown records says so on every run, so it is never skipped.)
    idle = not (result.exported or result.exported_evidence or result.exported_tombstones
                or result.removed_lines or result.files_written or result.imported
                or result.contested or result.tombstoned or result.skipped
                or result.pending_tombstones)
    digest = nothing_new_digest(store, path, flags) if full and idle else None
    if digest is not None:
        keep_digest(store, digest)
    warning = ignore_warning(store.work_tree, path)
    if warning:
        result.warnings.append(warning)
    return result
