"""`run distill`: what of a run deserves to outlive it, proposed as memories with evidence.

Proposed (each with the events that support it as evidence):
- confirmed diagnoses (`diagnosis` events) → facts;
- answered questions (`answer` events) → facts, with the question as evidence too;
- passed verifications (`verified` events) → facts, with the verify event as evidence;
- repository entry points its tool events showed working: a successful `tool` event (exit 0)
  whose command tests, builds, lints or checks the project → a procedure (the latest success
  per command), keyed `test-command`, `build-command`, … so later values version it.
Never proposed: hypotheses, failed verifications, open questions, pending verifies, notes,
constraints (they belong to the run) — and nothing an event later superseded. Those stay
archived with the run.

Without `accept` nothing is stored. With it, every proposal goes through the write gate
(`remember`, source = the event, so dedupe, conflict and injection rules all apply).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentstate.errors import AgentStateError
from agentstate.memory.versions import WriteResult
from agentstate.runs.status import RunStatus

if TYPE_CHECKING:
    from agentstate.store.db import Store
    from agentstate.store.principals import Principal

_ENTRY = re.compile(r"\b(test|tests|pytest|tox|nox|check|lint|ruff|mypy|build|compile|verify)\b")
# `pytest --version` succeeding says nothing about the tests passing.
_INFO_ONLY = re.compile(r"(?:^|\s)(?:--version|--help|-h|-V)(?:\s|$)")
_KEY_FOR = [("test", "test-command"), ("pytest", "test-command"), ("tox", "test-command"),
            ("nox", "test-command"), ("lint", "lint-command"), ("ruff", "lint-command"),
            ("mypy", "typecheck-command"), ("check", "check-command"),
            ("build", "build-command"), ("compile", "build-command"),
            ("verify", "verify-command")]


@dataclass
class Proposal:
    kind: str
    text: str
    source: str  # evt:… the proposal comes from
    evidence: list[str]
    key: str | None = None
    why: str = ""


@dataclass
class DistillResult:
    run: str
    run_status: RunStatus
    proposals: list[Proposal]
    accepted: list[WriteResult] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)  # proposals the write gate refused
    skipped: dict[str, int] = field(default_factory=dict)  # event kind → count not proposed


def propose(store: Store, run_ref: str) -> tuple[Any, list[Proposal], dict[str, int]]:
    from agentstate.runs.log import get_run, list_events

    run = get_run(store, run_ref)
    events = list_events(store, run.ref)
    by_ref = {e.ref: e for e in events}
    superseded = {e.supersedes for e in events if e.supersedes}
    failed_verifies = {e.resolves for e in events if e.kind == "failed" and e.resolves}
    proposals: list[Proposal] = []
    skipped: dict[str, int] = {}
    tools: dict[str, Proposal] = {}
    for event in events:
        if event.ref in superseded:
            skipped["superseded"] = skipped.get("superseded", 0) + 1
            continue
        if event.kind == "diagnosis":
            evidence = [event.ref] + ([event.resolves] if event.resolves else [])
            proposals.append(Proposal("fact", event.text, event.ref, evidence,
                                      why="confirmed diagnosis"))
        elif event.kind == "answer" and event.resolves in by_ref:
            question = by_ref[event.resolves]
            proposals.append(Proposal("fact", f"{question.text} — {event.text}", event.ref,
                                      [event.ref, question.ref], why="answered question"))
        elif event.kind == "verified" and event.resolves in by_ref:
            if event.resolves in failed_verifies:
                skipped["verified_then_failed"] = skipped.get("verified_then_failed", 0) + 1
                continue
            check = by_ref[event.resolves]
            proposals.append(Proposal("fact", f"Verified: {check.text} — {event.text}", event.ref,
                                      [event.ref, check.ref], why="passed verification"))
        elif event.kind == "tool":
            command = _command(event)
            if event.meta.get("exit_code") == 0 and not event.meta.get("timed_out") \
                    and event.meta.get("allowed", True) and _ENTRY.search(command.lower()) \
                    and not _INFO_ONLY.search(command):
                key = _key_for(command)
                # One proposal per key, the run's latest success: two values for one key
                # would supersede each other on every --accept instead of deduplicating.
                replaced = tools.pop(key or command, None)
                if replaced is not None and replaced.text != _works(command):
                    skipped["tool"] = skipped.get("tool", 0) + 1
                tools[key or command] = Proposal(
                    "procedure", _works(command), event.ref,
                    [event.ref], key=key, why="successful tool run",
                )
            else:
                skipped["tool"] = skipped.get("tool", 0) + 1
        else:
            skipped[event.kind] = skipped.get(event.kind, 0) + 1
    proposals.extend(tools.values())
    return run, proposals, skipped


def _works(command: str) -> str:
    return f"`{command}` works in this repository (exit 0)"


def _command(event: Any) -> str:
    """The command line of a tool event: the tool layer keeps argv in meta["command"] (its
    text is a summary such as "$ make test → exit 0 in 1.2s")."""
    argv = event.meta.get("command")
    if isinstance(argv, list) and argv:
        return shlex.join(str(a) for a in argv)
    text = event.text.strip().removeprefix("$ ")
    return text.split(" → ", 1)[0]


def _key_for(command: str) -> str | None:
    words = set(re.findall(r"[a-z]+", command.lower()))
    for word, key in _KEY_FOR:
        if word in words:
            return key
    return None


def distill(store: Store, run_ref: str, *, accept: bool = False,
            principal: Principal | str) -> DistillResult:
    """Propose memories from a run; with `accept`, pass each through the write gate."""
    from agentstate.memory.write import remember

    run, proposals, skipped = propose(store, run_ref)
    result = DistillResult(run.ref, run.status, proposals, skipped=skipped)
    if accept:
        with store.transaction():
            for index, proposal in enumerate(proposals):
                try:
                    result.accepted.append(remember(
                        store, proposal.text, kind=proposal.kind, key=proposal.key,
                        source=proposal.source, evidence=proposal.evidence, principal=principal,
                    ))
                except AgentStateError as exc:
                    # remember() rolled back its own savepoint; the other proposals stand.
                    result.rejected.append({"proposal": index + 1, "source": proposal.source,
                                            "error": exc.message})
    return result
