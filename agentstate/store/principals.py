"""Principals: who reads and writes, declared in config.toml [principals].

A principal has the scopes it may read and write and, optionally, the sources it may claim
(`sources`): an agent's principal that lists only ["model", "tool:*", ...] cannot write with
the user's authority — not in memory, and not in the run log either.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Any

from agentstate.errors import InvalidInput


@dataclass
class Principal:
    name: str
    read: list[str]
    write: list[str]
    # Optional `sources = [...]` in the principal's config: the sources (and `user`
    # evidence) it may claim. Unset = any, so an agent's principal can be kept from
    # writing as `user` (the highest authority) by listing e.g. ["model", "tool:*"].
    sources: list[str] | None = None

    def can_read(self, scope: str) -> bool:
        return _scope_allowed(scope, self.read)

    def can_write(self, scope: str) -> bool:
        return _scope_allowed(scope, self.write)

    def can_claim(self, source: str) -> bool:
        return self.sources is None or _scope_allowed(source, self.sources)

    def check_claim(self, source: str, what: str = "source") -> None:
        from agentstate.errors import Refused

        if not self.can_claim(source):
            raise Refused(f"principal {self.name!r} may not claim {what} {source!r} "
                          f"(sources: {', '.join(self.sources or []) or 'none'})")


def _scope_allowed(scope: str, patterns: list[str]) -> bool:
    # fnmatch's '*' matches '/' too, so "path:*" covers every path scope.
    return any(p == "*" or p == scope or fnmatch.fnmatchcase(scope, p) for p in patterns)


def resolve_principal(store: Any, name: str | None = None) -> Principal:
    """--as, else AGENTSTATE_PRINCIPAL, else `[principals] default`; must be declared."""
    section = store.settings.principals
    chosen = name or os.environ.get("AGENTSTATE_PRINCIPAL") or section.default
    spec = section.declared.get(chosen)
    if spec is None:
        names = ", ".join(sorted(section.declared)) or "none"
        raise InvalidInput(
            f"principal {chosen!r} is not declared in config.toml [principals] (declared: {names})"
        )
    return Principal(chosen, list(spec.read), list(spec.write),
                     None if spec.sources is None else list(spec.sources))


def default_source(principal: Principal) -> str:
    """What a principal's own words are recorded as: `user`, unless it may not claim that."""
    return "user" if principal.can_claim("user") else "model"
