"""The `agentstate` command line: a thin Typer layer over the domain modules.

Each sub-module registers the commands of one domain. Domain modules are imported inside the
command functions so `agentstate --help` stays fast (no GitPython, no tiktoken at start-up).
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentstate import __version__

app = typer.Typer(
    name="agentstate",
    help="Per-repository state for coding agents: run log, gated memory, budgeted context, "
    "versioned skills. Start with `agentstate init`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentstate {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    directory: Annotated[
        str | None,
        typer.Option(
            "--dir",
            envvar="AGENTSTATE_DIR",
            help="Use the store in this directory instead of searching upward from here.",
            show_envvar=True,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show version.")
    ] = False,
) -> None:
    ctx.obj = {"dir": directory}


def main() -> None:
    app()


# Each module adds its commands to `app` (or to a sub-app) when imported; they need `app`
# defined above, hence the imports at the bottom.
from agentstate.cli import (  # noqa: E402, F401, I001
    init_cmd,
    runs_cmd,
    import_cmd,
    doctor_cmd,
    memory_cmd,
    skills_cmd,
    exec_cmd,
    context_cmd,
)
