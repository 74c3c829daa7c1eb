"""A run and an event as the run log hands them out (`Run`, `Event`, each read from its
row), and the kinds an event may have: those a user or agent logs, those agentstate writes
itself, and what a resolving kind may point at."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agentstate.runs.status import RunStatus
from agentstate.store.refs import make_ref

# Kinds a user or agent logs, with what each means in a resume pack.
USER_KINDS = {
    "observation": "something seen (tool output, file content, behaviour)",
    "decision": "a choice made, with its reason",
    "diagnosis": "a confirmed cause",
    "hypothesis": "an unconfirmed guess (never shown as fact)",
    "question": "an open question",
    "answer": "resolves a question (--resolves evt:…)",
    "verify": "a verification still to do",
    "verified": "resolves a verify: it passed (--resolves evt:…)",
    "failed": "resolves a verify: it failed (--resolves evt:…)",
    "constraint": "a rule the work must respect",
    "note": "anything else worth keeping",
}
# Kinds written by agentstate itself (tool layer, skill loads, imports of tool calls).
SYSTEM_KINDS = {"tool", "skill_load", "checkpoint"}
EVENT_KINDS = set(USER_KINDS) | SYSTEM_KINDS

# What a resolving kind may point at.
RESOLVES = {"answer": {"question"}, "verified": {"verify"}, "failed": {"verify"},
            "diagnosis": {"hypothesis", "question"}}

MAX_EVENT_CHARS = 100_000


@dataclass
class Run:
    ref: str
    goal: str
    status: RunStatus
    created: str
    updated: str
    ended: str | None
    branch: str | None
    head: str | None
    dirty_fingerprint: str | None
    dirty_files: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.ref.split(":", 1)[1]


@dataclass
class Event:
    ref: str
    run: str
    seq: int
    kind: str
    text: str
    source: str
    ts: str
    meta: dict[str, Any] = field(default_factory=dict)
    resolves: str | None = None
    supersedes: str | None = None
    collected_at: str | None = None  # set by `agentstate gc`: the body is gone, the row stays
    body_hash: str | None = None  # the collected body's keyed hash

    @property
    def id(self) -> str:
        return self.ref.split(":", 1)[1]


def row_to_run(row: dict[str, Any]) -> Run:
    return Run(
        ref=make_ref("run", row["id"]),
        goal=row["goal"],
        status=RunStatus(row["status"]),
        created=row["created"],
        updated=row["updated"],
        ended=row["ended"],
        branch=row["branch"],
        head=row["head"],
        dirty_fingerprint=row["dirty_fingerprint"],
        dirty_files=json.loads(row["dirty_files"] or "[]"),
    )


def row_to_event(row: dict[str, Any]) -> Event:
    return Event(
        ref=make_ref("evt", row["id"]),
        run=make_ref("run", row["run"]),
        seq=row["seq"],
        kind=row["kind"],
        text=row["text"],
        source=row["source"],
        ts=row["ts"],
        meta=json.loads(row["meta"] or "{}"),
        resolves=make_ref("evt", row["resolves"]) if row["resolves"] else None,
        supersedes=make_ref("evt", row["supersedes"]) if row["supersedes"] else None,
        collected_at=row.get("collected_at"),
        body_hash=row.get("body_hash"),
    )
