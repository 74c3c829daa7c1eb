"""The `[tools]` policy: which commands the one tool layer may run.

Semantics (documented in the README and config template):
- A command is an argv list; it is never run through a shell, so `;`, `|`, `&&` are plain
  arguments, not operators.
- Rules are command prefixes written like a command line (`"git"`, `"git push"`,
  `"rm -rf /"`), split into words with shell quoting rules. A rule matches when its words are
  the first words of the command; the first word is compared by program *name*, so
  `/usr/bin/curl` is matched by `"curl"`.
- `deny` wins over `allow`. A command is allowed when some `allow` rule matches (`"*"` matches
  everything) and no `deny` rule does.
This is a guardrail against an agent wandering off, not a sandbox: an allowed interpreter
(`python -c ...`) can still do anything the user can.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput

if TYPE_CHECKING:
    from agentstate.config import ToolSettings


@dataclass(frozen=True)
class PolicyDecision:
    allowed: bool
    reason: str
    rule: str | None = None  # the rule that decided (None when no allow rule matched)


def program_name(argv0: str) -> str:
    """The program's name as policy rules see it (a path's last component)."""
    return os.path.basename(argv0.rstrip("/")) or argv0


def _rule_words(rule: str) -> list[str]:
    return shlex.split(rule)  # every rule was checked to split when the settings were loaded


def _matches(rule: str, argv: list[str]) -> bool:
    if rule.strip() == "*":
        return True
    words = _rule_words(rule)
    if not words or len(words) > len(argv):
        return False
    if program_name(words[0]) != program_name(argv[0]):
        return False
    return argv[1 : len(words)] == words[1:]


def check_command(tools: ToolSettings, argv: list[str]) -> PolicyDecision:
    """Decide whether the tool layer may run `argv` under the `[tools]` policy."""
    if not argv or not argv[0]:
        raise InvalidInput("no command given")
    program = program_name(argv[0])
    for rule in tools.deny:
        if _matches(rule, argv):
            return PolicyDecision(False, f"denied by [tools] deny rule {rule!r}", rule)
    for rule in tools.allow:
        if _matches(rule, argv):
            return PolicyDecision(True, f"allowed by [tools] allow rule {rule!r}", rule)
    return PolicyDecision(
        False, f"{program!r} is not in [tools] allow (add it to .agentstate/config.toml)"
    )


def declared_tools(tools: ToolSettings) -> set[str]:
    """Names of non-command tools declared in [tools] definitions (MCP tools and the like)."""
    return {d.name for d in tools.definitions}
