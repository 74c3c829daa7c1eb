"""The `agentstate` command line: a thin Typer layer over the domain modules.

Each sub-module registers the commands of one domain. Domain modules are imported inside the
command functions so `agentstate --help` stays fast (no GitPython, no tiktoken at start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from typer import _click as click  # the click that typer builds its trees with

from agentstate.distribution import __version__

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
        from agentstate.cli import boundary

        if boundary.json_requested(boundary.current()):
            from agentstate.output import envelope_ok, print_json

            print_json(envelope_ok("version", {"version": __version__}))
        else:
            typer.echo(f"agentstate {__version__}")
        raise typer.Exit()


@app.callback()
def root(
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
    # Nothing to do here: the parsed options stay on the root context, where commands read
    # --dir (boundary.store_override) once the boundary has recorded their context.
    return


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
    "skill": ("skills_cmd", "skill_share_cmd"),
    "exec": ("exec_cmd",),
    "context": ("context_cmd",),
    "trace": ("context_cmd",),
    "hooks": ("hooks_cmd",),
    "hook": ("hooks_cmd",),
    "mcp": ("mcp_cmd",),
    "eval": ("eval_cmd",),
    "backup": ("maintenance_cmd",),
    "restore": ("maintenance_cmd",),
    "gc": ("maintenance_cmd",),
    "sync": ("sync_cmd",),
    "ui": ("ui_cmd",),
}
ALL_MODULES = (
    "init_cmd", "runs_cmd", "import_cmd", "doctor_cmd", "memory_cmd", "skills_cmd",
    "skill_share_cmd", "exec_cmd", "context_cmd", "hooks_cmd", "mcp_cmd", "eval_cmd",
    "maintenance_cmd", "sync_cmd", "ui_cmd",
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


# Click trees built by `command_tree`, by the set of command modules loaded. Building one
# reads every command's signature and type hints (~0.1 s for the whole tree): once per
# process is enough, and a process that runs many command lines (the tests, the library
# face) would otherwise pay it on every call. Commands keep no state between calls.
_TREES: dict[frozenset[str], click.Command] = {}


def command_tree() -> click.Command:
    """The click tree of the commands loaded so far, built once and watched by the boundary."""
    import sys

    from agentstate.cli import boundary

    loaded = frozenset(name for name in ALL_MODULES if f"agentstate.cli.{name}" in sys.modules)
    tree = _TREES.get(loaded)
    if tree is None:
        tree = _TREES[loaded] = typer.main.get_command(app)
        boundary.name_metavars(tree)
        boundary.watch(tree)
    return tree


def main(argv: list[str] | None = None) -> None:
    """The console entry point: parse and run one command line inside the error boundary
    (agentstate.cli.boundary), then exit with its code."""
    import sys

    from agentstate.cli import boundary

    typed = sys.argv[1:] if argv is None else list(argv)
    invocation = boundary.begin(typed)
    args = boundary.global_options_first(typed)

    def invoke() -> object:
        boundary.reject_impossible(args)
        load_commands(modules_for(args))
        command = command_tree()
        # Parsed and invoked here rather than through click's standalone `main()`: that one
        # turns Ctrl-C into a bare exit (or "Aborted!") and prints usage errors itself,
        # before the boundary could answer with the envelope.
        with command.make_context(boundary.PROGRAM, list(args)) as ctx:
            return command.invoke(ctx)

    sys.exit(boundary.run(invoke, invocation))
