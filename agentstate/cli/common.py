"""What every CLI module shares: the --json option, the store, and the one error handler."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from agentstate.errors import AgentStateError
from agentstate.output import envelope_error, info, print_json

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON object (the result envelope) to stdout.")
]
AsOption = Annotated[
    str | None,
    typer.Option("--as", help="Principal (declared in config.toml [principals]); default: "
                              "AGENTSTATE_PRINCIPAL, then [principals] default."),
]
RunOption = Annotated[
    str | None, typer.Option("--run", help="Run ref (run:…); default: the current run.")
]


def current_context() -> typer.Context | None:
    """The active command's context (Typer >= 0.29 vendors click under typer._click)."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # older Typer used click itself
        from click import get_current_context
    return get_current_context(silent=True)


def command_name() -> str:
    """`run start`, `memory show`…: the command path without the program name."""
    ctx = current_context()
    return context_command(ctx) if ctx is not None else "agentstate"


def context_command(ctx: Any) -> str:
    """The sub-command names of a click context, e.g. `run show` (never the program name,
    which is `python -m agentstate` when run as a module)."""
    parts = []
    while ctx is not None and ctx.parent is not None:
        parts.append(ctx.info_name)
        ctx = ctx.parent
    return " ".join(reversed(parts)) or "agentstate"


def store_override() -> str | None:
    ctx = current_context()
    root = ctx.find_root() if ctx else None
    obj = root.obj if root and isinstance(root.obj, dict) else {}
    return obj.get("dir")


@contextmanager
def cli_store(migrate: bool = True) -> Iterator[Any]:
    """Open the store named by --dir / AGENTSTATE_DIR / the working directory."""
    from agentstate.store.db import open_store

    store = open_store(store_override(), migrate=migrate)
    try:
        yield store
    finally:
        store.close()


def fail(exc: AgentStateError, as_json: bool) -> None:
    """Report an error in the envelope (or one stderr line) and exit with its code."""
    if as_json:
        print_json(envelope_error(command_name(), exc.code, exc.message, exc.details))
    else:
        info(f"error: {exc.message}")
    raise typer.Exit(exc.exit_code)


def as_agentstate_error(exc: BaseException) -> AgentStateError | None:
    """Map the failures a user can cause (bad db file, read-only dir) to our error family."""
    from agentstate.store.db import translate_sqlite_error

    if isinstance(exc, AgentStateError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return translate_sqlite_error(exc)
    if isinstance(exc, PermissionError):
        return AgentStateError(f"permission denied: {exc.filename or exc}")
    if isinstance(exc, OSError):
        return AgentStateError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    return None


def handle_errors(fn: Callable) -> Callable:
    """The one error handler: our errors → message + exit code; never a traceback for them."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json", False))
        try:
            return fn(*args, **kwargs)
        except (AgentStateError, sqlite3.Error, OSError) as exc:
            mapped = as_agentstate_error(exc)
            assert mapped is not None
            fail(mapped, as_json)

    return wrapper


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
