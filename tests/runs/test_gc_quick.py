"""`agentstate gc --json` is answered before the CLI is built (agentstate/integrations/
gc_runner.py, issue 24: gc within 2× of a copy of the database): the same envelope and the
same store as the full command, without importing Typer; an error of the gc itself is the
full command's envelope and exit code; any other form, a pending migration, a bad config or
a missing store goes through the full command, which reports."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import into_closed_pipe, run_noting_typer, undo_m016

LATER = {"AGENTSTATE_NOW": "2099-01-01T00:00:00Z"}


def _gc(repo: Path, *args: str, env: dict | None = None
        ) -> tuple[subprocess.CompletedProcess, bool]:
    """`agentstate ARGS` as a real process; (the process, whether it imported Typer)."""
    return run_noting_typer(list(args), repo, env={**LATER, **(env or {})})


def _rows(repo: Path) -> list:
    with sqlite3.connect(repo / ".agentstate" / "state.db") as conn:
        rows = sorted(conn.execute("SELECT rowid, * FROM events"))
    conn.close()
    return rows


@pytest.fixture
def aged(initialised, cli, tmp_path) -> tuple[Path, Path]:
    """A store whose finished run is past its 7-day period (one event cited by a memory),
    and a copy of it (the same key, so the same hashes)."""
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("# keep_events_days = 0",
                                                 "keep_events_days = 7"))
    cli.ok("run", "start", "short lived")
    for n in range(4):
        cli.ok("log", "observation", f"november old note {n}")
    cited = cli.json("log", "observation", "the parser needs the flag")["ref"]
    cli.ok("remember", "the parser needs the flag", "--kind", "fact", "--evidence", cited)
    cli.ok("run", "end", "--status", "done")
    copy = tmp_path / "copy"
    shutil.copytree(initialised, copy)
    return initialised, copy


def test_gc_json_is_answered_without_the_cli_with_the_full_commands_envelope(aged, cli):
    full_repo, quick_repo = aged
    proc, typer = _gc(quick_repo, "gc", "--json")
    assert proc.returncode == 0 and not typer, proc.stderr[-2000:]
    full = cli.ok("gc", "--json", env=LATER)  # the same command through the Typer command
    assert proc.stdout == full.stdout and proc.stderr == full.stderr == ""
    data = json.loads(proc.stdout)["data"]
    assert (data["removed"], data["collected"]) == (4, 1)
    assert _rows(quick_repo) == _rows(full_repo) and len(_rows(quick_repo)) == 1


def test_an_error_of_the_gc_is_the_full_commands_envelope_and_exit_code(aged, cli):
    full_repo, quick_repo = aged
    agent = {"CLAUDECODE": "1"}  # an agent, not the owner: gc is refused
    proc, typer = _gc(quick_repo, "gc", "--json", env=agent)
    full = cli("gc", "--json", env={**LATER, **agent})
    assert not typer and proc.returncode == full.exit_code == 3, proc.stderr[-2000:]
    assert proc.stdout == full.stdout and "owner action" in proc.stdout
    assert proc.stderr == full.stderr
    assert len(_rows(quick_repo)) == len(_rows(full_repo)) == 5  # nothing removed


def test_a_bug_in_the_gc_is_reported_as_the_cli_reports_one(aged, tmp_path):
    """An exception outside the error mapping: exit 70, the crash log named on stderr, one
    envelope on stdout, as cli/boundary.py's `_internal`."""
    _, quick_repo = aged
    hook = tmp_path / "hook"
    hook.mkdir()
    # Planted through the import path: the gc's marks fail as a bug would.
    (hook / "sitecustomize.py").write_text(
        "import agentstate.runs.retention as r\n"
        "def broken(*a, **k):\n    raise RuntimeError('planted')\n"
        "r.mark_retention = broken\n")
    env = {"PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")])}
    proc, typer = _gc(quick_repo, "gc", "--json", env=env)
    assert not typer and proc.returncode == 70, proc.stderr[-2000:]
    envelope = json.loads(proc.stdout)
    assert envelope["ok"] is False and envelope["command"] == "gc"
    assert envelope["error"]["code"] == "internal"
    assert proc.stderr.startswith("error: ") and "crash" in proc.stderr


@pytest.mark.parametrize("args", [("gc",), ("gc", "--dry-run", "--json"),
                                  ("gc", "--json", "--json"), ("--dir", ".", "gc", "--json")])
def test_any_other_form_goes_through_the_full_command(aged, args):
    proc, typer = _gc(aged[1], *args)
    assert proc.returncode == 0 and typer, (args, proc.stderr[-1000:])


def test_a_store_with_a_pending_migration_goes_through_the_full_command(aged):
    undo_m016(aged[1] / ".agentstate" / "state.db")
    proc, typer = _gc(aged[1], "gc", "--json")
    assert proc.returncode == 0 and typer
    assert "upgraded this store's database (1 migration: m016_events_lean_indexes)" in \
        proc.stderr
    assert json.loads(proc.stdout)["data"]["removed"] == 4


def test_a_bad_config_or_no_store_is_the_full_commands_error(aged, repo, tmp_path):
    config = aged[1] / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace("keep_events_days = 7",
                                                 "keep_events_days = -3"))
    proc, typer = _gc(aged[1], "gc", "--json")
    assert typer and proc.returncode == 1 and "keep_events_days" in proc.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    proc, typer = _gc(empty, "gc", "--json")
    assert typer and proc.returncode == 1 and "agentstate init" in proc.stdout


def test_the_collector_is_off_during_a_quick_gc_and_as_it_was_after(aged, monkeypatch, capsys):
    """The process ends right after a quick gc, so the collector is off while it runs, and
    as the caller had it afterwards, whether the gc ran here or the full command is to run."""
    import gc as collector

    from agentstate.integrations import gc_runner
    from agentstate.maintenance import gc as gc_module

    real, seen = gc_module.gc, []

    def watched(*args, **kwargs):
        seen.append(collector.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(gc_module, "gc", watched)
    for key, value in LATER.items():
        monkeypatch.setenv(key, value)
    store = aged[1] / ".agentstate"
    for enabled in (True, False):
        (collector.enable if enabled else collector.disable)()
        try:
            assert gc_runner.run_quick_gc(str(store)) == 0
            assert collector.isenabled() is enabled
            assert gc_runner.run_quick_gc(str(aged[1] / "nowhere")) is None  # no store
            assert collector.isenabled() is enabled
        finally:
            collector.enable()
    assert seen == [False, False]
    assert capsys.readouterr().out.count('"command": "gc"') == 2


def test_a_closed_pipe_ends_quietly(aged):
    """`agentstate gc --json | head -c 10`: the reader is gone; no traceback and exit 1,
    as the CLI's boundary ends it."""
    proc = into_closed_pipe(["gc", "--json"], aged[1], env=dict(os.environ, **LATER))
    assert (proc.returncode, proc.stderr) == (1, ""), proc.stderr[-2000:]
    assert len(_rows(aged[1])) == 1  # the gc was done
