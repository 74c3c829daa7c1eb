"""Principals: who reads and writes, declared in config.toml [principals].

A principal has the scopes it may read and write, optionally the sources it may claim
(`sources`: an agent's principal that lists only ["model", "tool:*", ...] cannot write with
the user's authority — not in memory, and not in the run log either) and the owner-only
actions it may perform (`actions`: approve, revoke, purge).

Which principal a command runs as (docs/security.md, "Principals and authority"):
1. The environment's principal: `agent` when a known coding agent runs the process (it sets
   one of AGENT_ENV_VARS in its tools' environment) — AGENTSTATE_PRINCIPAL may then only
   name a principal with no more rights than `agent`; otherwise AGENTSTATE_PRINCIPAL, else
   `[principals] default`.
2. `--as NAME` may only narrow it: NAME must have no more rights than the environment's
   principal (every scope it reads or writes, source it claims and action it may perform is
   covered by the environment's). Raising authority takes the environment or the config,
   never a flag a model can type into a command line.
Hooks act as `agent` whatever the environment says (`lookup_principal`).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput, Refused

if TYPE_CHECKING:
    from agentstate.store.db import Store

AGENT_PRINCIPAL = "agent"

# Variables coding agents set in the environment of the commands they run, and the agent
# each names. Presence with a non-empty value (other than "0"/"false") counts.
AGENT_ENV_VARS: tuple[tuple[str, str], ...] = (
    ("CLAUDECODE", "Claude Code"),
    ("CODEX_SANDBOX", "Codex CLI"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "Codex CLI"),
    ("CODEX_THREAD_ID", "Codex CLI"),
    ("GEMINI_CLI", "Gemini CLI"),
    ("CURSOR_AGENT", "Cursor agent"),
    ("GOOSE_TERMINAL", "Goose"),
    ("PI_CODING_AGENT", "pi"),
    ("AI_AGENT", "an AI agent (AI_AGENT)"),
)


@dataclass
class Principal:
    name: str
    read: list[str]
    write: list[str]
    # Optional `sources = [...]` in the principal's config: the sources (and `user`
    # evidence) it may claim. Unset = any, so an agent's principal can be kept from
    # writing as `user` (the highest authority) by listing e.g. ["model", "tool:*"].
    sources: list[str] | None = None
    # Owner-only actions (approve, revoke, purge); None = all when write has "*".
    actions: list[str] | None = None

    def can_read(self, scope: str) -> bool:
        return _scope_allowed(scope, self.read)

    def can_write(self, scope: str) -> bool:
        return _scope_allowed(scope, self.write)

    def can_claim(self, source: str) -> bool:
        return self.sources is None or _scope_allowed(source, self.sources)

    def may(self, action: str) -> bool:
        return _scope_allowed(action, self.allowed_actions())

    def allowed_actions(self) -> list[str]:
        if self.actions is None:
            return ["*"] if "*" in self.write else []
        return list(self.actions)

    def check_claim(self, source: str, what: str = "source") -> None:
        if not self.can_claim(source):
            raise Refused(f"principal {self.name!r} may not claim {what} {source!r} "
                          f"(sources: {', '.join(self.sources or []) or 'none'})")

    def check_action(self, action: str, what: str) -> None:
        if not self.may(action):
            raise Refused(f"principal {self.name!r} may not {what}: it is the owner-only "
                          f"action {action!r} (config.toml [principals.{self.name}] actions)")


def _scope_allowed(scope: str, patterns: list[str]) -> bool:
    # fnmatch's '*' matches '/' too, so "path:*" covers every path scope.
    return any(p == "*" or p == scope or fnmatch.fnmatchcase(scope, p) for p in patterns)


def _covered(patterns: list[str], by: list[str]) -> bool:
    """Every pattern in `patterns` is matched by one in `by` (read as literal text)."""
    return all(_scope_allowed(p, by) for p in patterns)


def narrower(candidate: Principal, than: Principal) -> bool:
    """True when `candidate` has no right `than` lacks (scopes, sources, actions)."""
    return (_covered(candidate.read, than.read) and _covered(candidate.write, than.write)
            and _covered(candidate.sources if candidate.sources is not None else ["*"],
                         than.sources if than.sources is not None else ["*"])
            and _covered(candidate.allowed_actions(), than.allowed_actions()))


def detected_agent(environ: Any = None) -> tuple[str, str] | None:
    """(variable, agent) when a known coding agent runs this process, else None."""
    env = os.environ if environ is None else environ
    for var, agent in AGENT_ENV_VARS:
        value = (env.get(var) or "").strip().lower()
        if value and value not in ("0", "false", "no"):
            return var, agent
    return None


def lookup_principal(store: Store, name: str) -> Principal:
    """The principal declared as `name`, with no check of who is asking."""
    return _lookup(store.settings.principals, name)


def _lookup(section: Any, name: str) -> Principal:
    spec = section.declared.get(name)
    if spec is None:
        names = ", ".join(sorted(section.declared)) or "none"
        raise InvalidInput(
            f"principal {name!r} is not declared in config.toml [principals] (declared: {names})"
        )
    return Principal(name, list(spec.read), list(spec.write),
                     None if spec.sources is None else list(spec.sources),
                     None if spec.actions is None else list(spec.actions))


@dataclass
class EnvironmentPrincipal:
    principal: Principal
    decided_by: str  # one line: why this principal (for doctor and error messages)
    agent: str | None = None  # the coding agent detected, if any


def environment_principal(store: Store) -> EnvironmentPrincipal:
    """The principal the environment grants, before any --as (see the module docstring)."""
    return principal_from_environment(store.settings.principals)


def principal_from_environment(section: Any) -> EnvironmentPrincipal:
    """The same, from the [principals] settings alone (for `doctor`)."""
    declared = os.environ.get("AGENTSTATE_PRINCIPAL") or None
    found = detected_agent()
    if found is not None:
        var, agent = found
        ceiling = _lookup(section, AGENT_PRINCIPAL)
        if declared is None:
            return EnvironmentPrincipal(ceiling, f"{var} is set: running under {agent}", agent)
        chosen = _lookup(section, declared)
        if not narrower(chosen, ceiling):
            raise Refused(f"AGENTSTATE_PRINCIPAL={declared} under {agent} ({var} is set): a "
                          f"command run by a coding agent may only act as {AGENT_PRINCIPAL!r} "
                          "or a principal with fewer rights; run it from your own shell")
        return EnvironmentPrincipal(chosen, f"AGENTSTATE_PRINCIPAL (under {agent}, {var} "
                                            "is set)", agent)
    if declared is not None:
        return EnvironmentPrincipal(_lookup(section, declared), "AGENTSTATE_PRINCIPAL")
    return EnvironmentPrincipal(_lookup(section, section.default),
                                "[principals] default in config.toml")


def resolve_principal(store: Store, name: Principal | str | None = None) -> Principal:
    """The environment's principal, or `name` (--as) when it has no more rights than that.
    A Principal an entry point already decided (a hook's `agent`) is taken as it is: only
    code builds one, never a flag or a payload."""
    if isinstance(name, Principal):
        return name
    env = environment_principal(store)
    if name is None or name == env.principal.name:
        return env.principal
    chosen = lookup_principal(store, name)
    if not narrower(chosen, env.principal):
        raise Refused(f"--as {name}: principal {name!r} has rights that {env.principal.name!r} "
                      f"(from {env.decided_by}) lacks; --as may only narrow the principal")
    return chosen


def acting(store: Store, principal: Principal | str) -> Principal:
    """The principal a domain function acts for, as its caller named it (issue 22).

    Below the entry points (cli/, integrations/, web/, api.py, evals/) nobody falls back to
    the environment: an entry point decides the principal once (`resolve_principal`) and
    passes it down. A name is still checked as `--as` is (declared, no broader than the
    environment's), so a library caller cannot widen its rights by naming the owner. None is
    a programming error, not "whoever the environment says": that silent fallback is how a
    path forgot its principal and read as the shell's owner (the MCP resume leak)."""
    if principal is None:  # an untyped caller; the type says it cannot happen
        raise TypeError("a principal is required below the entry points: resolve it with "
                        "store.principals.resolve_principal at the entry point and pass it")
    return resolve_principal(store, principal)


def check_whole_store(principal: Principal, what: str, *, read: bool = False,
                      write: bool = False) -> None:
    """Refuse (exit 3) an action on the whole store to a principal whose scopes do not cover
    it: a backup reads every scope (the user's too), a restore, `gc` or a destructive sync
    import rewrites or deletes every scope. Derived from the scopes, not from `actions`, so a
    config.toml written before these checks keeps the owner able to do them."""
    lacks = [f"{verb} every scope" for verb, needed, patterns in (
        ("read", read, principal.read), ("write", write, principal.write))
        if needed and "*" not in patterns]
    if lacks:
        raise Refused(f"principal {principal.name!r} may not {what}: an owner action, it takes "
                      f"a principal that may {' and '.join(lacks)}; run it from your own "
                      "terminal")


def default_source(principal: Principal) -> str:
    """What a principal's own words are recorded as: `user`, unless it may not claim that."""
    return "user" if principal.can_claim("user") else "model"
