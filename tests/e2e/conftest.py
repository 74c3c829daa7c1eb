"""The real clients, installed once per machine, and the pieces each end-to-end test needs.

The npm packages go to a cache OUTSIDE the repository: $AGENTSTATE_E2E_CACHE, else
~/.cache/agentstate-e2e of the real home (read when this file is imported, before the autouse
isolated-home fixture of tests/conftest.py replaces HOME), one folder per package@version,
reused when present. Where npm or the registry is not reachable the tests are skipped with
one line saying why; they never pass without running a client.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.clients import CLIENTS, Client
from tests.e2e.model_server import ModelServer

REAL_HOME = Path(os.environ.get("HOME") or Path.home())
CACHE = Path(os.environ.get("AGENTSTATE_E2E_CACHE") or REAL_HOME / ".cache" / "agentstate-e2e")
VENV_BIN = Path(sys.executable).parent
AGENTSTATE = VENV_BIN / "agentstate"
INSTALL_TIMEOUT_S = 900
SESSION_TIMEOUT_S = 180


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)
            # One client session at a time per worker is plenty on a 2-core machine.
            item.add_marker(pytest.mark.xdist_group("e2e"))


def install_client(client: Client) -> Path:
    """The client's binary, installed into the cache on first use (a lock keeps parallel
    workers from installing twice). Skips the test when npm or the registry fails."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"e2e: npm is not on PATH, cannot install {client.spec}")
    folder = CACHE / client.cache_name
    binary = folder / "node_modules" / ".bin" / client.binary
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _works(binary, client):
            try:
                done = subprocess.run(
                    # Few, short retries: without a registry this skips within minutes.
                    [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund",
                     "--no-save", "--fetch-retries=1", "--fetch-timeout=60000", client.spec],
                    capture_output=True, text=True,
                    timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pytest.skip(f"e2e: npm install {client.spec} took over {INSTALL_TIMEOUT_S} s")
            if done.returncode != 0 or not _works(binary, client):
                lines = [line for line in done.stderr.splitlines()
                         if line.startswith("npm error") and "complete log" not in line]
                why = (lines or done.stderr.strip().splitlines() or ["no output"])[0]
                pytest.skip(f"e2e: npm install {client.spec} failed (registry unreachable?): "
                            f"{why}")
    return binary


def _works(binary: Path, client: Client) -> bool:
    if not binary.exists():
        return False
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                             timeout=60, env=quiet_env(os.environ.get("HOME", "/tmp")))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and client.version in out.stdout


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return install_client(CLIENTS["claude-code"])


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return install_client(CLIENTS["codex"])


def quiet_env(home: str, path: str | None = None) -> dict[str, str]:
    """A client's environment: an isolated HOME, no telemetry, no update checks, nothing to
    reach but 127.0.0.1."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE", "CODEX_", "OPENAI_", "AGENTSTATE_"))
           or k in HELPER_VARS}
    env.update({
        "HOME": home, "PATH": path or os.environ.get("PATH", ""),
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_BUG_COMMAND": "1",
        "CODEX_DISABLE_UPDATE_CHECK": "1", "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost", "HTTPS_PROXY": "", "HTTP_PROXY": "",
        "https_proxy": "", "http_proxy": "", "NO_COLOR": "1",
    })
    return env


@pytest.fixture
def model() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@dataclass
class Project:
    root: Path
    home: Path

    def agentstate(self, *args: str, check: bool = True, path: str | None = None
                   ) -> subprocess.CompletedProcess:
        env = quiet_env(str(self.home), path)
        done = subprocess.run([str(AGENTSTATE), *args], cwd=self.root, capture_output=True,
                              text=True, env=env, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"agentstate {' '.join(args)} exited {done.returncode}: "
                                 f"{done.stderr}")
        return done

    def json(self, *args: str) -> dict:
        return json.loads(self.agentstate(*args, "--json").stdout)["data"]

    def events(self) -> list[dict]:
        """Every event of every run, oldest first."""
        return self.json("events", "--all")


# The hook helper is on under the real clients (as for a user), with a runtime directory of
# the test's own (`hook_helper` below).
HELPER_VARS = ("AGENTSTATE_HOOK_HELPER", "AGENTSTATE_RUNTIME_DIR", "AGENTSTATE_HOOK_HELPER_IDLE")
# A session's last hook may start a helper just as the test ends, after the fixture looked
# for one to stop: with a short idle limit such a helper leaves by itself soon after.
HELPER_IDLE_S = "30"


@pytest.fixture(autouse=True)
def hook_helper(monkeypatch) -> Iterator[Path]:
    """Hooks reach agentstate's warm helper as they do for a user; its socket lives in a
    short directory of this test's own, and whatever helper the hooks started is stopped."""
    from agentstate.integrations.hook_server import stop_helpers_in

    folder = Path(tempfile.mkdtemp(prefix="ash-e2e-"))
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER", "1")
    monkeypatch.setenv("AGENTSTATE_RUNTIME_DIR", str(folder / "rt"))
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER_IDLE", HELPER_IDLE_S)
    yield folder / "rt"
    stop_helpers_in(str(folder / "rt"))
    shutil.rmtree(folder, ignore_errors=True)


def helpers_running(folder: Path) -> list[int]:
    """Process ids of the hook helpers running from `folder` (started by the clients'
    hooks: the first hook of a session runs in process and starts one for the rest)."""
    from agentstate.integrations.hook_server import helper_pid

    found = (helper_pid(str(lock)[: -len(".lock")]) for lock in folder.glob("*.sock.lock"))
    return [pid for pid in found if pid is not None]


@pytest.fixture
def project(tmp_path, isolated_home) -> Project:
    """A git repository with a failing test, an initialised store; its own HOME."""
    root = tmp_path / "shop"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "test_parse.py").write_text(
        "def test_parse():\n    assert 2 + 2 == 3, 'expected 3 got 4'\n")
    git(root, "add", "test_parse.py")
    git(root, "commit", "-q", "-m", "a test")
    project = Project(root, isolated_home)
    project.agentstate("init")
    return project
