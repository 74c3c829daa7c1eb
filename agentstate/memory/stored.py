"""A stored memory version as a record: `MemoryVersion`, built from a `memories` row by one
function. The write gate, the version rules, forget and sync decide on these; `Memory`
(memory.model) is the shown form."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from agentstate.memory.status import MemoryStatus
from agentstate.store.refs import make_ref

if TYPE_CHECKING:
    from agentstate.store.db import Store


@dataclass(frozen=True)
class MemoryVersion:
    """One stored version as the `memories` table holds it (stored status, confidence not
    rounded, `supersedes` a version number): what the write, versions, forget and sync code
    reads and decides on. `Memory` is the shown form (derived status, evidence loaded)."""

    row: int
    id: str
    version: int
    kind: str
    key: str | None
    scope: str
    text: str
    norm_hash: str
    source: str
    status: MemoryStatus  # the stored status (expired is derived by readers)
    confidence: float
    valid_until: str | None
    created: str
    last_confirmed: str
    evidence_count: int
    supersedes: int | None  # version number in the same chain
    principal: str
    status_reason: str
    prior_status: MemoryStatus | None  # the status before a tombstone
    purged: bool
    # The scanner's mark: the fingerprint of the secret scanner that passed its text, key,
    # scope and source (memory/scanned.py, m058); None until one has.
    scanned_with: str | None = None
    # The id of the version's shared line as a first export would write it (m066,
    # memory/shared_line.py); None when not kept or dropped since.
    line_id: str | None = None
    # Not a column: a purge loads a version's evidence refs here (dataclasses.replace).
    evidence_refs: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return make_ref("mem", self.id, self.version)


_COLUMNS = tuple(f.name for f in fields(MemoryVersion) if f.name != "evidence_refs")
# The column list every MemoryVersion query selects (its order need not match a table's).
VERSION_COLUMNS = ", ".join(_COLUMNS)


def version_from_row(row: dict[str, Any]) -> MemoryVersion:
    """The one way a `memories` row becomes a record."""
    values = {name: row[name] for name in _COLUMNS}
    values["purged"] = bool(values["purged"])
    values["status"] = MemoryStatus(values["status"])
    if values["prior_status"] is not None:
        values["prior_status"] = MemoryStatus(values["prior_status"])
    return MemoryVersion(**values)


def select_versions(store: Store, where: str, params: Any = ()) -> list[MemoryVersion]:
    """`SELECT … FROM memories <where>` as records (`where` includes ORDER BY)."""
    return [version_from_row(r) for r in
            store.rows(f"SELECT {VERSION_COLUMNS} FROM memories {where}", params)]


def with_evidence_refs(conn: Any, rows: list[MemoryVersion]) -> list[MemoryVersion]:
    """The versions with their evidence refs loaded (what a purge scrubs besides the text)."""
    return [replace(row, evidence_refs=tuple(r[0] for r in conn.execute(
        "SELECT ref FROM memory_evidence WHERE memory_row = ?", (row.row,)))) for row in rows]
