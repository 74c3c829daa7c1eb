"""The one error boundary around the CLI: every error class, unexpected exceptions, Ctrl-C,
arguments that are not UTF-8, and envelopes named by the command that ran."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from agentstate import errors
from agentstate.cli import app, load_commands
from tests.cli.test_bad_input import _db_digest
from tests.conftest import ROOT, failing_import_env, into_closed_pipe, run_agentstate

PY = sys.executable
TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def _raise_from_run_list(monkeypatch, exc: BaseException) -> None:
    """`run list` calls runs.log.list_runs at run time: make it raise `exc`."""
    import agentstate.runs.log

    def broken(*args, **kwargs):
        raise exc

    monkeypatch.setattr(agentstate.runs.log, "list_runs", broken)


# (exception, envelope code, exit code, text in the message)
FAMILY = [
    (errors.AgentStateError("plain failure"), "error", 1, "plain failure"),
    (errors.NotFound("no run run:x"), "not_found", 1, "no run run:x"),
    (errors.InvalidInput("bad kind"), "invalid_input", 1, "bad kind"),
    (errors.StoreMissing("no .agentstate store"), "no_store", 1, "no .agentstate store"),
    (errors.CorruptStore("damaged"), "corrupt_store", 1, "damaged"),
    (errors.UsageError("pass either --run or --goal"), "usage", 2, "pass either"),
    (errors.Refused("a secret"), "refused", 3, "a secret"),
    (errors.BudgetTooSmall(10, 92), "budget_too_small", 3, "minimum of 92"),
    (errors.Internal("a bug"), "internal", 70, "a bug"),
    (errors.Interrupted(), "interrupted", 130, "interrupted"),
    # What as_agentstate_error translates: failures a user can cause, not bugs.
    (sqlite3.OperationalError("database is locked"), "error", 1, "the store is busy"),
    (sqlite3.DatabaseError("file is not a database"), "corrupt_store", 1, "damaged"),
    (PermissionError(errno.EACCES, "Permission denied", "/x/state.db"), "error", 1,
     "permission denied: /x/state.db"),
    (OSError(errno.ENOSPC, "No space left on device", "/x/state.db"), "error", 1,
     "No space left on device: /x/state.db"),
    (KeyboardInterrupt(), "interrupted", 130, "interrupted"),
]


def test_the_table_names_every_error_class():
    covered = {type(exc) for exc, *_ in FAMILY}
    family = {cls for cls in vars(errors).values()
              if isinstance(cls, type) and issubclass(cls, errors.AgentStateError)}
    assert family <= covered, family - covered


@pytest.mark.parametrize("exc, code, exit_code, needle", FAMILY,
                         ids=[type(e).__name__ for e, *_ in FAMILY])
def test_each_error_maps_to_its_exit_code_and_envelope(cli, initialised, monkeypatch,
                                                       exc, code, exit_code, needle):
    _raise_from_run_list(monkeypatch, exc)
    as_json = cli("run", "list", "--json")
    assert as_json.exit_code == exit_code, (as_json.stdout, as_json.stderr)
    payload = as_json.json()  # exactly one JSON document
    assert payload["ok"] is False and payload["command"] == "run list"
    assert payload["error"]["code"] == code and needle in payload["error"]["message"]
    assert as_json.stderr == ""

    human = cli("run", "list")
    assert human.exit_code == exit_code and human.stdout == ""
    assert human.stderr.startswith("error: ") and human.stderr.count("\n") == 1
    assert needle in human.stderr


def test_usage_errors_answer_with_the_envelope_wherever_json_is(cli, initialised):
    # --json is parsed before the other options, so a bad value anywhere still gets the
    # envelope; a command line click could not parse at all falls back to the token.
    for args in (("recall", "x", "--json", "--limit", "abc"),
                 ("recall", "x", "--limit", "abc", "--json"),
                 ("recall", "x", "--json", "--no-such-option"),
                 ("log", "--json")):
        result = cli(*args)
        assert result.exit_code == 2, args
        payload = result.json()
        assert payload["error"]["code"] == "usage" and payload["command"] in ("recall", "log")
    plain = cli("recall", "x", "--limit", "abc")
    assert plain.exit_code == 2 and plain.stdout == ""
    assert plain.stderr.startswith("error: ") and plain.stderr.count("\n") == 1
    assert "agentstate recall --help" in plain.stderr and "not a valid int" in plain.stderr


def test_json_is_the_parsed_option_not_the_token(cli, initialised):
    cli.ok("run", "start", "goal")
    # "--json" here is the value of --source: no envelope, the plain error line.
    result = cli("log", "note", "x", "--source", "--json")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith("error: invalid source '--json'")
    both = cli("log", "note", "x", "--source", "--json", "--json")
    assert both.exit_code == 1 and both.json()["error"]["code"] == "invalid_input"


def test_usage_errors_are_redacted_in_process(cli, initialised):
    result = cli("recall", "x", "--limit", TOKEN, "--json")
    assert result.exit_code == 2 and TOKEN not in result.stdout + result.stderr
    result = cli("recall", "x", "--limit", TOKEN)
    assert result.exit_code == 2 and TOKEN not in result.stdout + result.stderr


def _crash_logs(directory: Path) -> list[Path]:
    return sorted(directory.glob("crash-*.log"))


def test_an_unexpected_exception_is_an_internal_error_with_a_crash_log(cli, initialised,
                                                                         monkeypatch):
    cache = Path(os.environ["AGENTSTATE_CACHE_DIR"])
    before = set(_crash_logs(cache))
    _raise_from_run_list(monkeypatch, RuntimeError("boom while holding " + TOKEN))

    result = cli("run", "list")
    assert result.exit_code == 70 and result.stdout == ""
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: internal error (RuntimeError: boom")
    assert TOKEN not in result.stderr
    [log] = set(_crash_logs(cache)) - before
    assert str(log) in result.stderr
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom" in text
    assert "command: agentstate run list" in text
    assert TOKEN not in text and "[REDACTED]" in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"

    as_json = cli("run", "list", "--json")
    assert as_json.exit_code == 70 and "Traceback" not in as_json.stderr
    payload = as_json.json()
    assert payload["ok"] is False and payload["command"] == "run list"
    assert payload["error"]["code"] == "internal"
    crash_log = Path(payload["error"]["details"]["crash_log"])
    assert crash_log.is_file() and str(crash_log) in as_json.stderr  # stderr names it too


def test_crash_logs_default_to_the_user_cache(cli, initialised, monkeypatch, isolated_home):
    monkeypatch.delenv("AGENTSTATE_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    _raise_from_run_list(monkeypatch, ValueError("odd"))
    result = cli("run", "list")
    assert result.exit_code == 70
    [log] = _crash_logs(isolated_home / ".cache" / "agentstate")
    assert str(log) in result.stderr


def test_a_crash_log_that_cannot_be_written_still_gives_one_line(cli, initialised,
                                                                 monkeypatch, tmp_path):
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache directory should be")
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(blocked / "cache"))
    _raise_from_run_list(monkeypatch, RuntimeError("boom"))
    result = cli("run", "list")
    assert result.exit_code == 70 and result.stderr.count("\n") == 1
    assert "no crash log written" in result.stderr and "Traceback" not in result.stderr


def test_an_internal_error_in_a_real_process_has_no_traceback(initialised, tmp_path):
    # A real crash, not a planted one: a failing import of a command module.
    env = failing_import_env(tmp_path, "agentstate.cli.doctor_cmd")
    proc = run_agentstate("doctor", "--json", cwd=initialised, env=env)
    assert proc.returncode == 70, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    payload = json.loads(proc.stdout)
    assert payload["error"]["code"] == "internal"
    assert "cannot load agentstate.cli.doctor_cmd" in Path(
        payload["error"]["details"]["crash_log"]).read_text()


# Ctrl-C in a real process, under --json and not: test_exec's
# test_an_interrupted_call_is_still_logged (the interrupted call is logged first).


@pytest.mark.parametrize("args", [["run", "list", "--json"], ["run", "list"]])
def test_a_closed_stdout_ends_quietly(initialised, args):
    proc = into_closed_pipe(args, initialised)  # the reader gone before anything is written
    assert proc.returncode == 1 and proc.stderr == ""


# (argv with raw bytes, the argument the message names)
UNDECODABLE = [
    ([b"log", b"observation", b"ok \xff"], "TEXT"),
    ([b"log", b"note", b"fine", b"--meta", b"k=\xfe"], "--meta"),
    ([b"remember", b"tests run with \xffmake", b"--kind", b"fact"], "TEXT"),
    ([b"run", b"start", b"goal \xc3"], "GOAL"),
    ([b"context", b"--query", b"\xffparser"], "--query"),
]


@pytest.mark.parametrize("argv, label", UNDECODABLE, ids=[a[0].decode() + "-" + lab
                                                               for a, lab in UNDECODABLE])
def test_arguments_that_are_not_utf8_are_invalid_input(initialised, argv, label):
    assert run_agentstate("run", "start", "goal", cwd=initialised).returncode == 0
    before = _db_digest(initialised)
    command = [PY, "-m", "agentstate", *argv]
    plain = subprocess.run(command, cwd=initialised, capture_output=True, timeout=60)
    assert plain.returncode == 1, plain.stderr
    message = plain.stderr.decode()
    assert message.startswith(f"error: {label} is not valid UTF-8: ") and "\\x" in message
    assert message.count("\n") == 1 and plain.stdout == b""

    as_json = subprocess.run([*command, b"--json"], cwd=initialised, capture_output=True,
                             timeout=60)
    assert as_json.returncode == 1 and as_json.stderr == b""
    payload = json.loads(as_json.stdout)
    assert payload["error"]["code"] == "invalid_input"
    assert payload["error"]["details"] == {"argument": label}
    assert _db_digest(initialised) == before  # nothing stored


def test_success_envelopes_are_named_by_the_command_that_ran(cli, initialised):
    (initialised / "events.jsonl").write_text('{"kind": "note", "text": "x"}\n')
    for name, extra in (("run start", ["goal"]), ("run list", []), ("events", []),
                        ("memory list", []), ("skill list", []),
                        ("import jsonl", ["events.jsonl"]), ("resume", []), ("doctor", [])):
        payload = cli.ok(*name.split(), *extra, "--json").json()
        assert payload["ok"] is True and payload["command"] == name


def _leaves(command, path=()):
    subcommands = getattr(command, "commands", None)
    if isinstance(subcommands, dict):
        for name, sub in subcommands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield " ".join(path), command


def test_json_options_are_eager():
    # Parsed first, so a usage error in any other parameter still knows --json was asked for.
    load_commands()
    options = [(name, p) for name, command in _leaves(typer.main.get_command(app))
               for p in command.params if "--json" in getattr(p, "opts", ())]
    assert len(options) > 30
    assert [name for name, option in options if not option.is_eager] == []


def test_no_private_typer_imports():
    package = ROOT / "agentstate"
    offenders = [str(p) for p in package.rglob("*.py") if "typer._click" in p.read_text()]
    assert offenders == []


def test_an_error_quoting_a_newline_or_an_escape_stays_one_line(cli, initialised):
    """An error message quotes what the user typed; a newline or a terminal escape in it is
    written out, so the report stays one `error:` line that cannot move the cursor."""
    result = cli("import", "jsonl", "no\nsuch\x1b[2Jfile")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["error: no such file: no\\nsuch\\x1b[2Jfile"]
