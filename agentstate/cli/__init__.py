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


# Which modules define each top-level command. `main()` imports only the modules the command
# line needs: building every command's parameters costs ~50 ms per call, and agents call
# agentstate on every turn. `--help`, no command or an unknown one load everything, so help
# and "no such command" stay complete. A test checks this table against what the modules
# actually register.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "init": ("init_cmd",),
    "run": ("runs_cmd", "memory_cmd"),  # memory_cmd adds `run distill`
    "log": ("runs_cmd",),
    "events": ("runs_cmd",),
    "checkpoint": ("runs_cmd",),
    "resume": ("runs_cmd",),
    "import": ("import_cmd",),
    "doctor": ("doctor_cmd",),
    "remember": ("memory_cmd",),
    "recall": ("memory_cmd",),
    "forget": ("memory_cmd",),
    "memory": ("memory_cmd",),
    "skill": ("skills_cmd",),
    "exec": ("exec_cmd",),
    "context": ("context_cmd",),
    "trace": ("context_cmd",),
    "hooks": ("hooks_cmd",),
    "hook": ("hooks_cmd",),
    "mcp": ("mcp_cmd",),
    "eval": ("eval_cmd",),
}
ALL_MODULES = (
    "init_cmd", "runs_cmd", "import_cmd", "doctor_cmd", "memory_cmd", "skills_cmd",
    "exec_cmd", "context_cmd", "hooks_cmd", "mcp_cmd", "eval_cmd",
)
_ROOT_OPTIONS_WITH_VALUE = {"--dir"}


def modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules needed for this command line (all of them when unsure)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _ROOT_OPTIONS_WITH_VALUE:
            skip = True
            continue
        if arg.startswith("-"):
            continue
        return COMMAND_MODULES.get(arg, ALL_MODULES)
    return ALL_MODULES


def load_commands(modules: tuple[str, ...] = ALL_MODULES) -> None:
    """Import command modules; each registers its commands on `app` when first imported."""
    import importlib

    for name in modules:
        importlib.import_module(f"agentstate.cli.{name}")


def main() -> None:
    import sys

    argv = sys.argv[1:]
    load_commands(modules_for(argv))
    own = argv[: argv.index("--")] if "--" in argv else argv  # after `--`: exec's command
    as_json = "--json" in own
    try:
        from typer._click.exceptions import ClickException
    except ImportError:  # older Typer used click itself
        from click.exceptions import ClickException
    from typer import Abort

    # Usage errors are reported here rather than by click's standalone mode for two reasons:
    # with --json they come as the error envelope on stdout (a caller reading stdout always
    # gets exactly one JSON document), and their text is passed through the secret redactor
    # (click quotes the offending value, which may be a token pasted into the wrong option).
    try:
        code = app(standalone_mode=False)
    except ClickException as exc:
        from agentstate.safety import redact_secrets

        exc.message = redact_secrets(exc.message)
        if as_json:
            from agentstate.cli.common import context_command
            from agentstate.output import envelope_error, print_json

            print_json(envelope_error(context_command(getattr(exc, "ctx", None)),
                                      "usage" if exc.exit_code == 2 else "error",
                                      exc.format_message()))
        else:
            exc.show()
        sys.exit(exc.exit_code)
    except Abort:
        if as_json:
            from agentstate.output import envelope_error, print_json

            print_json(envelope_error("agentstate", "aborted", "aborted"))
        else:
            sys.stderr.write("Aborted.\n")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
