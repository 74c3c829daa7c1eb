"""The evals domain's one table: the reports of past `agentstate eval` runs.

`eval` measures in temporary stores and used to keep nothing; `agentstate ui`'s Eval page
draws the latest results, so each run's report is kept here — the same JSON `--json`
prints, beside the columns the page and a person pick reports by (kind, date, corpus,
arms, budgets). A table rather than files under `.agentstate/`: everything there but
state.db and skills/ is committed with the repository (it is policy), while a report
describes one machine on one day, like the run log; and the store's backup, restore and
one clock already cover state.db.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentstate.store.migrations import run_script

if TYPE_CHECKING:  # annotations only: importing sqlite_utils is slow
    import sqlite_utils


def m030_eval_reports(db: sqlite_utils.Database) -> None:
    run_script(
        db,
        """
        CREATE TABLE eval_reports (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,            -- scenarios | locomo
            created TEXT NOT NULL,         -- the store's clock when the run finished
            corpus TEXT NOT NULL,          -- what was measured: seeds, or the LoCoMo path
            arms TEXT NOT NULL,            -- JSON list
            budgets TEXT NOT NULL,         -- JSON list of ints
            report TEXT NOT NULL           -- JSON: the `data` of `eval … --json`
        );
        CREATE INDEX eval_reports_kind_created ON eval_reports(kind, created);
        """,
    )
