"""`agentstate doctor`: is the store healthy?"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, command_name, emit, store_override

if TYPE_CHECKING:
    from rich.console import Console

_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


@app.command()
def doctor(
    repair: Annotated[
        bool, typer.Option("--repair", help="Fix what can be fixed first: finish or roll back "
                                            "interrupted publishes, remove stale git locks, "
                                            "drop tags without rows and untagged commits, "
                                            "recreate missing tags, restore shipped skills.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Check the store: config parses, schema version and pending migrations, PRAGMA
    integrity_check, WAL mode, the tokenizer loads offline (hash-checked), the skills
    repository, interrupted publishes and git locks, the database mirror of the releases,
    and the installed agent hooks (does each command resolve; will Codex run them).

    Without --repair nothing is changed. Exits 1 when any check fails (warnings do not fail).
    """
    from agentstate.maintenance.doctor import diagnose
    from agentstate.output import envelope_error, print_json, to_jsonable
    from agentstate.store.db import find_store

    root = find_store(override=store_override())
    repaired: list[str] = []
    if repair:
        from agentstate.maintenance.repair import repair_store

        repaired = repair_store(root)
    report = diagnose(root)
    # The agents' hook settings live beside the store, in the repository and the user's
    # home: checked here, where the CLI may call both maintenance/ and integrations/.
    from agentstate.integrations.hook_checks import agent_hook_checks

    report.checks += agent_hook_checks(root.parent)
    failed = report.failed
    if as_json and failed:
        # The error envelope, plus the full report so a script can see every check.
        envelope = envelope_error(
            command_name(), "unhealthy", f"{len(failed)} check(s) failed: "
            + ", ".join(c.name for c in failed))
        envelope["data"] = to_jsonable(report) | {"healthy": False, "repaired": repaired}
        print_json(envelope)
        raise typer.Exit(1)

    def human(console: Console, _: object) -> None:
        console.print(f"store: {report.store}", markup=False)
        if repair:
            console.print(f"repaired: {len(repaired) or 'nothing to repair'}", markup=False)
            for action in repaired:
                console.print(f"  - {action}", markup=False)
        for check in report.checks:
            console.print(f"  {_MARK[check.status]} {check.name}: {check.detail}", markup=False)
        if failed:
            console.print(f"unhealthy: {len(failed)} check(s) failed", markup=False)
        else:
            console.print("healthy", markup=False)

    emit(to_jsonable(report) | {"healthy": report.healthy, "repaired": repaired},
         as_json=as_json,
         human=human)
    if failed:
        raise typer.Exit(1)
