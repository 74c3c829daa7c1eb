"""What every CLI module shares: the --json option, the store, and the success envelope.

Errors need nothing here: commands raise the error family (agentstate.errors) and the one
boundary (agentstate.cli.boundary) reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, TypeVar, overload

import typer

from agentstate.cli.boundary import command_name, store_override

if TYPE_CHECKING:
    from rich.console import Console

    from agentstate.runs.records import Run
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal

__all__ = ["AsOption", "JsonOption", "RunOption", "acting_as", "cli_store",
           "command_name", "emit", "from_stdin", "parse_key_values", "read_stdin",
           "store_override"]

STDIN = "-"  # as a text argument: read the text from standard input

# Eager: parsed before the command's other parameters, so that a usage error in any of them
# (`--limit abc --json`) still knows to answer with the envelope.
JsonOption = Annotated[
    bool, typer.Option("--json", is_eager=True,
                       help="Print one JSON object (the result envelope) to stdout.")
]
AsOption = Annotated[
    str | None,
    typer.Option("--as", help="Principal (declared in config.toml [principals]); default: "
                              "AGENTSTATE_PRINCIPAL, then [principals] default."),
]
RunOption = Annotated[
    str | None, typer.Option("--run", help="Run ref (run:…); default: the current run.")
]


def acting_as(store: Store, name: str | None = None) -> Principal:
    """The principal a command acts for: the environment's, narrowed by `--as NAME`.
    Decided here, once per command, and passed down: below the entry points nothing falls
    back to the environment (store/principals.py, `acting`)."""
    from agentstate.store.principals import resolve_principal

    return resolve_principal(store, name)


@contextmanager
def cli_store(migrate: bool = True) -> Iterator[Store]:
    """Open the store named by --dir / AGENTSTATE_DIR / the working directory."""
    from agentstate.maintenance.join import open_or_join
    from agentstate.output import info

    # A fresh clone of a repository that shares .agentstate/ gets its store on first use.
    store, joined = open_or_join(store_override(), migrate=migrate)
    if joined is not None:
        info(joined.summary())
    elif store.backup is not None:
        count = len(store.upgraded)
        info(f"upgraded this store's database ({count} migration{'' if count == 1 else 's'}: "
             f"{', '.join(store.upgraded)}); the database from before is kept at "
             f"{store.backup}")
    try:
        before = _current_run(store)
        yield store
        _say_if_current_run_changed(before, _current_run(store))
    finally:
        store.close()


def _current_run(store: Store) -> Run | None:
    """The current run, or None (also for a store whose schema is not there yet)."""
    import sqlite3

    from agentstate.runs.log import current_run

    try:
        return current_run(store)
    except sqlite3.Error:
        return None


def _say_if_current_run_changed(before: Run | None, after: Run | None) -> None:
    """Whichever command moved the current run (an import creating a run, a hook starting
    one) says so on stderr: the next `log` goes there. `run start` prints the new run's ref
    itself; after `run end` there is no current run (another active run never takes over)."""
    from agentstate.output import info

    before_ref = before.ref if before is not None else None
    if before_ref == (after.ref if after is not None else None) \
            or command_name() == "run start" or (after is None and command_name() == "run end"):
        return
    if after is None:
        info(f"there is no current run now (was {before_ref})")
    else:
        was = f", was {before.ref}" if before else ""
        info(f"the current run is now {after.ref}{was}: {after.goal[:60]}")


# What a command hands `emit`: its `human` renderer is checked against the same type.
T = TypeVar("T")


def emit(
    data: T,
    *,
    as_json: bool,
    human: Callable[[Console, T], None] | None = None,
) -> None:
    """Print a command's result: the success envelope (named like the error envelopes, by
    `command_name`) or, for people, through `human`."""
    import json

    from agentstate.output import envelope_ok, print_json, stdout_console, to_jsonable

    if as_json:
        print_json(envelope_ok(command_name(), data))
        return
    console = stdout_console()
    if human is not None:
        human(console, data)
    elif data is not None:
        console.print(data if isinstance(data, str) else json.dumps(to_jsonable(data), indent=2))


def read_stdin(what: str) -> str:
    """All of standard input as text. Undecodable input follows the rule for arguments and
    files: it is refused (one line naming it), never stored with the bad bytes replaced."""
    import sys

    from agentstate.errors import InvalidInput

    stream = sys.stdin
    raw = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode(
        "utf-8", "surrogateescape")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} from stdin is not valid UTF-8 (byte {exc.start + 1})",
                           details={"argument": what}) from None


@overload
def from_stdin(value: str, what: str) -> str: ...
@overload
def from_stdin(value: None, what: str) -> None: ...
def from_stdin(value: str | None, what: str) -> str | None:
    """`-` means: read this text from standard input (text longer than the OS allows on a
    command line, or kept out of the shell history)."""
    return read_stdin(what) if value == STDIN else value


def parse_key_values(items: list[str] | None, option: str = "--meta") -> dict[str, str]:
    """KEY=VALUE pairs from repeated options."""
    from agentstate.errors import InvalidInput

    result: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"{option} expects KEY=VALUE, got {item!r}")
        result[key.strip()] = value
    return result
