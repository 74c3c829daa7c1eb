"""Failing tool results of a run, for `resume` and `context`.

A `tool` event (from `exec` or an imported transcript) keeps an excerpt of its output in its
meta (tools/excerpt.py chose it). A failure stays open until a later call of the same command
passes; the newest open failure is shown with its excerpt, older ones as one line each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentstate.runs.event_sql import RUN_ROW
from agentstate.runs.records import Run
from agentstate.store.db import Store
from agentstate.store.refs import make_ref

WINDOW = 50  # the newest tool events looked at: bounded, whatever the run's length


@dataclass
class ToolFailure:
    ref: str
    ts: str
    text: str  # the event's line: what ran and how it ended
    source: str
    excerpt: str


def tool_failed(meta: dict[str, Any]) -> bool:
    """Did this tool call fail: a non-zero exit, an error or failure flag, a timeout or an
    interrupt."""
    if (meta.get("error") is True or meta.get("failed") is True or meta.get("timed_out")
            or meta.get("interrupted")):
        return True
    code = meta.get("exit_code")
    return isinstance(code, int) and not isinstance(code, bool) and code != 0


def outcome_unknown(meta: dict[str, Any]) -> bool:
    """Nothing said how this call ended (a client that sends no exit code, an output with
    no runner's summary): neither a failure nor a pass."""
    return meta.get("outcome") == "unknown" and not tool_failed(meta)


def _command(text: str) -> str:
    # "$ pytest -q → exit 1 in 0.50s" and "Bash: pytest -q → error" name the call before " → ".
    return text.rsplit(" → ", 1)[0]


def open_failures(store: Store, run: Run, limit: int = 4) -> list[ToolFailure]:
    """The run's failing tool results that no later call of the same command passed,
    newest first (at most `limit`)."""
    rows = store.conn.execute(
        f"SELECT id, ts, text, source, meta FROM events WHERE run = {RUN_ROW} AND kind = 'tool' "
        "ORDER BY seq DESC LIMIT ?", (run.id, WINDOW),
    ).fetchall()
    seen: set[str] = set()  # commands with a newer result (passing, or already listed)
    out: list[ToolFailure] = []
    for eid, ts, text, source, raw in rows:
        meta = json.loads(raw or "{}")
        # The command itself where the event kept it: a failure's headline ("Bash exit 1:
        # reason ($ cmd)") and a later pass ("Bash: $ cmd → ok") do not share a prefix.
        command = meta.get("command") if isinstance(meta.get("command"), str) \
            else _command(text)
        if outcome_unknown(meta):
            # Not a pass: an earlier failure of the same command stays open.
            continue
        if tool_failed(meta) and command not in seen and len(out) < limit:
            out.append(ToolFailure(make_ref("evt", eid), ts, text, source,
                                   str(meta.get("excerpt") or "")))
        seen.add(command)
    return out
