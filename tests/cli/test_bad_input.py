"""Bad input from the foundation issue: a one-line message naming the problem, a non-zero
exit, no traceback, and nothing half-written."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli, run_agentstate


def _db_digest(repo: Path) -> str:
    """The logical content of every table (independent of WAL/page layout)."""
    db = sqlite3.connect(repo / ".agentstate" / "state.db")
    digest = hashlib.sha256()
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    for table in tables:
        try:
            rows = sorted(repr(r) for r in db.execute(f'SELECT * FROM "{table}"'))
        except sqlite3.OperationalError:  # a virtual table whose module is not loaded here
            continue
        digest.update(f"{table}:{rows}".encode())
    db.close()
    return digest.hexdigest()


def _assert_clean_failure(result, code: int = 1, needle: str | None = None) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    message = result.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    assert "Traceback" not in result.stderr + result.stdout
    if needle:
        assert needle in message, message


_TEMPLATE: dict = {}


@pytest.fixture
def active(cli, repo, tmp_path_factory):
    """An initialised store with an active run, a question and a verify. Built once per
    session and copied into each test's repository (init is the slow part)."""
    if not _TEMPLATE:
        source = tmp_path_factory.mktemp("template")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=source, check=True)
        os.chdir(source)
        try:
            cli.ok("init")
            cli.ok("run", "start", "goal", "-c", "a constraint")
            _TEMPLATE["refs"] = {
                "question": cli.json("log", "question", "open?")["ref"],
                "verify": cli.json("log", "verify", "check")["ref"],
            }
        finally:
            os.chdir(repo)
        _TEMPLATE["root"] = source / ".agentstate"
    shutil.copytree(_TEMPLATE["root"], repo / ".agentstate", symlinks=True)
    return dict(_TEMPLATE["refs"])


@pytest.mark.parametrize(
    "args, needle",
    [
        (["log", "banana", "text"], "unknown event kind 'banana'"),
        (["log", "checkpoint", "text"], "unknown event kind 'checkpoint'"),  # system kind
        (["log", "note", ""], "the event text is empty"),
        (["log", "note", "   \n "], "the event text is empty"),
        (["log", "note", "x", "--source", "somebody"], "invalid source"),
        (["log", "note", "x", "--meta", "novalue"], "--meta expects KEY=VALUE"),
        (["log", "answer", "x"], "needs --resolves"),
        (["log", "answer", "x", "--resolves", "evt:zzzzzzzzzz"], "no event evt:zzzzzzzzzz"),
        (["log", "answer", "x", "--resolves", "evt:NOT-A-REF"], "malformed ref"),
        (["log", "answer", "x", "--resolves", "run:abcdefgh"], "is a run ref"),
        (["log", "note", "x", "--run", "run:zzzzzzzzzz"], "no run run:zzzzzzzzzz"),
        (["log", "note", "x", "--run", "garbage"], "malformed ref"),
        (["run", "show", "run:zzzzzzzzzz"], "no run"),
        (["run", "show", "evt:abcdefgh"], "is an evt ref"),
        (["run", "end", "nope", "--status", "done"], "malformed ref"),
        (["run", "start", " "], "the goal is empty"),
        (["run", "start", "goal", "-c", ""], "a constraint is empty"),
        (["events", "--kind", "banana"], "unknown event kind"),
        (["events", "--limit", "0"], "--limit must be at least 1"),
        (["resume", "run:zzzzzzzzzz"], "no run"),
        (["resume", "mem:abcdefgh"], "is a mem ref"),
        (["checkpoint", "--note", ""], "the checkpoint note is empty"),
        (["checkpoint", "--run", "run:zzzzzzzzzz"], "no run"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(cli, active, repo, args, needle):
    initialised = repo
    before = _db_digest(initialised)
    _assert_clean_failure(cli(*args), 1, needle)
    assert _db_digest(initialised) == before


def test_resolves_pointing_at_the_wrong_kind(cli, active, repo):
    initialised = repo
    before = _db_digest(initialised)
    result = cli("log", "answer", "yes", "--resolves", active["verify"])
    _assert_clean_failure(result, 1, "it is a verify, expected question")
    result = cli("log", "verified", "passed", "--resolves", active["question"])
    _assert_clean_failure(result, 1, "it is a question, expected verify")
    result = cli("log", "note", "x", "--resolves", active["question"])
    _assert_clean_failure(result, 1, "cannot resolve")
    assert _db_digest(initialised) == before


def test_errors_as_json_envelope(cli, active):
    result = cli("log", "banana", "x", "--json")
    assert result.exit_code == 1
    payload = result.json()
    assert payload["ok"] is False and payload["command"] == "log"
    assert payload["error"]["code"] == "invalid_input"


def test_run_end_on_a_finished_run_in_a_subprocess(cli, active, repo):
    initialised = repo
    run = cli.json("run", "show")["run"]["ref"]
    cli.ok("run", "end", run, "--status", "done")
    proc = run_agentstate("run", "end", run, "--status", "abandoned", cwd=initialised)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"error: {run} already ended (done at " \
        f"{cli.json('run', 'show', run)['run']['ended']})"
    # And logging into it is refused too.
    proc = run_agentstate("log", "note", "late", "--run", run, cwd=initialised)
    assert proc.returncode == 1 and "has ended" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "start", "goal"], ["run", "list"], ["run", "show"], ["run", "end"],
        ["log", "note", "x"], ["events"], ["checkpoint"], ["resume"],
        ["import", "jsonl", "x.jsonl"], ["doctor"],
    ],
)
def test_commands_outside_an_initialised_repo(tmp_path, monkeypatch, args):
    # In-process (the same handler the console script uses); test_foundation_core and the
    # read-only/corrupt tests below cover the real subprocess.
    (tmp_path / "x.jsonl").write_text('{"kind": "note", "text": "x"}\n')
    monkeypatch.chdir(tmp_path)
    result = Cli()(*args)
    _assert_clean_failure(result, 1, "agentstate init")
    assert result.stderr.startswith("error: no .agentstate store")
    assert not (tmp_path / ".agentstate").exists()


def test_dir_override_pointing_nowhere(tmp_path):
    proc = run_agentstate("--dir", str(tmp_path / "nowhere"), "resume", cwd=tmp_path)
    assert proc.returncode == 1 and "no agentstate store" in proc.stderr


@pytest.mark.parametrize("args", [["log", "note", "x"], ["resume"]])
def test_state_db_that_is_not_a_database(initialised, args):
    db = initialised / ".agentstate" / "state.db"
    for extra in db.parent.glob("state.db-*"):
        extra.unlink()
    db.write_bytes(b"this is not a database\n" * 100)
    proc = run_agentstate(*args, cwd=initialised)
    assert proc.returncode == 1
    assert "is not a usable SQLite database" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert db.read_bytes() == b"this is not a database\n" * 100  # untouched


def _without_privileges(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run the CLI so that file permissions apply: as root, drop every capability (root
    ignores chmod otherwise); as a normal user, run it as is."""
    command = [sys.executable, "-m", "agentstate", *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a directory read-only "
                        "for this process")
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-all", *command]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ))


@pytest.mark.parametrize("args", [["log", "note", "x"], ["checkpoint", "--note", "n"]])
def test_read_only_store(cli, active, repo, args):
    initialised = repo
    root = initialised / ".agentstate"
    before = _db_digest(initialised)
    paths = [root, *root.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    try:
        for p in paths:
            p.chmod(p.stat().st_mode & ~0o222)
        proc = _without_privileges(args, initialised)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "read-only" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert _db_digest(initialised) == before


def test_doctor_on_a_read_only_store(cli, active, repo):
    root = repo / ".agentstate"
    paths = [root, *root.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths}
    try:
        for p in paths:
            p.chmod(p.stat().st_mode & ~0o222)
        proc = _without_privileges(["doctor"], repo)
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "FAIL writable: not writable: .agentstate, state.db" in proc.stdout
    assert "Traceback" not in proc.stderr
