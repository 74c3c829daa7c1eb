"""`agentstate context` in its common forms is answered before the CLI is built
(agentstate/integrations/context_runner.py, issue 24: ≤ 0.2 s as a whole process): the same
pack and output as the full command, without importing Typer; any other option, a refused
budget, a pending migration or a missing store goes through the full command, which reports,
and nothing is recorded twice."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from agentstate.integrations.context_runner import quick_form
from agentstate.store.db import LOG_LEFT_MAX
from tests.conftest import into_closed_pipe, run_agentstate, run_noting_typer, undo_m016


def _context(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess, bool]:
    """`agentstate context ARGS` as a real process; (the process, whether it imported Typer)."""
    return run_noting_typer(["context", *args], repo)


def _packs(repo: Path) -> int:
    with closing(sqlite3.connect(repo / ".agentstate" / "state.db")) as conn:
        return conn.execute("SELECT count(*) FROM packs").fetchone()[0]


@pytest.fixture
def working(initialised, cli) -> Path:
    cli.ok("run", "start", "make the login test stop timing out")
    cli.ok("log", "observation", "tests/test_login.py::test_timeout fails after 30 s on CI")
    cli.ok("remember", "CI runners have 2 cores", "--kind", "fact")
    return initialised


@pytest.mark.parametrize("args", [(), ("--budget", "3000"), ("-b", "3000"), ("--budget=3000",)])
def test_the_common_forms_are_answered_without_the_cli_and_print_the_same(working, cli, args):
    before = _packs(working)
    proc, typer = _context(working, *args)
    assert proc.returncode == 0 and not typer, proc.stderr[-2000:]
    full = cli.ok("context", *args)  # the same command line through the Typer command
    assert proc.stdout == full.stdout and "make the login test stop timing out" in proc.stdout
    assert _packs(working) == before + 2  # each recorded once
    ref = re.fullmatch(r"(pack:\w+): (\d+)/(\d+) tokens \(sha256 (\w+)\)", proc.stderr.strip())
    assert ref is not None, proc.stderr
    assert cli.ok("trace", ref.group(1), "--json").json()["ok"]


@pytest.mark.parametrize("args", [("--query", "why does the login test time out"),
                                  ("-b", "3000", "-q", "login timeout"),
                                  ("--query=CI runners", "--budget=3000")])
def test_a_query_is_answered_without_the_cli_and_prints_the_same(working, cli, args):
    before = _packs(working)
    proc, typer = _context(working, *args)
    assert proc.returncode == 0 and not typer, proc.stderr[-2000:]
    full = cli.ok("context", *args)
    assert proc.stdout == full.stdout and "make the login test stop timing out" in proc.stdout
    assert _packs(working) == before + 2
    with sqlite3.connect(working / ".agentstate" / "state.db") as conn:
        queries = [q for (q,) in conn.execute("SELECT query FROM packs ORDER BY created DESC, "
                                              "rowid DESC LIMIT 2")]
    asked = args[args.index("--query") + 1] if "--query" in args else \
        args[args.index("-q") + 1] if "-q" in args else args[0].partition("=")[2]
    assert queries[0] == queries[1] and asked in queries[0]


def test_json_is_the_full_commands_envelope(working, cli):
    proc, typer = _context(working, "--budget", "3000", "--json")
    assert proc.returncode == 0 and not typer
    quick = json.loads(proc.stdout)
    full = cli.ok("context", "--budget", "3000", "--json").json()
    assert quick["command"] == full["command"] == "context" and quick["ok"] is True
    assert quick["data"]["text"] == full["data"]["text"]
    assert set(quick["data"]) == set(full["data"])
    assert quick["data"]["ref"] != full["data"]["ref"]  # two packs, each recorded


@pytest.mark.parametrize("args", [("--budget", "3000", "--explain"), ("-q", "a", "--query", "b"),
                                  ("--budget", "3000", "--budget", "4000"), ("--json", "--json"),
                                  ("--run", "run:nope"), ("--no-run",), ("extra",)])
def test_any_other_form_goes_through_the_full_command(working, args):
    proc, typer = _context(working, *args)
    assert typer, (args, proc.stderr[-1000:])


def test_a_refused_budget_is_the_full_commands_error_and_records_nothing(working, cli):
    before = _packs(working)
    proc, typer = _context(working, "--budget", "20")
    full = cli("context", "--budget", "20")
    assert typer and proc.returncode == full.exit_code == 3
    assert proc.stderr.strip() == full.stderr.strip() and "minimum" in proc.stderr
    assert _packs(working) == before
    proc, typer = _context(working, "--budget", "many", "--json")
    assert typer and proc.returncode != 0 and json.loads(proc.stdout)["ok"] is False


def test_a_store_with_a_pending_migration_goes_through_the_full_command(working):
    db = working / ".agentstate" / "state.db"
    undo_m016(db)
    proc, typer = _context(working, "--budget", "3000")
    assert proc.returncode == 0 and typer
    assert "upgraded this store's database (1 migration: m016_events_lean_indexes)" in \
        proc.stderr


def test_no_store_is_the_full_commands_error(repo):
    proc, typer = _context(repo)
    assert proc.returncode == 1 and typer and "agentstate init" in proc.stderr


@pytest.mark.parametrize("args", [("--budget", "3000"), ("--json",)])
def test_a_closed_pipe_ends_quietly(working, args):
    """`agentstate context | head -c 10`: the reader is gone; no traceback and exit 1, as
    the CLI's boundary ends it, and the pack was recorded before it was printed."""
    before = _packs(working)
    proc = into_closed_pipe(["context", *args], working)
    assert (proc.returncode, proc.stderr) == (1, ""), proc.stderr[-2000:]
    assert _packs(working) == before + 1


@pytest.mark.parametrize("args, form", [
    ([], (None, False, None)), (["--json"], (None, True, None)),
    (["--budget", "9"], ("9", False, None)), (["-b", "9", "--json"], ("9", True, None)),
    (["--budget=9"], ("9", False, None)), (["--query", "why"], (None, False, "why")),
    (["-b", "9", "-q", "why not"], ("9", False, "why not")),
    (["--query=a=b", "--json"], (None, True, "a=b")), (["--query"], None),
    (["--query", "-x"], None), (["--query", "a", "-q", "a"], None),
    (["-b", "9", "--budget", "9"], None), (["-qx"], None),
    (["--budget"], None), (["--budget", "--json"], None), (["--budget=9", "--budget", "9"], None),
    (["-b", "9", "-b", "9"], None), (["--json=1"], None), (["--dir", "x"], None),
    (["--help"], None), (["-q", "x"], (None, False, "x")), (["x"], None),
])
def test_quick_form(args, form):
    assert quick_form(args) == form


def _imported(repo: Path, *args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a quick `agentstate context ARGS` process imported (from -X importtime)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "agentstate", "context",
                           *args], cwd=repo, capture_output=True, text=True, timeout=120,
                          env=env or dict(os.environ, NO_COLOR="1"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


# What a pack never uses: the skill file's parser (a pack reads skill rows, and the files of
# the matched ones' trees), the store rewrite (`gc`), the CLI.
DEFERRED = ("agentstate.skills.skill_file", "agentstate.skills.file_checks",
            "agentstate.store.rewrite", "typer")


def test_the_quick_path_imports_only_what_a_pack_uses(working):
    imported = _imported(working, "--budget", "3000")
    assert "agentstate.context.assemble" in imported  # the list is read, and is this one's
    assert not imported & set(DEFERRED), sorted(imported & set(DEFERRED))


def test_the_quick_process_saves_the_counts_it_learned_before_it_ends(working, tmp_path):
    """The process ends without the interpreter's teardown; its exit functions still run,
    so the token counts it learned (a fresh cache: all of them) are written."""
    cache = tmp_path / "cache"
    env = dict(os.environ, NO_COLOR="1", AGENTSTATE_CACHE_DIR=str(cache))
    env.pop("PYTHONUNBUFFERED", None)  # what an agent's shell has: stdout is buffered
    proc = subprocess.run([sys.executable, "-m", "agentstate", "context", "--budget", "3000",
                           "--json"], cwd=working, capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "make the login test stop timing out" in json.loads(proc.stdout)["data"]["text"]
    [memo] = cache.glob("counts-*.sqlite")
    with sqlite3.connect(memo) as conn:
        assert conn.execute("SELECT count(*) FROM counts").fetchone()[0] > 0


def test_the_collector_is_as_it_was_after_a_quick_pack(working, monkeypatch, capsys):
    """The collector is off while the pack is built (the process ends right after) and as
    the caller had it afterwards, whether the pack was printed here or the full command is
    to run."""
    import gc

    from agentstate.integrations import context_runner
    from agentstate.integrations.context_runner import run_quick_context

    built = context_runner._recorded_pack
    collecting = []

    def recorded_pack(*args):
        collecting.append(gc.isenabled())
        return built(*args)

    monkeypatch.setattr(context_runner, "_recorded_pack", recorded_pack)
    monkeypatch.chdir(working)
    try:
        assert run_quick_context(["--budget", "3000"], None) == 0
        assert collecting == [False]
        assert "make the login test stop timing out" in capsys.readouterr().out
        assert gc.isenabled()
        assert run_quick_context(["--budget", "20"], None) is None  # refused: the full command
        assert gc.isenabled()
        gc.disable()
        assert run_quick_context(["--budget", "3000"], None) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_quick_pack_leaves_its_small_log_to_the_next_command(repo):
    """The quick process ends without the close's checkpoint while the write-ahead log is
    small: the pack is in the log, read by any other connection, and the next command to
    close the store folds the log into the file and removes it. (Processes only: this
    test's own process holds no connection, so the trace's close is the last.)"""
    for args in (("init",), ("run", "start", "make the login test stop timing out")):
        assert run_agentstate(*args, cwd=repo).returncode == 0
    working = repo
    wal = working / ".agentstate" / "state.db-wal"
    before = _packs(working)
    proc, typer = _context(working, "--budget", "3000")
    assert proc.returncode == 0 and not typer, proc.stderr[-2000:]
    assert wal.exists() and 0 < wal.stat().st_size < LOG_LEFT_MAX
    assert _packs(working) == before + 1  # another connection reads it from the log
    ref = ":".join(proc.stderr.split(":", 2)[:2])
    traced = run_agentstate("trace", ref, "--json", cwd=working)
    assert traced.returncode == 0 and json.loads(traced.stdout)["ok"]
    assert not wal.exists()  # the trace's close was the last: checkpointed and removed


def test_a_log_at_its_limit_is_checkpointed_by_the_one_shot_close(working):
    from agentstate.store.db import open_store

    wal = working / ".agentstate" / "state.db-wal"
    for limit, left in ((LOG_LEFT_MAX, True), (1, False)):
        store = open_store(start=working)
        store.conn.execute("UPDATE kv SET value = value")  # a commit: the log has a frame
        store.conn.execute("INSERT INTO kv (key, value) VALUES (?, 'x')", (f"k{limit}",))
        store.close_at_exit(limit)
        assert wal.exists() == left
        if left:  # as the process's exit would: no checkpoint, the log stays
            assert store.conn.execute("SELECT count(*) FROM kv").fetchone()[0] > 0
            store.close()
        else:
            with pytest.raises(sqlite3.ProgrammingError):
                store.conn.execute("SELECT 1")
