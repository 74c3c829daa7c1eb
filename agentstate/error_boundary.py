"""What every entry point does with what it caught: one mapping from an exception to the
error it reports, and one crash log for the exceptions that are bugs.

The entry points are the command line (cli/boundary.py, which adds what is particular to a
command line: usage errors, --json, a closed pipe), the MCP server
(integrations/mcp_server.py) and the agent and git hooks (integrations/hook_runner.py). Each
hands what it caught to `classify` and reports the `Failure` in its own medium:

| caught                            | reported as                       | exit     |
|-----------------------------------|-----------------------------------|----------|
| an `AgentStateError`              | itself (its code and message)     | its own  |
| `sqlite3.Error`, `OSError`        | our error for it (store/db.py)    | 1        |
| `ValueError` naming a null byte   | invalid_input                     | 1        |
| `KeyboardInterrupt`               | interrupted                       | 130      |
| anything else (a bug)             | internal, with a crash log        | 70       |

Over JSON-RPC (the MCP resume resource) not_found is -32002, every other error -32603.
A hook always exits 0 whatever it caught (a hook must never break the agent); it writes the
message to the store's hook error log instead. MCP tools answer an `isError` result carrying
the error envelope; the resume resource raises the JSON-RPC error above.

The crash log holds the traceback with secrets redacted, in a new private file under the
per-user cache (never in the repository): the same for every entry point.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

from agentstate.errors import AgentStateError, Internal, Interrupted, InvalidInput
from agentstate.output import shorten

PROGRAM = "agentstate"
MESSAGE_WIDTH = 200  # an unexpected exception's text in the one-line report

# JSON-RPC error codes for a failed MCP request: the spec's "resource not found", else
# "internal error" (the message says which of our errors it was).
JSONRPC_NOT_FOUND = -32002
JSONRPC_INTERNAL = -32603


@dataclass(frozen=True)
class Failure:
    """What an entry point reports: the error (code, redacted message, exit code, details)
    and, for a bug, the crash log its traceback went to (None when it could not be
    written: the message then says why)."""

    error: AgentStateError
    crash_log: Path | None = None
    # An exception outside the mapping (a bug), whether or not its crash log got written;
    # an `Internal` raised on purpose is reported like any other error of ours.
    bug: bool = False

    @property
    def jsonrpc_code(self) -> int:
        return jsonrpc_code(self.error.code)


def jsonrpc_code(code: str) -> int:
    """The JSON-RPC error code for one of our error codes (`not_found`, `internal`, …)."""
    return JSONRPC_NOT_FOUND if code == "not_found" else JSONRPC_INTERNAL


def classify(exc: BaseException, argv: list[str]) -> Failure:
    """The one mapping (see the table above). `argv` is the entry point's command line (the
    MCP tool or hook event, for those), written into the crash log of a bug."""
    if isinstance(exc, KeyboardInterrupt):
        return Failure(Interrupted())
    if isinstance(exc, AgentStateError | sqlite3.Error | OSError):
        from agentstate.store.db import as_agentstate_error

        mapped = as_agentstate_error(exc)
        if mapped is not None:
            return Failure(mapped)
    if isinstance(exc, ValueError) and "null byte" in str(exc):
        # A NUL in a file name (reachable only through Python, never a real command line).
        return Failure(InvalidInput("a file name cannot contain a NUL character"))
    return internal(exc, argv)


def internal(exc: BaseException, argv: list[str]) -> Failure:
    """A bug: the traceback goes to a crash log, the error names it in one line."""
    what = shorten(f"{type(exc).__name__}: {exc}", MESSAGE_WIDTH)
    try:
        log: Path | None = write_crash_log(exc, argv)
    except OSError as failed:
        log, where, details = None, f"no crash log written ({failed.strerror or failed})", {}
    else:
        where, details = f"traceback in {log}", {"crash_log": str(log)}
    return Failure(Internal(f"internal error ({what}); {where}", details=details), log, bug=True)


def crash_dir() -> Path:
    """Crash logs live with agentstate's other per-user files (AGENTSTATE_CACHE_DIR, else
    ~/.cache/agentstate), not in the repository: they are for whoever reports the bug."""
    from agentstate.tokens import cache_dir

    return cache_dir()


def write_crash_log(exc: BaseException, argv: list[str]) -> Path:
    """Write the traceback, secrets redacted, to a new file and return its path.

    The imports are here, not at the top: the command line imports this module on every
    run, and the secret scanner compiles its patterns when imported; only a crash needs it."""
    import platform
    import shlex
    import traceback
    from datetime import UTC, datetime

    from agentstate.distribution import __version__
    from agentstate.secret_scan import redact_secrets

    directory = crash_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    path = directory / f"crash-{stamp}-{os.getpid()}.log"
    text = (
        f"agentstate {__version__}, Python {platform.python_version()}, {platform.platform()}\n"
        f"command: {shlex.join([PROGRAM, *argv])}\n\n"
        + "".join(traceback.format_exception(exc))
    )
    # Exclusive and private: the log may name paths and arguments of this user's work.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write(redact_secrets(text))
    return path


def stdout_gone() -> int:
    """The reader closed the pipe (`agentstate events | head`): stop quietly, as a filter
    would, and keep the interpreter from complaining while it flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    return 1
