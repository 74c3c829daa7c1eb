"""The Python library: what an agent framework embedding agentstate calls.

Each function takes the store and the principal it acts for, explicitly (a declared name
such as "owner" or "agent", or a `Principal` an entry point resolved). Nothing here reads
AGENTSTATE_PRINCIPAL to decide whose rights apply: a name given here may narrow the
environment's principal, never widen it (store/principals.py, `resolve_principal`). The
functions are the ones the CLI and the MCP server call, so a library user gets the same
gates: the write gate on `remember`, the read gate on `recall` and both packs, the source
a principal may claim on `start_run` and `log_event`, the policy on skills.

docs/python-api.md shows each in use; tests/test_api.py runs those examples.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agentstate.context.assemble import ContextPack, build_context
from agentstate.context.resume import ResumePack, build_pack
from agentstate.memory.forget import ForgetResult
from agentstate.memory.forget import forget as forget_memories
from agentstate.memory.recall import RecallResult
from agentstate.memory.recall import recall as recall_memories
from agentstate.memory.versions import WriteResult
from agentstate.memory.write import remember as remember_memory
from agentstate.runs.log import append_event
from agentstate.runs.log import start_run as start_a_run
from agentstate.runs.records import Event, Run
from agentstate.runs.worktree import snapshot
from agentstate.skills.catalog import CatalogEntry, list_catalog
from agentstate.skills.load import LoadedSkill
from agentstate.skills.load import load_skill as load_a_skill
from agentstate.store.db import Store
from agentstate.store.db import open_store as open_a_store
from agentstate.store.principals import Principal, default_source, resolve_principal

__all__ = ["context_pack", "forget", "list_skills", "load_skill", "log_event", "open_store",
           "recall", "remember", "resume_pack", "start_run"]

Who = Principal | str


def open_store(path: str | Path | None = None, *, start: str | Path | None = None) -> Store:
    """The store at `path` (a `.agentstate` folder), else the one found walking up from
    `start` (default: the working directory), like git finds `.git`. Pending migrations are
    applied. Close it with `store.close()` (or `contextlib.closing`)."""
    return open_a_store(path, start=Path(start) if start is not None else None)


def resume_pack(store: Store, *, principal: Who, run: str | None = None,
                budget: int | None = None) -> ResumePack:
    """The resume pack of `run` (default: the current run) as `principal` may see it:
    `.text` is the Markdown, within `budget` tokens when one is given."""
    return build_pack(store, run, principal=principal, budget=budget)


def context_pack(store: Store, *, principal: Who, run: str | None = None,
                 budget: int | None = None, query: str | None = None,
                 save: bool = True) -> ContextPack:
    """A budgeted context pack (`.text`, `.ref`, `.tokens`, the manifest); with `save` it is
    kept so `trace pack:…` can follow it."""
    return build_context(store, run=run, budget=budget, query=query,
                         principal=_name(store, principal), save=save)


def remember(store: Store, text: str, *, principal: Who, kind: str, key: str | None = None,
             scope: str | None = None, source: str | None = None,
             evidence: Sequence[str] = (), ttl: str | None = None) -> WriteResult:
    """Pass one memory through the write gate; the result says what it decided and why (a
    fact without evidence from a principal that may not claim `user` stays a candidate)."""
    return remember_memory(store, text, kind=kind, key=key, scope=scope, source=source,
                           evidence=list(evidence), ttl=ttl,
                           principal=_name(store, principal))


def recall(store: Store, query: str, *, principal: Who, limit: int = 10,
           kinds: Sequence[str] | None = None,
           scopes: Sequence[str] | None = None) -> RecallResult:
    """Memories matching `query` through the read gate: `.hits`, and `.withheld` counts of
    what the gate kept back (another principal's scope, candidates, expired)."""
    return recall_memories(store, query, limit=limit, kinds=list(kinds) if kinds else None,
                           scopes=list(scopes) if scopes else None,
                           principal=_name(store, principal))


def forget(store: Store, ref: str | None = None, *, principal: Who, key: str | None = None,
           query: str | None = None, reason: str | None = None, purge: bool = False,
           dry_run: bool = False) -> ForgetResult:
    """Tombstone (or, with `purge`, erase) the memories named by a ref, a key or a query, as
    far as `principal` may write them."""
    return forget_memories(store, ref, key=key, query=query, reason=reason, purge=purge,
                           dry_run=dry_run, principal=_name(store, principal))


def start_run(store: Store, goal: str, constraints: Sequence[str] = (), *, principal: Who,
              source: str | None = None) -> Run:
    """Start a run and make it current, with a snapshot of the work tree (for drift).
    Constraints are the principal's own words (`user` for the owner, `model` for `agent`)
    unless `source` says otherwise and the principal may claim it."""
    who = resolve_principal(store, principal)
    run, _ = start_a_run(store, goal, list(constraints), worktree=snapshot(store.work_tree),
                         source=source or default_source(who), claimed_by=who)
    return run


def log_event(store: Store, kind: str, text: str, *, principal: Who, run: str | None = None,
              source: str | None = None, meta: dict[str, str] | None = None,
              resolves: str | None = None, supersedes: str | None = None) -> Event:
    """Append one typed event (observation, decision, verify, …) to `run` (default: the
    current run); `.ref` is its evt:… ref, usable as memory evidence."""
    who = resolve_principal(store, principal)
    return append_event(store, run, kind, text, source=source or default_source(who),
                        meta=meta or {}, resolves=resolves, supersedes=supersedes,
                        claimed_by=who)


def list_skills(store: Store, *, principal: Who, include_all: bool = False) -> list[CatalogEntry]:
    """The skill catalog (published skills; with `include_all` candidates and revoked too).

    Skills carry no scope, so every principal sees the same catalog: `principal` is checked
    (declared, no broader than the environment's) so a caller cannot act for a name the
    store does not know."""
    resolve_principal(store, principal)
    return list_catalog(store, include_all=include_all)


def load_skill(store: Store, target: str, *, principal: Who,
               run: str | None = None) -> LoadedSkill:
    """Load a published skill (`NAME` or `NAME@vN`): body, resources, trust; the load is
    recorded against `run` (default: the current run). Revoked versions are refused. The
    principal is checked as for `list_skills`."""
    return load_a_skill(store, target, run_ref=run, principal=resolve_principal(store, principal))


def _name(store: Store, principal: Who) -> str:
    """The domain functions that take a principal by name: checked here, passed by name."""
    return resolve_principal(store, principal).name
