"""The MCP server's idle connection (store/db.py, `IdleConnection`): held
between calls so that a call's close is not the last close of the database, which would
checkpoint the write-ahead log into the file; never holding a transaction, so it keeps no
checkpoint or writer waiting and hides nothing from a call; following a new file put at
the store's path."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentstate.integrations import mcp_server, mcp_tools
from agentstate.maintenance.init import init_store
from agentstate.runs.log import append_event, start_run
from agentstate.store.db import open_store

ARGS = {"run": None, "budget": 4000, "query": None}


@pytest.fixture
def repo_store(repo) -> Path:
    """A store with a run, and no connection left open by the test itself."""
    init_store(target=repo)
    store = open_store(start=repo)
    try:
        run, _ = start_run(store, "warm the parser cache before the login suite")
        append_event(store, run.ref, "note", "the parser cache was cold when the suite ran")
    finally:
        store.close()
    return repo / ".agentstate"


def _call(service: mcp_server.StoreService) -> str:
    envelope, done = service.run_sync(lambda: service.envelope(
        "context", lambda s: mcp_tools._context(s, ARGS, "agent")))
    assert envelope["ok"], envelope
    return done.text


def _wal(root: Path) -> Path:
    return root / "state.db-wal"


def _fresh_pack(repo: Path) -> str:
    """The same pack built by another process, which keeps nothing."""
    script = textwrap.dedent("""
        from agentstate.context.assemble import build_context
        from agentstate.store.db import open_store
        store = open_store()
        print(build_context(store, budget=4000, save=False, principal="agent").text, end="")
        store.close()
    """)
    return subprocess.run([sys.executable, "-c", script], cwd=repo, check=True,
                          env=os.environ, capture_output=True, text=True).stdout


def test_a_calls_close_leaves_the_log_to_the_idle_connection(repo_store):
    service = mcp_server.StoreService(str(repo_store), "agent")
    try:
        _call(service)
        # The pack's manifest was committed to the log; the call's close was not the last,
        # so nothing checkpointed the log into the file and removed it.
        assert _wal(repo_store).exists() and _wal(repo_store).stat().st_size > 0
    finally:
        service.shutdown()
    # The idle connection, closed last, checkpoints and removes the log as any last close.
    assert not _wal(repo_store).exists()


def test_the_idle_connection_holds_no_snapshot(repo_store, repo):
    service = mcp_server.StoreService(str(repo_store), "agent")
    try:
        _call(service)
        subprocess.run([sys.executable, "-c", textwrap.dedent("""
            from agentstate.runs.log import append_event, current_run
            from agentstate.store.db import open_store
            store = open_store()
            append_event(store, current_run(store).ref, "question",
                         "why does the login suite time out under the parser cache?")
            store.close()
        """)], cwd=repo, check=True, env=os.environ)
        # A full checkpoint needs every reader on the newest snapshot: an idle connection
        # inside a read transaction would make it report busy and leave the log as it is.
        with sqlite3.connect(repo_store / "state.db") as other:
            busy, _, _ = other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0 and _wal(repo_store).stat().st_size == 0
        text = _call(service)
    finally:
        service.shutdown()
    assert "why does the login suite time out" in text
    assert text == _fresh_pack(repo)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_the_idle_connection_follows_another_file_at_the_path(repo_store, repo, tmp_path):
    service = mcp_server.StoreService(str(repo_store), "agent")
    aside = tmp_path / "aside"
    try:
        _call(service)
        old = os.stat(repo_store / "state.db")
        # What a restore does: the whole store folder moved aside, another put in its place.
        shutil.copytree(repo_store, aside / "copy")
        repo_store.rename(aside / "old")
        (aside / "copy").rename(repo_store)
        _call(service)
        opened = service.run_sync(_open_files)
        assert (old.st_dev, old.st_ino) not in opened  # the old file is released
        new = os.stat(repo_store / "state.db")
        assert (new.st_dev, new.st_ino) in opened  # and the new one is held
    finally:
        service.shutdown()


def _open_files() -> set[tuple[int, int]]:
    """(device, inode) of every file this process holds open."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            info = os.stat(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        found.add((info.st_dev, info.st_ino))
    return found


def _answered(service: mcp_server.StoreService) -> dict:
    """A `context` call as the server answers it (`later`), and what runs after the answer."""
    answers: list[dict] = []
    service.later(lambda: service.tool_result(
        "context", lambda s: mcp_tools._context(s, ARGS, "agent"))).start(
        answers.append, lambda failure: answers.append({"failure": failure}))
    service.run_sync(lambda: None)  # queued behind the call and its after-answer work
    assert answers and not answers[0].get("isError"), answers
    return answers[0]


def _log_frames(root: Path) -> int:
    """The frames in the log now (a passive checkpoint by another connection reports them)."""
    with sqlite3.connect(root / "state.db") as other:
        busy, frames, _ = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0
    return frames


def test_the_log_is_checkpointed_after_every_few_answers(repo_store):
    """Every CHECKPOINT_EVERY answers the idle connection copies the log into the file, and
    the next commit starts the log afresh: after twice that many calls the log holds the
    frames of the last CHECKPOINT_EVERY calls. Without it the log keeps every call's frames
    until SQLite's auto-checkpoint, paid inside a later call's commit."""
    every = mcp_server.CHECKPOINT_EVERY
    service = mcp_server.StoreService(str(repo_store), "agent")
    try:
        _answered(service)  # the first call writes more (the run's first pack)
        _log_frames(repo_store)
        _answered(service)
        one = _log_frames(repo_store)  # one call's frames
        for _ in range(2 * every - 2):  # up to the second checkpoint of this service
            _answered(service)
        frames = _log_frames(repo_store)
    finally:
        service.shutdown()
    assert 0 < one and frames < 1.5 * every * one, (one, frames)
