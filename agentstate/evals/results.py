"""Keeping `agentstate eval` reports in the store, and reading them back for `agentstate ui`.

What is kept is the report as `eval … --json` prints it (its `data`), so the page draws the
same numbers a script reading the JSON gets. Only the newest KEEP_PER_KIND reports of each
kind are kept: a report is a few kilobytes, but a loop that runs `eval` on every commit
should not grow the store without end (every pinned thing has a ceiling).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentstate.errors import NotFound
from agentstate.output import to_jsonable
from agentstate.safety import refuse_secrets
from agentstate.store.db import Store

KINDS = ("scenarios", "locomo")
KEEP_PER_KIND = 20


@dataclass
class StoredEval:
    id: str
    kind: str
    created: str
    corpus: str
    arms: list[str]
    budgets: list[int]
    report: dict[str, Any]


def corpus_of(kind: str, data: dict[str, Any]) -> str:
    """What a report measured, in a few words: the seeds, or the LoCoMo file or folder."""
    if kind == "scenarios":
        seeds = data.get("seeds") or []
        if len(seeds) > 1:
            return f"generated scenarios, seeds {seeds[0]}–{seeds[-1]}"
        return f"generated scenarios, seed {seeds[0]}" if seeds else "generated scenarios"
    return f"LoCoMo {data.get('path', '')}".strip()


def keep_report(store: Store, kind: str, report: Any) -> StoredEval:
    """Store one finished run's report; drop this kind's reports beyond the newest
    KEEP_PER_KIND. The JSON goes through the secret rule like every other write."""
    if kind not in KINDS:
        raise ValueError(f"unknown eval kind {kind!r}")
    data = to_jsonable(report)
    text = json.dumps(data, sort_keys=True)
    refuse_secrets(text, "the eval report")
    kept = StoredEval(id=store.new_id(), kind=kind, created=store.now(),
                      corpus=corpus_of(kind, data), arms=list(data.get("arms") or []),
                      budgets=[int(b) for b in data.get("budgets") or []], report=data)
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO eval_reports (id, kind, created, corpus, arms, budgets, report) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kept.id, kind, kept.created, kept.corpus, json.dumps(kept.arms),
             json.dumps(kept.budgets), text))
        # rowid breaks ties between reports kept within one clock tick.
        conn.execute(
            "DELETE FROM eval_reports WHERE kind = ? AND id NOT IN (SELECT id FROM "
            "eval_reports WHERE kind = ? ORDER BY created DESC, rowid DESC LIMIT ?)",
            (kind, kind, KEEP_PER_KIND))
    return kept


_COLUMNS = "id, kind, created, corpus, arms, budgets, report"


def _stored(row: dict[str, Any]) -> StoredEval:
    return StoredEval(id=row["id"], kind=row["kind"], created=row["created"],
                      corpus=row["corpus"], arms=json.loads(row["arms"]),
                      budgets=json.loads(row["budgets"]), report=json.loads(row["report"]))


def latest_reports(store: Store) -> list[StoredEval]:
    """The newest report of each kind (scenarios first), the kinds never run left out."""
    found = []
    for kind in KINDS:
        row = store.row(f"SELECT {_COLUMNS} FROM eval_reports WHERE kind = ? "
                        "ORDER BY created DESC, rowid DESC LIMIT 1", (kind,))
        if row is not None:
            found.append(_stored(row))
    return found


def get_report(store: Store, report_id: str) -> StoredEval:
    row = store.row(f"SELECT {_COLUMNS} FROM eval_reports WHERE id = ?", (report_id,))
    if row is None:
        raise NotFound(f"no eval report {report_id!r}")
    return _stored(row)


@dataclass
class EvalSummary:
    id: str
    kind: str
    created: str
    corpus: str


def list_reports(store: Store) -> list[EvalSummary]:
    """Every kept report, newest first (at most KEEP_PER_KIND of each kind)."""
    return [EvalSummary(**row) for row in store.rows(
        "SELECT id, kind, created, corpus FROM eval_reports ORDER BY created DESC, rowid DESC")]
