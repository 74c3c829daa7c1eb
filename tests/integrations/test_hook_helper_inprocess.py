"""The hook helper's parts run inside the test process (test_hook_helper.py runs the helper as
the real background process): the child's side of one exchange over a socket pair, the
rehearsal, and the code stamp that makes a helper leave after an upgrade."""

from __future__ import annotations

import json
import marshal
import os
import socket
import threading
from pathlib import Path

import pytest

from agentstate.integrations import hook_client
from agentstate.integrations.hook_server import code_stamp, rehearse, serve_one
from tests.conftest import FIXTURES


@pytest.fixture
def process_state():
    """serve_one takes on the hook's environment and directory, as a forked child does:
    here it runs in the test process, so both are put back afterwards."""
    environ, cwd = dict(os.environ), os.getcwd()
    yield
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)


def _payload(cwd: Path) -> bytes:
    text = (FIXTURES / "hooks" / "claude-code" / "post_tool_use_bash.json").read_text()
    data = json.loads(text.replace("__CWD__", str(cwd)))
    data["transcript_path"] = str(cwd / "no-such-transcript.jsonl")
    return json.dumps(data).encode()


def _child_serving(initialised: Path) -> tuple[socket.socket, socket.socket,
                                                threading.Thread]:
    """(our end, the child's end, the thread running serve_one as the forked child would)."""
    os.chdir(initialised)
    header = marshal.loads(hook_client.request_header(["hook", "claude-code", "PostToolUse"]))
    ours, theirs = socket.socketpair()
    child = threading.Thread(target=serve_one, args=(theirs, header, _payload(initialised)))
    child.start()
    ours.settimeout(60)
    return ours, theirs, child


def _exchange(initialised: Path, confirm: bool) -> tuple[bytes, dict | None]:
    ours, theirs, child = _child_serving(initialised)
    try:
        first = ours.recv(1)
        if not confirm:
            ours.close()
            child.join(60)
            return first, None
        ours.sendall(hook_client.GO)
        return first, marshal.loads(hook_client.read_frame(ours))
    finally:
        child.join(60)
        theirs.close()
        ours.close()


def test_one_exchange_runs_the_hook_once_confirmed(initialised, cli, process_state):
    first, answer = _exchange(initialised, confirm=True)
    assert first == hook_client.READY
    assert answer == {"code": 0, "stdout": "", "stderr": ""}
    assert [e["kind"] for e in cli.json("events", "--all")] == ["tool"]


def test_the_answer_goes_out_before_the_store_closes_with_everything_committed(
        initialised, cli, process_state, monkeypatch):
    """Closing the store (SQLite's checkpoint of its log, with an fsync) waits until the
    agent has its answer; what the hook wrote is already committed and readable then."""
    import sqlite3

    from agentstate.store.db import Store

    closing, may_close = threading.Event(), threading.Event()
    real_close = Store.close

    def held_close(self):
        closing.set()
        assert may_close.wait(60), "the answer never came while the store was open"
        real_close(self)

    monkeypatch.setattr(Store, "close", held_close)
    ours, _theirs, child = _child_serving(initialised)
    try:
        assert ours.recv(1) == hook_client.READY
        ours.sendall(hook_client.GO)
        # A close before the answer would block until `may_close`, set only below: the
        # answer would then never come (a timeout here).
        ours.settimeout(20)
        answer = marshal.loads(hook_client.read_frame(ours))
        assert answer["code"] == 0
        with sqlite3.connect(initialised / ".agentstate" / "state.db") as other:
            assert other.execute("SELECT count(*) FROM events WHERE kind = 'tool'"
                                 ).fetchone() == (1,)
    finally:
        may_close.set()
        child.join(60)
        ours.close()
    assert closing.is_set() and not child.is_alive()  # and then it closed


def test_the_turns_events_are_embedded_after_the_answer(initialised, cli, process_state):
    """The dense signal's vectors for what a hook logged are made by the helper's child once
    the agent has its answer (hook_runner.py), by the numpy-free reader: the next `context`
    pays for no model."""
    import sqlite3

    from agentstate.memory import dense_model

    _, answer = _exchange(initialised, confirm=True)
    assert answer is not None and answer["code"] == 0
    with sqlite3.connect(initialised / ".agentstate" / "state.db") as conn:
        rows = conn.execute("SELECT e.kind, n.name FROM events e "
                            "JOIN event_vectors v ON v.row = e.row "
                            "JOIN vector_models n ON n.id = v.model").fetchall()
    assert rows == [("tool", dense_model.current_model())]


def test_without_the_go_ahead_nothing_runs(initialised, cli, process_state):
    first, _ = _exchange(initialised, confirm=False)
    assert first == hook_client.READY
    assert cli.json("events", "--all") == []


def test_a_request_from_another_installation_is_refused(initialised, cli, process_state):
    os.chdir(initialised)
    header = marshal.loads(hook_client.request_header(["hook", "claude-code", "PostToolUse"]))
    header["package"] = "/elsewhere/agentstate"
    ours, theirs = socket.socketpair()
    try:
        serve_one(theirs, header, _payload(initialised))
        assert ours.recv(1) == hook_client.OTHER
    finally:
        ours.close()
        theirs.close()
    assert cli.json("events", "--all") == []


def test_the_rehearsal_puts_back_the_directory_and_environment(tmp_path, process_state):
    os.chdir(tmp_path)
    environ = dict(os.environ)
    assert rehearse() == []
    assert os.getcwd() == str(tmp_path) and dict(os.environ) == environ
    assert list(tmp_path.iterdir()) == []


def test_the_code_stamp_changes_with_any_python_file(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 1\n")
    (package / "notes.txt").write_text("not code\n")
    before = code_stamp(str(package))
    assert [Path(p).name for p, *_ in before] == ["a.py", "b.py"]
    (package / "notes.txt").write_text("still not code, longer\n")
    assert code_stamp(str(package)) == before
    (package / "sub" / "b.py").write_text("B = 22\n")
    assert code_stamp(str(package)) != before
