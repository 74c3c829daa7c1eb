"""The one error family. Each class carries its exit code; the CLI maps them to messages.

Exit codes: 0 ok, 1 error (not found, invalid input, corrupt file), 2 usage,
3 refused by a gate or policy, 70 internal error (a bug: see the crash log), 130 interrupted.
Every entry point reports them through agentstate.error_boundary (the CLI's side, with the
envelope or a stderr line, is agentstate.cli.boundary).
"""

from __future__ import annotations

from typing import Any


class AgentStateError(Exception):
    """Base of every error a user can cause or see. Message is one line."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        # Messages often quote the offending argument ("unknown kind 'x'"); when that argument
        # is a secret pasted in the wrong place, the message must not echo it. Imported on
        # the first error, not with this module: the scanner compiles its patterns when
        # imported, and every process (each hook, `--help`) imports errors.py but most raise
        # nothing. (No cycle: secret_scan imports nothing of agentstate.)
        from agentstate.secret_scan import redact_secrets

        message = _one_line(redact_secrets(message))
        super().__init__(message)
        self.message = message
        self.details = details or {}


def _one_line(message: str) -> str:
    """The message with control characters written out (`\\n`, `\\x1b`): it quotes what the
    user typed (a path, a text), which may hold a newline or a terminal escape, and the
    stderr report is one `error:` line that must not be split or able to move the cursor."""
    if message.isprintable():
        return message
    return "".join(ch if ch.isprintable() or ch == "\t" else ch.encode("unicode_escape").decode()
                   for ch in message)


class NotFound(AgentStateError):
    code = "not_found"


class InvalidInput(AgentStateError):
    code = "invalid_input"


class StoreMissing(AgentStateError):
    code = "no_store"


class CorruptStore(AgentStateError):
    code = "corrupt_store"


class UsageError(AgentStateError):
    exit_code = 2
    code = "usage"


class Refused(AgentStateError):
    """A gate or policy said no (secret in text, budget below pinned floor, tool denied...)."""

    exit_code = 3
    code = "refused"


class BudgetTooSmall(Refused):
    code = "budget_too_small"

    def __init__(self, budget: int, minimum: int, what: str = "pinned content") -> None:
        super().__init__(
            f"budget {budget} is below the minimum of {minimum} tokens needed for {what}",
            details={"budget": budget, "minimum": minimum},
        )
        self.minimum = minimum


class Internal(AgentStateError):
    """Not the user's doing: an unexpected exception, reported with a crash log."""

    exit_code = 70  # EX_SOFTWARE in sysexits.h: distinct from every user error
    code = "internal"


class Interrupted(AgentStateError):
    """Ctrl-C (SIGINT): 128 + 2, what a shell reports for a process killed by it."""

    exit_code = 130
    code = "interrupted"

    def __init__(self, message: str = "interrupted") -> None:
        super().__init__(message)


def a_or_an(word: str) -> str:
    """`word` with its indefinite article, for messages: "an answer event", "an evt ref"."""
    return ("an " if word[:1].lower() in "aeio" else "a ") + word
