"""The skills catalog's scores kept between packs of a long-lived process
(skills/catalog.py, `scored_skills`, under m054's `skill_changes` and the database file's
identity: store/kept.py). Scored once while nothing changed; scored again after every
kind of write to `skill_versions` another connection or process makes — a skill revoked,
a version published, a description rewritten in place, a row deleted — so that each pack
equals one built with nothing kept. Which tools can run here is checked on every call."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentstate.context.assemble import build_context
from agentstate.runs.log import append_event, start_run
from agentstate.skills.catalog import match_skills, skill_changes
from agentstate.store import kept
from agentstate.store.db import open_store

QUERY = "resume the task and run the tests to verify the change"


def _pack(repo: Path) -> str:
    """A pack from a store opened afresh, as each MCP call opens it."""
    store = open_store(start=repo)
    try:
        return build_context(store, budget=8000, query=QUERY, save=False,
                             principal="agent").text
    finally:
        store.close()


def _unkept(repo: Path) -> str:
    kept.forget_kept()
    return _pack(repo)


def _other_process(repo: Path, code: str) -> None:
    script = textwrap.dedent("""
        import json
        from agentstate.skills.revocation import revoke_skill
        from agentstate.store.db import open_store
        store = open_store()
    """) + textwrap.dedent(code) + "\nstore.close()\n"
    subprocess.run([sys.executable, "-c", script], cwd=repo, check=True, env=os.environ,
                   capture_output=True, text=True)


@pytest.fixture
def run(store):
    started, _ = start_run(store, "resume the task and verify the change")
    append_event(store, started.ref, "note", "the login suite was red before the fix")
    return started


def test_every_write_to_skill_versions_moves_the_count(store):
    conn = store.conn
    statements = (
        "INSERT INTO skill_versions (name, version, status, description, triggers, created) "
        "VALUES ('probe', 1, 'published', 'A probe.', '[]', '2026')",
        "UPDATE skill_versions SET description = 'Another probe.' WHERE name = 'probe'",
        "DELETE FROM skill_versions WHERE name = 'probe'",
    )
    for sql in statements:
        before = skill_changes(conn)
        with conn:
            assert conn.execute(sql).rowcount == 1, sql
        assert skill_changes(conn) == before + 1, sql


def test_the_scores_are_read_once_while_nothing_changed(store):
    first = match_skills(store, QUERY)
    assert {m.name for m in first} >= {"resume-task", "verify-tests"}
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        again = match_skills(store, QUERY)
    finally:
        store.conn.set_trace_callback(None)
    assert again == first
    assert not [s for s in seen if "FROM skill_versions" in s], seen
    # Another task's words are scored for themselves.
    assert [m.name for m in match_skills(store, "remember this fact")] == ["record-memory"]


def test_skills_another_process_revokes_publishes_and_rewrites_reach_the_next_pack(run, repo):
    base = _pack(repo)
    assert "skill:verify-tests@v1" in base and base == _unkept(repo)
    _pack(repo)  # the scores kept for this query from here on
    _other_process(repo, "revoke_skill(store, 'verify-tests', 'replaced', principal='owner')")
    revoked = _pack(repo)
    assert "skill:verify-tests@v1" not in revoked and revoked == _unkept(repo)
    _pack(repo)
    _other_process(repo, """
        with store.transaction() as conn:
            conn.execute("INSERT INTO skill_versions (name, version, status, description,"
                         " triggers, created) VALUES ('verify-change', 1, 'published',"
                         " 'Verify the change with the tests.', ?, '2026')",
                         (json.dumps(["verify the change", "run the tests"]),))
    """)
    published = _pack(repo)
    assert "skill:verify-change@v1" in published and published == _unkept(repo)
    _pack(repo)
    _other_process(repo, """
        with store.transaction() as conn:
            conn.execute("UPDATE skill_versions SET description = 'Check the flaky login"
                         " suite by hand.' WHERE name = 'verify-change'")
    """)
    rewritten = _pack(repo)
    assert "flaky login suite by hand" in rewritten and rewritten == _unkept(repo)
    _pack(repo)
    _other_process(repo, """
        with store.transaction() as conn:
            conn.execute("DELETE FROM skill_versions WHERE name = 'verify-change'")
    """)
    deleted = _pack(repo)
    assert "skill:verify-change@v1" not in deleted and deleted == _unkept(repo)


def test_a_connection_of_this_process_writing_is_seen_too(store):
    match_skills(store, QUERY)
    other = sqlite3.connect(store.db_path)
    with other:
        other.execute("UPDATE skill_versions SET status = 'revoked' WHERE name = 'resume-task'")
    other.close()
    assert "resume-task" not in {m.name for m in match_skills(store, QUERY)}
