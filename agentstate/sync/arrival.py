"""What a teammate's memory record meets as it arrives in an import, whichever path takes it.

The gate it must pass (secrets, a scope the principal may write, a source it may claim),
the status and reason it arrives with, its confidence, and whether an evidence ref may be
attached: asked alike by the per-record path (merge.py) and the batch of new chains
(merge_batch.py), so the two cannot disagree. `ImportResult` is what an import reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import CONTESTED_FACTOR, initial_confidence
from agentstate.safety import find_injection
from agentstate.store.principals import Principal
from agentstate.sync.fields_scan import RecordScan
from agentstate.sync.records import Record

ACTOR = "sync"


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)  # version refs inserted or matched
    contested: list[str] = field(default_factory=list)
    tombstoned: list[str] = field(default_factory=list)  # version refs forgotten / purged
    purged: list[str] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    pending_tombstones: int = 0  # tombstones for records unknown here (kept; they win later)
    # Chains this import changed that settling may have to rank. Not the chains the batch of
    # new chains started (NewChains): one version, or two where the second replaced the
    # first,
    # never two current or a contested one — unless another path touches them too, and then
    # that path adds them (issue 24: 11,000 chains of a first import were asked for rivals).
    touched: set[str] = field(default_factory=set)


def skip_record(result: ImportResult, record: Record, reason: str) -> None:
    result.skipped.append({"record": record.id, "where": record.where, "reason": reason})


class RecordGate:
    """What a teammate's record must pass to be stored, for one import: its fields' secret
    scan, a scope the principal may write and a source it may claim. Most records of a
    folder share their scope and source: that verdict is kept for the import (two pattern
    matches a record were a few percent of a first import's own Python, issue 24)."""

    def __init__(self, who: Principal) -> None:
        self.who, self.scan = who, RecordScan()
        self._allowed: dict[tuple[str, str], str | None] = {}

    def refusal(self, record: Record) -> str | None:
        data = record.data
        found = self.scan.secret_kinds(data)
        if found:
            kinds = ", ".join(sorted(found))
            return f"looks like it contains a secret ({kinds}); not imported"
        claim = (data["scope"], data["source"])
        if claim not in self._allowed:
            self._allowed[claim] = self._not_allowed(*claim)
        return self._allowed[claim]

    def _not_allowed(self, scope: str, source: str) -> str | None:
        if not self.who.can_write(scope):
            return f"principal {self.who.name!r} may not write scope {scope!r}"
        if not self.who.can_claim(source):
            return f"principal {self.who.name!r} may not claim source {source!r}"
        return None


def arrival(record: Record) -> tuple[MemoryStatus, str]:
    """A new version's status and reason as it arrives."""
    data = record.data
    status, reason = (MemoryStatus.ACTIVE,
                      f"imported from the shared folder (record {record.id[:12]})")
    if data["held"]:
        status = MemoryStatus(data["held"])  # checked when the folder was read
    elif find_injection(data["text"]):
        status = MemoryStatus.QUARANTINED
        reason += "; it reads as instructions to the agent, kept out of reads"
    elif data["kind"] == "preference":
        # A teammate's preference (or a line written by hand) is never pinned here by the
        # import alone: the local user confirms it (`memory confirm REF --evidence user`).
        status = MemoryStatus.CANDIDATE
        reason += ("; a teammate's preference is a candidate until you confirm it "
                   "(memory confirm REF --evidence user)")
    return status, reason


# A function of two values that most records of a folder share (issue 24: computed once a
# record, it was a few percent of an import's own Python).
@lru_cache(maxsize=1024)
def arrival_confidence(source: str, status: MemoryStatus) -> float:
    return initial_confidence(source, 1) * (CONTESTED_FACTOR if status != "active" else 1)


def attachable(kind: str, claims_user: bool) -> bool:
    """May an import attach a ref of this kind for a principal that may (or may not) claim
    the user's word? A `user` ref makes a version vouched for by the user: only a principal
    that may claim that source attaches one (the batch and the evidence pass alike)."""
    return kind != "user" or claims_user
