"""A real `agentstate ui` server for the web tests: the console entry point in a subprocess,
on a free loopback port, its URL (with the per-launch token) read from what it prints."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the ui extra (starlette) is not installed")
pytest.importorskip("jinja2", reason="the ui extra (jinja2) is not installed")

# Stored in every field the pages show: markup that would run if it were not escaped, and a
# terminal escape (clear screen) that must be shown as text, not passed through.
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">\x1b[2J'
URL_LINE = re.compile(r"(http://127\.0\.0\.1:(\d+)/\?token=[A-Za-z0-9_-]+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    url: str       # with the token
    base: str      # http://127.0.0.1:PORT
    port: int
    process: subprocess.Popen
    said: list[str]


def start_server(repo: Path, port: int, extra: tuple[str, ...] = ()) -> Server:
    process = subprocess.Popen(
        [sys.executable, "-m", "agentstate", "ui", "--no-browser", "--port", str(port), *extra],
        cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ))
    said: list[str] = []
    deadline = time.monotonic() + 60
    assert process.stderr is not None
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        said.append(line)
        match = URL_LINE.search(line)
        if match:
            actual = int(match.group(2))
            _wait_listening(actual)
            return Server(match.group(1), f"http://127.0.0.1:{actual}", actual, process, said)
    process.kill()
    out, err = process.communicate()
    raise AssertionError(f"ui did not start: {''.join(said)}{err}{out}")


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture
def seeded(cli, initialised) -> dict:
    """A store with a run whose goal, events, meta, memories, a pack's query and a
    forget reason all carry hostile text; a candidate and a contested memory wait for
    review; two packs are recorded."""
    run = cli.json("run", "start", f"Fix the parser {HOSTILE}", "--constraint",
                   "Keep the public API")["run"]["ref"]
    question = cli.json("log", "question", f"Which locale does CI use? {HOSTILE}")["ref"]
    answer = cli.json("log", "answer", "CI runs the tests with LANG=C.UTF-8",
                      "--resolves", question)["ref"]
    failing = cli.json("log", "observation", "test_dates is flaky: CI runs the tests with "
                       f"LANG=en_US.UTF-8 {HOSTILE}", "--meta", f"session={HOSTILE}")["ref"]
    cli.json("log", "diagnosis", "the cache key ignores the locale " + "x" * 900)
    fact = cli.json("remember", "CI runs the tests with LANG=C.UTF-8", "--kind", "fact",
                    "--key", "ci-locale", "--source", answer)["ref"]
    rival = cli.json("remember", f"CI runs the tests with LANG=en_US.UTF-8 {HOSTILE}",
                     "--kind", "fact", "--key", "ci-locale", "--source", "model",
                     "--evidence", failing)["ref"]
    candidate = cli.json("remember", f"The parser is slow on long dates {HOSTILE}",
                         "--kind", "fact", "--source", "model")["ref"]
    gone = cli.json("remember", "Use tabs for the fixtures", "--kind", "preference")["ref"]
    cli.json("forget", gone, "--reason", f"wrong {HOSTILE}")
    pack = cli.json("context", "--budget", "1500", "--query", f"locale {HOSTILE}")
    pack2 = cli.json("context", "--budget", "600")
    return {"run": run, "question": question, "failing": failing, "fact": fact,
            "rival": rival, "candidate": candidate, "gone": gone, "pack": pack["ref"],
            "pack2": pack2["ref"]}


@pytest.fixture
def server(seeded, initialised) -> Iterator[Server]:
    running = start_server(initialised, free_port())
    try:
        yield running
    finally:
        stop(running)
