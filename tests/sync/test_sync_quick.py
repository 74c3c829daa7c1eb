"""A bare `agentstate sync` with nothing new is answered before the CLI is built
(agentstate/integrations/sync_runner.py, issue 24: ≤ 0.2 s as a whole process): the same
output as the full command, without importing Typer; anything new, any option, a pending
migration or a missing store goes through the full command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_noting_typer, undo_m016


def _sync(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess, bool]:
    """`agentstate sync ARGS` as a real process; (the process, whether it imported Typer)."""
    return run_noting_typer(["sync", *args], repo)


@pytest.fixture
def synced(initialised, cli) -> Path:
    cli.ok("remember", "the staging database lives in eu-west-1", "--kind", "fact")
    cli.ok("sync")  # exports it
    cli.ok("sync")  # finds nothing new: keeps the digest
    return initialised


def test_nothing_new_is_answered_without_the_cli_and_prints_the_same(synced, cli):
    proc, typer = _sync(synced)
    assert proc.returncode == 0 and not typer, proc.stderr[-2000:]
    full = cli.ok("sync").stdout  # the same call through the Typer command
    assert proc.stdout == full
    assert proc.stdout.startswith("exported: 0 memories, 0 evidence ref(s), 0 tombstone(s)")

    proc, typer = _sync(synced, "--json")
    assert proc.returncode == 0 and not typer
    assert json.loads(proc.stdout) == json.loads(cli.ok("sync", "--json").stdout)


def test_anything_new_or_any_option_goes_through_the_full_command(synced, cli):
    cli.ok("remember", "the release branch is cut on mondays", "--kind", "fact")
    proc, typer = _sync(synced)
    assert proc.returncode == 0 and typer
    assert proc.stdout.startswith("exported: 1 memory")
    proc, typer = _sync(synced, "--dry-run")
    assert proc.returncode == 0 and typer and "would be written" in proc.stdout


def test_a_store_with_a_pending_migration_goes_through_the_full_command(synced):
    db = synced / ".agentstate" / "state.db"
    undo_m016(db)
    proc, typer = _sync(synced)
    assert proc.returncode == 0 and typer
    assert "upgraded this store's database (1 migration: m016_events_lean_indexes)" in \
        proc.stderr


def test_no_store_is_the_full_commands_error(repo):
    proc, typer = _sync(repo)
    assert proc.returncode == 1 and typer and "agentstate init" in proc.stderr
