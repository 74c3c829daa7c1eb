"""The one error family. Each class carries its exit code; the CLI maps them to messages.

Exit codes: 0 ok, 1 error (not found, invalid input, corrupt file), 2 usage,
3 refused by a gate or policy.
"""

from __future__ import annotations


class AgentStateError(Exception):
    """Base of every error a user can cause or see. Message is one line."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        # Messages often quote the offending argument ("unknown kind 'x'"); when that argument
        # is a secret pasted in the wrong place, the message must not echo it. Imported here:
        # safety imports this module.
        from agentstate.safety import redact_secrets

        message = redact_secrets(message)
        super().__init__(message)
        self.message = message
        self.details = details or {}


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
