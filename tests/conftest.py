"""Shared fixtures. Every test runs in its own temporary git repository with a fake HOME, so
nothing ever writes to the real home directory or the real git configuration."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentstate.cli import load_commands, main
from agentstate.maintenance.init import init_store
from agentstate.store.clock import Clock, IdSource
from agentstate.store.db import Store, open_store

FIXED_NOW = "2026-01-15T09:00:00Z"
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the repository: the package, pyproject.toml, README.md
FIXTURES = TESTS / "fixtures"

load_commands()  # in-process tests drive the full command tree


@pytest.fixture(scope="session")
def token_cache(tmp_path_factory):
    """One tokenizer cache for the whole session (each test has its own HOME)."""
    return tmp_path_factory.mktemp("token-cache")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch, token_cache):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(token_cache))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Test User")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "test@example.com")
    for var in ("AGENTSTATE_DIR", "AGENTSTATE_NOW", "AGENTSTATE_ID_SEED", "AGENTSTATE_PRINCIPAL",
                "AGENTSTATE_RUN", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    from agentstate.store.principals import AGENT_ENV_VARS

    for var, _ in AGENT_ENV_VARS:  # a test run inside a coding agent must not act as `agent`
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    # Hooks run in process: a helper started by one test would outlive it (and its socket
    # would sit in the user's runtime directory). tests/integrations/test_hook_helper.py and
    # the end-to-end tests turn it on with a runtime directory of their own.
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER", "0")
    monkeypatch.delenv("AGENTSTATE_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("AGENTSTATE_HOOK_HELPER_IDLE", raising=False)
    return home


def configure(store, section: str, **values) -> None:
    """Change some settings of an open store, as an edited config.toml would."""
    current = getattr(store.settings, section)
    store.settings = replace(store.settings, **{section: replace(current, **values)})


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A git repository with one commit; the working directory for the test."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("demo\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(path)
    return path


@pytest.fixture
def store(repo):
    """An initialised store opened through the Python API, with a fixed clock and ids."""
    init_store(target=repo)
    opened = open_store(
        start=repo,
        clock=Clock(datetime(2026, 1, 15, 9, 0, tzinfo=UTC)),
        ids=IdSource(seed=7),
    )
    yield opened
    opened.close()


@contextmanager
def fresh_store(seed: int = 7) -> Iterator[Store]:
    """A new initialised store in its own temporary directory, removed afterwards.

    For hypothesis properties: every example gets a store of its own (a function-scoped
    fixture would be shared by all the examples of one test).
    """
    with tempfile.TemporaryDirectory(prefix="agentstate-example-") as tmp:
        root = Path(tmp)
        init_store(target=root)
        opened = open_store(root / ".agentstate",
                            clock=Clock(datetime(2026, 1, 15, 9, 0, tzinfo=UTC)),
                            ids=IdSource(seed=seed))
        try:
            yield opened
        finally:
            opened.close()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)


class Cli:
    """Runs the console entry point `main(argv)` in-process (fast) in the test's repository:
    the same parsing, error boundary, redaction and exit codes as the installed command."""

    def __call__(self, *args: str, input: str | None = None, env: dict | None = None) -> CliResult:
        out, err = io.BytesIO(), io.BytesIO()
        streams = sys.stdin, sys.stdout, sys.stderr
        saved_env = {key: os.environ.get(key) for key in env or {}}
        # Text streams over bytes, strict UTF-8 like a real process's: output the console
        # could not encode fails here too. `.buffer` is there for `exec`'s echo.
        stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
        stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        _set_env(env or {})
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        else:
            code = 0
        finally:
            sys.stdin, sys.stdout, sys.stderr = streams
            _set_env(saved_env)
        stdout.flush()
        stderr.flush()
        return CliResult(code, out.getvalue().decode(), err.getvalue().decode())

    def ok(self, *args: str, **kw) -> CliResult:
        result = self(*args, **kw)
        assert result.exit_code == 0, (result.stdout, result.stderr, crash_logs())
        return result

    def json(self, *args: str, **kw) -> dict:
        result = self.ok(*args, "--json", **kw)
        payload = result.json()
        assert payload["ok"] is True
        return payload["data"]


def _set_env(values: dict) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def cli(repo) -> Cli:
    return Cli()


@pytest.fixture
def initialised(cli, repo) -> Path:
    cli.ok("init")
    return repo


def crash_logs() -> list[str]:
    """What the error boundary wrote for unexpected exceptions (to show in a failing test)."""
    return [p.read_text() for p in sorted(Path(os.environ["AGENTSTATE_CACHE_DIR"]).glob(
        "crash-*.log"))]


def failing_import_env(tmp_path: Path, *modules: str, note: str = "") -> dict[str, str]:
    """An environment whose Python processes cannot import `modules`: a real fault for the
    error boundaries (RuntimeError 'cannot load NAME' + `note`, raised by a sitecustomize)."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name in {modules!r}:\n"
        f"            raise RuntimeError('cannot load ' + name + {note!r})\n"
        "sys.meta_path.insert(0, Block())\n")
    return {"PYTHONPATH": os.pathsep.join([str(shim), str(ROOT)])}


def run_agentstate(*args: str, cwd: Path, env: dict | None = None, input: str | None = None):
    """The real console entry point in a subprocess (exit codes, start-up, concurrency)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "agentstate", *args], cwd=cwd, env=full_env,
        capture_output=True, text=True, input=input, timeout=120,
    )


def author_scaffold(folder: Path) -> Path:
    """Do what `skill new` asks of its author: replace the placeholder body and check (publish
    refuses a scaffold that still has them)."""
    from agentstate.skills.authoring import PLACEHOLDER_BODY, PLACEHOLDER_SCRIPT

    md = folder / "SKILL.md"
    text = md.read_text()
    start = text.index(PLACEHOLDER_BODY)
    end = text.index("\n\n", start)
    md.write_text(text[:start] + "Check that the target exists before working on it: run the "
                  "check, read its output, stop when it fails." + text[end:])
    script = folder / "scripts" / "check.py"
    script.write_text(script.read_text().replace(PLACEHOLDER_SCRIPT, "Existence check for the"))
    return folder


def store_pack_listing(store: Store, pack_id: str, refs: list[str], created: str = "now") -> None:
    """A stored pack whose manifest lists `refs`, each dropped (retention keeps their events),
    in the stored form (context/pack_refs.py)."""
    from agentstate.context.pack_refs import encode_items

    items = [(ref, "evidence", 1.0, 1, "dropped", "test", None, "") for ref in refs]
    store.conn.execute("INSERT INTO packs (id, principal, query, budget, tokens, text_hash, "
                       "created, items) VALUES (?, 'owner', 'q', 10, 1, 'h', ?, ?)",
                       (pack_id, created, encode_items(items)))


@contextmanager
def store_before(tmp_path: Path, upto: str) -> Iterator[tuple[Path, Any]]:
    """(repository, connection): a store whose database is as the migrations up to `upto`
    left it. The block fills the connection; its database is then put at the store's path,
    so the next open upgrades it."""
    import shutil

    from agentstate.store.db import connect
    from agentstate.store.migrations import apply_migrations

    repo = tmp_path / "repo"
    repo.mkdir()
    init_store(target=repo)
    db_path = repo / ".agentstate" / "state.db"
    for leftover in db_path.parent.glob("state.db*"):
        leftover.unlink()
    db = connect(tmp_path / "old.db")
    apply_migrations(db, upto=upto)
    yield repo, db.conn
    db.conn.close()
    shutil.copy(tmp_path / "old.db", db_path)


def undo_m016(db: Path) -> None:
    """Make a store look as if an older version made it: one migration (m016) pending, its
    indexes as they were before it, so the next open upgrades it."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM _migrations WHERE name = 'm016_events_lean_indexes'")
        conn.execute("DROP INDEX events_resolves")
        conn.execute("DROP INDEX events_supersedes")
        conn.execute("CREATE INDEX events_resolves ON events(resolves)")
        conn.execute("CREATE INDEX events_supersedes ON events(supersedes)")
        conn.execute("CREATE INDEX events_run_kind ON events(run, kind)")
    conn.close()


def shown_at(store: Store, entry, text: str) -> int:
    """Where the pack `text` shows the placed manifest `entry`'s ref, or -1. An evidence
    event is labelled `#N` (its seq) under a group header naming its run, and that pair,
    `run:ID#N`, is what `trace` resolves: the offset counts only where the label's group
    names the event's own run and `trace` leads back to the entry's event."""
    import re

    if not (entry.cls == "evidence" and entry.ref.startswith("evt:")) \
            or entry.decision == "pointer":  # a pointer line in the index names the ref
        return text.find(entry.ref)
    from agentstate.context.trace import trace
    from agentstate.runs.lookups import find_event

    event = find_event(store, entry.ref.removeprefix("evt:"))
    assert event is not None, entry
    for found in re.finditer(rf"^- \[#{event.seq}[\] ]", text, re.M):
        header = text.rfind("\n### ", 0, found.start())
        if header >= 0 and text[header + 5:].startswith(f"{event.run} "):
            assert trace(store, f"{event.run}#{event.seq}", principal="owner").ref == entry.ref
            return found.start()
    return text.find(f"[{entry.ref}")


def into_closed_pipe(args: list[str], cwd: Path, env: dict[str, str] | None = None):
    """`agentstate ARGS` writing into a pipe whose reader is already gone, as after
    `agentstate … | head -c 10` once head has exited: every write fails (EPIPE), whatever
    the output's size and timing (a live `head` may read it all before it goes)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "agentstate", *args], cwd=cwd,
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                              env=env)
    finally:
        os.close(write)


def run_noting_typer(args: list[str], cwd: Path, env: dict[str, str] | None = None):
    """`agentstate ARGS` as a real process under `-X importtime` → (the process, whether it
    imported Typer): how the quick paths (context, sync, gc --json) are told from the full
    command. The import-time lines are taken out of the process's stderr."""
    import os
    import re
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "agentstate", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, NO_COLOR="1", **(env or {})))
    # importtime lines end in "| NAME", indented by nesting: "|   typer" when the CLI imports it
    typer = any(re.search(r"\|\s+typer$", line.rstrip()) for line in proc.stderr.splitlines())
    proc.stderr = "\n".join(line for line in proc.stderr.splitlines()
                            if not line.startswith("import time:"))
    return proc, typer
