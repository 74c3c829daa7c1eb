"""Issue 21: no raw control character reaches a terminal or a `--json` document from any
field, and undecodable bytes in argv never end in a traceback. Real subprocesses of the CLI,
reading the raw bytes they write."""

from __future__ import annotations

import json
import os
import subprocess
import sys

RAW = (b"\x1b", b"\xc2\x9b", b"\x07")  # ESC, U+009B (one-byte CSI) as UTF-8, BEL


def _run(repo, *args, stdin: bytes = b"", env: dict | None = None
         ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentstate", *args], cwd=repo, input=stdin,
                          capture_output=True, timeout=120,
                          env=None if env is None else {**os.environ, **env})


def test_an_undecodable_agent_name_is_one_line_not_a_traceback(initialised):
    done = _run(initialised, "hook", b"claude-code\xff")
    assert done.returncode == 0  # a hook never fails the agent
    assert b"Traceback" not in done.stderr
    assert b"unknown agent" in done.stderr and b"\\udcff" in done.stderr
    log = (initialised / ".agentstate" / "hook-errors.log").read_text(encoding="utf-8")
    assert "unknown agent" in log


def test_a_hook_event_name_is_never_echoed_raw(initialised, tmp_path):
    # Run where there is no store: the hook's one error line names the event.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    payload = {"hook_event_name": "Stop\x1b]0;owned\x07\x1b[2J\u009b2J", "session_id": "s"}
    # With no store the error is logged in the cache folder: a private one, so that the
    # session-wide cache other tests' `doctor` reads stays clean.
    done = _run(elsewhere, "hook", "claude-code", stdin=json.dumps(payload).encode(),
                env={"AGENTSTATE_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0 and done.stderr, done
    assert not any(raw in done.stderr for raw in RAW), done.stderr
    assert b"\\x1b[2J" in done.stderr


def test_json_output_never_holds_a_raw_c1_control(initialised):
    text = "the deploy flag \u009b31m is red \u202e reversed"
    done = _run(initialised, "remember", text, "--kind", "fact", "--json")
    assert done.returncode == 0, done.stderr
    assert b"\xc2\x9b" not in done.stdout and "\u202e".encode() not in done.stdout
    assert json.loads(done.stdout)["data"]["memory"]["text"] == text  # the value is exact
    listed = _run(initialised, "memory", "list", "--json")
    assert b"\xc2\x9b" not in listed.stdout
    assert [m["text"] for m in json.loads(listed.stdout)["data"]] == [text]
