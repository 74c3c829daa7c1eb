"""`agentstate doctor`: is the store healthy?"""

from __future__ import annotations

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, command_name, emit, store_override

_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


@app.command()
def doctor(as_json: JsonOption = False) -> None:
    """Check the store without changing it: config parses, schema version and pending
    migrations, PRAGMA integrity_check, WAL mode, the tokenizer loads offline (hash-checked),
    and the skills repository (a git repository; clean or dirty; HEAD).

    Exits 1 when any check fails (warnings do not fail).
    """
    from agentstate.output import envelope_error, print_json, to_jsonable
    from agentstate.store.db import find_store
    from agentstate.store.doctor import diagnose

    report = diagnose(find_store(override=store_override()))
    failed = report.failed
    if as_json and failed:
        # The error envelope, plus the full report so a script can see every check.
        envelope = envelope_error(
            command_name(), "unhealthy", f"{len(failed)} check(s) failed: "
            + ", ".join(c.name for c in failed))
        envelope["data"] = to_jsonable(report) | {"healthy": False}
        print_json(envelope)
        raise typer.Exit(1)

    def human(console, _):
        console.print(f"store: {report.store}", markup=False)
        for check in report.checks:
            console.print(f"  {_MARK[check.status]} {check.name}: {check.detail}", markup=False)
        if failed:
            console.print(f"unhealthy: {len(failed)} check(s) failed", markup=False)
        else:
            console.print("healthy", markup=False)

    emit(to_jsonable(report) | {"healthy": report.healthy}, as_json=as_json,
         human=human)
    if failed:
        raise typer.Exit(1)
