"""Closed sets of statuses are StrEnums, stored as the same strings as before.

Run, skill version and memory statuses each have one definition (runs/status.py,
skills/status.py, memory/status.py); code compares a record's `.status` with those members,
never with a bare string literal a typo could silently change.
"""

from __future__ import annotations

import ast
from pathlib import Path

import agentstate
from agentstate.memory.status import MemoryStatus
from agentstate.runs.log import end_run, get_run, start_run
from agentstate.runs.status import RunStatus
from agentstate.skills.status import SkillStatus

PACKAGE = Path(agentstate.__file__).parent
ENUMS = (RunStatus, SkillStatus, MemoryStatus)
VALUES = {m.value for enum in ENUMS for m in enum}


def test_stored_values_are_unchanged():
    assert [s.value for s in RunStatus] == ["active", "done", "abandoned"]
    assert [s.value for s in SkillStatus] == ["candidate", "published", "revoked"]
    assert [s.value for s in MemoryStatus] == [
        "active", "contested", "candidate", "quarantined", "superseded", "forgotten"]


def test_a_run_reads_back_as_a_run_status_and_is_stored_as_text(store):
    run, _ = start_run(store, "status round trip")
    assert run.status is RunStatus.ACTIVE
    ended = end_run(store, run.ref, "abandoned")
    assert ended.status is RunStatus.ABANDONED and get_run(store, run.ref).status == "abandoned"
    [(stored, kind)] = store.conn.execute(
        "SELECT status, typeof(status) FROM runs WHERE id = ?", (run.id,)).fetchall()
    assert (stored, kind) == ("abandoned", "text")


def bare_status_comparisons(source: str) -> list[int]:
    """Lines comparing `x.status` / `x.run_status` with a string literal of a closed set."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr in ("status", "run_status")
                   for s in sides):
            continue
        literals = [c for s in sides for c in ast.walk(s)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if any(c.value in VALUES for c in literals):
            found.append(node.lineno)
    return found


def test_no_status_is_compared_with_a_bare_string():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = bare_status_comparisons(path.read_text(encoding="utf-8"))
        if lines:
            offenders[path.relative_to(PACKAGE).as_posix()] = lines
    assert offenders == {}


def test_the_scan_sees_a_bare_comparison():
    code = ('if run.status != "active": pass\n'
            'if r.status in ("candidate", "quarantined"): pass\n'
            'if run.status != RunStatus.ACTIVE: pass\n'
            'if m.status == "expired": pass\n')
    assert bare_status_comparisons(code) == [1, 2]
