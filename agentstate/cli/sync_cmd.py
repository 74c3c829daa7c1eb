"""`agentstate sync`: share facts with teammates through the repository's own git."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import AsOption, JsonOption, acting_as, cli_store, emit

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.sync import SyncResult


@app.command("sync")
def sync_command(
    export_only: Annotated[bool, typer.Option(
        "--export-only", help="Write this store's shareable facts and tombstones to "
                              ".agentstate/shared/; read nothing back.")] = False,
    import_only: Annotated[bool, typer.Option(
        "--import-only", help="Read what teammates committed to .agentstate/shared/; add "
                              "no records there (what the git hooks run).")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Count what would be exported and imported; change nothing.")] = False,
    include_candidates: Annotated[bool, typer.Option(
        "--include-candidates", help="Also export candidates (memories still waiting for "
                                     "evidence); they arrive as candidates.")] = False,
    include_quarantined: Annotated[bool, typer.Option(
        "--include-quarantined", help="Also export quarantined memories (text that read as "
                                      "instructions); they arrive quarantined.")] = False,
    principal: AsOption = None,
    as_json: JsonOption = False,
) -> None:
    """Share facts through the repository: export, then import.

    Export writes memories of the repo, branch: and path: scopes (never user or run:),
    their version chains, evidence refs (not event bodies) and tombstones of forgotten or
    purged ones (a purge tombstone names the record by its id, never the text) as sorted
    JSONL under .agentstate/shared/, scanned for secrets. Import merges what teammates
    committed: by content-derived ids, idempotent, tombstones win, a rival value for the
    same fact is contested, never an overwrite; one transaction.

    Commit .agentstate/shared/ (git add .agentstate). The union merge rule for it goes to
    this clone's .git/info/attributes, nothing to commit. A shared file that is not valid
    JSON, a record of an unknown format version or an id used for two contents stops the
    sync naming the file and line (exit 1), with nothing applied. See docs/team.md.
    """
    from agentstate.errors import UsageError

    if export_only and import_only:
        raise UsageError("pass --export-only or --import-only, not both")
    from agentstate.sync import sync

    with cli_store() as store:
        result = sync(store, do_export=not import_only, do_import=not export_only,
                      dry_run=dry_run, include_candidates=include_candidates,
                      include_quarantined=include_quarantined,
                      principal=acting_as(store, principal))

    def human(console: Console, data: SyncResult) -> None:
        for line in data.summary_lines(exported=not import_only, imported=not export_only):
            console.print(line, markup=False)

    emit(result, as_json=as_json, human=human)
