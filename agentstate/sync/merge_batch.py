"""New chains of one pull written in bulk: the batch a first import takes most records by.

sync/merge.py takes each record through the per-record path unless `NewChains.take` can
show that path would only insert it; those records are written here a few statements at a
time (issue 24), and the per-record path sees the store as it would without the batch.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentstate.memory.bulk_reads import content_keys, keyed_chains
from agentstate.memory.history import record_histories
from agentstate.memory.model import norm_hash
from agentstate.memory.status import MemoryStatus
from agentstate.memory.versions import NewVersion, insert_scanned_versions
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref
from agentstate.store.sources import authority
from agentstate.sync.arrival import (
    ACTOR,
    ImportResult,
    RecordGate,
    arrival,
    arrival_confidence,
    attachable,
    skip_record,
)
from agentstate.sync.records import Record, evidence_kind, record_over_limits
from agentstate.sync.shared import record_mappings

if TYPE_CHECKING:
    from agentstate.store.db import Store


class NewChains:
    """New chains of one pull, written in a few statements instead of about twelve a record.

    A record qualifies only when the per-record path (merge.py's _memory) would do nothing
    but insert
    it: no parent, not tombstoned, not already mapped, no version here (or earlier in the
    pull) with its content and key, no chain here (or earlier in the pull) holding its key.
    Then there is nothing to match, supersede or contest, and its chain has one version, so
    settling leaves it as it is. Everything else takes the per-record path, and the batch is
    written (flush) before that path reads anything, so it sees the same store as an import
    without the batch. The sets below may hold more than the store (content of a version
    since purged, a quarantined key): a false hit only sends a record down the slow path."""

    def __init__(self, store: Store, who: Principal, gate: RecordGate,
                 evidence: list[Record]) -> None:
        self.store, self.who, self.gate = store, who, gate
        # The evidence refs each record of the folder has, in the order the evidence pass
        # (merge.py's _evidence) would add them: a new version is inserted with its own.
        self.refs: dict[str, list[str]] = {}
        for record in evidence:
            self.refs.setdefault(record.data["memory"], []).append(record.data["ref"])
        self.claims_user = who.can_claim("user")
        self.pending: list[str] = []  # the record id of each pending version
        self.inserted: set[str] = set()  # records inserted, each with its evidence
        self.max_chars = store.settings.memory.max_chars
        self.contents = content_keys(store)
        self.keys = keyed_chains(store)
        self.ids: set[str] = set()  # records of this pull seen so far
        self.versions: list[NewVersion] = []
        self.history: list[tuple[str, int | None, str, str, str, str | None,
                                 dict[str, Any] | str]] = []
        self.maps: list[tuple[str, str, int, str, str | None]] = []
        # Chains the pending batch started: a record's index in `versions` by its id, and
        # how many versions each chain has in the batch.
        self.fresh: dict[str, int] = {}
        self.length: dict[str, int] = {}

    def _content(self, data: dict[str, Any]) -> tuple[str, str, str, str | None]:
        return (norm_hash(data["text"]), data["scope"], data["kind"], data["key"])

    def saw(self, record: Record, content: tuple[str, str, str, str | None] | None = None
            ) -> None:
        """A record the per-record path took: what it may have written is in the sets."""
        data = record.data
        self.ids.add(record.id)
        self.contents.add(content or self._content(data))
        if data["key"]:
            self.keys.add((data["key"], data["scope"]))

    def _parent(self, data: dict[str, Any]) -> int | None:
        """The batch's index of the record's parent when the record is the second version
        of a chain the batch started and would simply replace it: the parent is current,
        alone in its chain, not outranked, and (inserted by this import, no evidence yet)
        neither stated nor vouched for by the user here."""
        at = self.fresh.get(data["parent"])
        if at is None or data["rel"] != "supersedes":
            return None
        parent = self.versions[at]
        if (self.length[parent.memory_id] != 1 or parent.status != MemoryStatus.ACTIVE
                or authority(data["source"]) < authority(parent.source)):
            return None
        return at

    def take(self, record: Record, result: ImportResult) -> bool:
        """Handle the record here (inserted into the batch, or skipped as the per-record
        path would skip it); False: it needs the per-record path."""
        data = record.data
        at = self._parent(data) if data["parent"] else None
        content = self._content(data)
        if ((data["parent"] and at is None) or record.id in self.ids
                or content in self.contents
                or (at is None and data["key"] and (data["key"], data["scope"]) in self.keys)):
            return False
        # Scanned here and only here (the record does not reach _memory): once per record.
        refused = record_over_limits(data, self.max_chars) \
            or self.gate.refusal(record)
        self.saw(record, content)
        if refused:
            skip_record(result, record, refused)
            return True
        status, reason = arrival(record)
        parent = self.versions[at] if at is not None else None
        memory_id = parent.memory_id if parent else self.store.new_id()
        version = 2 if parent else 1
        if parent is None:
            self.fresh[record.id] = len(self.versions)
        self.length[memory_id] = version
        self.versions.append(NewVersion(
            memory_id=memory_id, version=version, kind=data["kind"], key=data["key"],
            scope=data["scope"], text=data["text"], source=data["source"], status=status,
            confidence=arrival_confidence(data["source"], status),
            valid_until=data["valid_until"],
            supersedes=1 if parent else None, principal=f"{ACTOR}:{data['principal']}",
            reason=reason, norm=content[0]))
        self.pending.append(record.id)
        self.maps.append((record.id, memory_id, version, "import", data["rel"]))
        if parent is not None and at is not None and status == MemoryStatus.ACTIVE:
            # What merge.py's _replace_parent does to a stored parent, done to the pending
            # one.
            why = f"superseded by a teammate's newer value (record {record.id[:12]})"
            parent.status, parent.reason = MemoryStatus.SUPERSEDED, why  # not yet written
            self.history.append((memory_id, 1, "superseded", ACTOR, why, None,
                                 f'{{"record": {_quote(record.id)}}}'))
        self.history.append((memory_id, version, "import", self.who.name, reason,
                             data["text"], _import_detail(record.id, data)))
        result.imported.append(make_ref("mem", memory_id, version))
        return True

    def _evidence(self, record_id: str) -> tuple[tuple[str, str], ...]:
        """(ref, kind) of each evidence ref of the record that merge.py's _evidence would add
        to its new version (no `user` ref the principal may not claim)."""
        refs = self.refs.get(record_id)
        if not refs:
            return ()
        kinds = ((ref, evidence_kind(ref)) for ref in refs)
        return tuple(item for item in kinds if attachable(item[1], self.claims_user))

    def flush(self, last: bool = False) -> None:
        """Write what is pending. Only the `last` flush, after every memory record, inserts
        the versions with their evidence: the per-record path decides on versions without
        evidence (a `user` ref makes one vouched for), as without the batch; the versions of
        an earlier flush get theirs from the evidence pass."""
        if not (self.versions or self.maps or self.history):
            return
        if last:
            for version, record_id in zip(self.versions, self.pending, strict=True):
                version.evidence = self._evidence(record_id)
            self.inserted.update(self.pending)
        insert_scanned_versions(self.store, self.versions, ACTOR)
        record_mappings(self.store, self.maps)
        record_histories(self.store, self.history)
        self.versions, self.maps, self.history, self.pending = [], [], [], []
        self.fresh, self.length = {}, {}


# The quoting `json.dumps(..., ensure_ascii=False)` applies to a string.
_quote = json.encoder.encode_basestring


def _import_detail(record_id: str, data: dict[str, Any]) -> str:
    """`json.dumps({"record": …, "scope": …, "source": …}, ensure_ascii=False,
    sort_keys=True)`, the detail record_history writes for an import, spelled out: a dumps
    a version was several percent of a first import's own Python (a test compares the
    two)."""
    return (f'{{"record": {_quote(record_id)}, "scope": {_quote(data["scope"])}, '
            f'"source": {_quote(data["source"])}}}')
