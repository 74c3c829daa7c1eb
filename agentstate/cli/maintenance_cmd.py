"""`agentstate backup`, `restore` and `gc`: the store as one file, and the retention period."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, acting_as, cli_store, emit, store_override

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.maintenance.backup import BackupResult
    from agentstate.maintenance.gc import GcResult
    from agentstate.maintenance.restore import RestoreResult


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


@app.command()
def backup(
    out: Annotated[
        Path | None, typer.Option("--out", metavar="FILE", help="Write the backup to this file "
                                  "(it must not exist yet), or into this folder. Default: "
                                  "agentstate-backup-YYYYMMDDTHHMMSS.tar.gz in the current "
                                  "folder.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Copy the store into one file while agents keep working: a consistent snapshot of
    state.db (VACUUM INTO), a git bundle of the skills registry, config.toml and a manifest
    (format version, agentstate version, migrations, time). Restore it with `agentstate
    restore FILE`. The file holds everything the store holds: keep it private."""
    from agentstate.maintenance.backup import backup as make_backup

    with cli_store() as store:
        result = make_backup(store, out, principal=acting_as(store))

    def human(console: Console, r: BackupResult) -> None:
        console.print(f"backup: {r.path} ({_size(r.bytes)}; database {_size(r.db_bytes)}, "
                      f"{r.skills_refs} skills refs, schema {r.migrations[-1]}) in "
                      f"{r.seconds:.1f} s", markup=False)
        from agentstate.output import warn

        for warning in r.warnings:
            warn(warning)

    emit(result, as_json=as_json, human=human)


@app.command()
def restore(
    file: Annotated[Path, typer.Argument(help="A file made by `agentstate backup`.",
                                         show_default=False)],
    force: Annotated[
        bool, typer.Option("--force", help="Replace the store that is there (it is kept "
                                           "aside inside the new one as before-restore-…/).")
    ] = False,
    ignore_live_purges: Annotated[
        bool, typer.Option("--ignore-live-purges",
                           help="Restore even when the live store's database cannot be read, "
                                "so purges made after the backup cannot be re-applied.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Replace the store with a backup. The file is checked first (a bad file changes
    nothing). A store that is there is replaced only with --force and kept aside; the purges
    it recorded are applied to the restored copy, so purged text does not come back. Stop
    running agents first: a command already waiting to write finishes in the old store."""
    from agentstate.maintenance.restore import restore as do_restore
    from agentstate.store.clock import clock_from_env, ids_from_env

    result = do_restore(file, override=store_override(), force=force,
                        ignore_live_purges=ignore_live_purges, clock=clock_from_env(),
                        ids=ids_from_env())

    def human(console: Console, r: RestoreResult) -> None:
        console.print(f"restored {r.store} from {r.backup} (made {r.backup_created[:19]})",
                      markup=False)
        if r.kept_aside:
            console.print(f"the replaced store is kept at {r.kept_aside}", markup=False)
        for path in r.removed_aside:
            console.print(f"removed an older replaced store: {path}", markup=False)
        if r.aside_copies:
            total = sum(copy.bytes for copy in r.aside_copies)
            console.print(f"replaced stores kept: {len(r.aside_copies)}, {total / 1e6:.1f} MB "
                          "in all (the newest [retention] keep_restore_copies stay)",
                          markup=False)
        if r.migrations_applied:
            console.print(f"migrations applied: {', '.join(r.migrations_applied)}",
                          markup=False)
        console.print(f"purge tombstones carried: {r.tombstones}; purged again: "
                      f"{', '.join(r.purged_again) or 'none'}", markup=False)
        for where, count in r.carried.items():
            console.print(f"  scrubbed values taken from the live store: {where} ({count})",
                          markup=False)
        for line in r.still_in:
            console.print(f"  still in: {line}", markup=False)
        if r.rewrite_command:
            console.print(f"  rewrite the skills history: {r.rewrite_command}", markup=False)
        from agentstate.output import warn

        for warning in r.warnings:  # diagnostics: stderr, as every command prints them
            warn(warning)

    emit(result, as_json=as_json, human=human)


@app.command()
def gc(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be removed; change nothing.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Apply the retention period ([retention] keep_events_days in config.toml): remove the
    events of finished runs older than that, then VACUUM. Events a memory cites as evidence
    or source, or a stored context pack lists, keep their ref, kind and a hash (`trace`
    says the body was collected). With keep_events_days = 0 (the default) nothing is
    removed."""
    from agentstate.maintenance.gc import gc as run_gc

    with cli_store() as store:
        result = run_gc(store, dry_run=dry_run, principal=acting_as(store))

    def human(console: Console, r: GcResult) -> None:
        if not r.configured:
            console.print("retention is not configured ([retention] keep_events_days = 0 "
                          "keeps every event): nothing removed", markup=False)
            return
        verb = "would remove" if r.dry_run else "removed"
        console.print(f"events of finished runs before {(r.cutoff or '')[:19]} "
                      f"(keep_events_days = {r.keep_events_days}): {r.candidates}", markup=False)
        console.print(f"  {verb}: {r.removed}; bodies {'to collect' if r.dry_run else 'collected'}"
                      f" (cited, kept as ref + hash): {r.collected}"
                      + (f" (+{r.already_collected} earlier)" if r.already_collected else ""),
                      markup=False)
        console.print(f"  event text and meta: {_size(r.body_bytes)}", markup=False)
        if not r.dry_run:
            how = " (rewritten with what stays)" if r.rewritten else ""
            console.print(f"  database {_size(r.bytes_before)} → {_size(r.bytes_after)}: "
                          f"{_size(r.reclaimed)} reclaimed{how}", markup=False)

    emit(result, as_json=as_json, human=human)
