"""What every benchmark shares: the scale (full or smoke), realistic texts, floors measured
in the same run, and the large stores built once per bench run.

Smoke mode (`python bench/run.py --smoke`, or AGENTSTATE_BENCH_SMOKE=1) runs every benchmark
with tiny sizes and one repeat, so the whole bench runs as a test in a few seconds and cannot
rot; its figures mean nothing.

Texts are shaped like what agents log (issue 24): user prompts, pytest failures, Python
tracebacks, unified diffs and tool outputs of about 700 characters, with identifiers (files,
tests, functions) drawn from a large vocabulary so that the search indexes see real variety.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SMOKE = os.environ.get("AGENTSTATE_BENCH_SMOKE") == "1"
EVENT_CHARS = 700  # the average event text the issue measured


def scaled(full: int, smoke: int) -> int:
    """`full` in a real run, `smoke` in smoke mode."""
    return smoke if SMOKE else full


REPEATS = scaled(5, 1)


# ---------------------------------------------------------------- floors (same run)


def wall(argv: list[str], cwd: Path | None = None, env: dict | None = None,
         stdin: str | None = None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)[:120]} failed ({proc.returncode}): "
                         f"{proc.stderr.strip()[:400]}")
    return took


def median_of(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def python_floor(repeats: int = REPEATS) -> float:
    """`python -c pass`: the interpreter's own start-up, the floor of every CLI figure."""
    return statistics.median(wall([sys.executable, "-c", "pass"]) for _ in range(repeats))


FTS_SCRIPT = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT rowid FROM events_fts WHERE events_fts MATCH 'timeout' LIMIT 20").fetchall()
"""


def fts_floor(db: Path, repeats: int = REPEATS) -> float:
    """A plain Python script that opens the database and runs one FTS5 query: the floor of
    any command that searches this store."""
    return statistics.median(wall([sys.executable, "-c", FTS_SCRIPT, str(db)])
                             for _ in range(repeats))


def copy_floor(source: Path, dest: Path, repeats: int = REPEATS) -> float:
    """Copying `source` (a file or folder) to `dest`: the floor of export, import and gc."""
    def once() -> None:
        if dest.exists():
            shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
        if source.is_dir():
            shutil.copytree(source, dest)
        else:
            shutil.copyfile(source, dest)
            os.fsync(os.open(dest, os.O_RDONLY))
    return median_of(once, repeats)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


# ---------------------------------------------------------------- texts


def vocabulary(rng: random.Random, n: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return sorted(words) + ["flaky", "login", "timeout", "fixture", "parser", "cache"]


class Texts:
    """Realistic agent texts of about EVENT_CHARS characters, reproducible from a seed."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.vocab = vocabulary(self.rng)
        self.weights = [1 / (i + 1) for i in range(len(self.vocab))]
        # Cumulative weights once: `choices` with plain weights re-adds all 4,000 per call.
        self.cum = list(itertools.accumulate(self.weights))

    def words(self, lo: int, hi: int) -> str:
        return " ".join(self.rng.choices(self.vocab, cum_weights=self.cum,
                                         k=self.rng.randint(lo, hi)))

    def ident(self) -> str:
        return "_".join(self.rng.choices(self.vocab, cum_weights=self.cum, k=2))

    def path(self) -> str:
        return f"src/{self.ident()}/{self.ident()}.py"

    def prompt(self) -> str:
        return (f"Please fix the {self.ident()} handling in {self.path()}: when the "
                f"{self.ident()} fixture times out the login flow retries forever. "
                f"{self.words(40, 70)}. Keep the public API of {self.ident()} stable and "
                f"run the tests before you say it is done.")

    def pytest_failure(self) -> str:
        test = f"tests/test_{self.ident()}.py::test_{self.ident()}"
        lines = [f"FAILED {test} - AssertionError: assert {self.rng.randint(0, 99)} == "
                 f"{self.rng.randint(100, 199)}",
                 f"    def test_{self.ident()}(client, {self.ident()}):",
                 f">       assert client.get('/{self.ident()}').status == 200",
                 f"E       AssertionError: {self.words(6, 12)}",
                 f"{self.path()}:{self.rng.randint(10, 900)}: AssertionError",
                 f"==== 1 failed, {self.rng.randint(5, 400)} passed in "
                 f"{self.rng.random() * 9:.2f}s ===="]
        return "\n".join(lines) + "\n" + self.words(30, 50)

    def traceback(self) -> str:
        frames = [f'  File "{self.path()}", line {self.rng.randint(1, 900)}, in {self.ident()}\n'
                  f"    {self.ident()} = {self.ident()}({self.ident()})"
                  for _ in range(self.rng.randint(4, 6))]
        return ("Traceback (most recent call last):\n" + "\n".join(frames) +
                f"\nKeyError: '{self.ident()}' {self.words(10, 20)}")

    def diff(self) -> str:
        path = self.path()
        body = "\n".join(f"{self.rng.choice('+- ')}    {self.ident()} = {self.words(3, 8)}"
                         for _ in range(self.rng.randint(8, 12)))
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,9 +1,9 @@\n{body}"

    def note(self) -> str:
        return (f"Decided to keep {self.ident()} behind the {self.ident()} flag because "
                f"{self.words(70, 110)}")

    def event(self) -> str:
        shape = self.rng.choice((self.prompt, self.pytest_failure, self.traceback, self.diff,
                                 self.note))
        return shape()[:2000]

    def preference(self, n: int) -> str:
        return (f"Preference {n}: always {self.words(4, 10)} before touching "
                f"{self.path()}, and never {self.words(3, 6)}.")


# ---------------------------------------------------------------- git repositories


GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git_repo(path: Path, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **GIT_ENV)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    if commit:
        (path / "app.py").write_text("print('hi')\n")
        subprocess.run(["git", "add", "."], cwd=path, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", "one"], cwd=path, check=True, env=env)
    return path


# ---------------------------------------------------------------- shared stores

_CACHE: dict[tuple, Path] = {}
_ROOT: Path | None = None


def _root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="agentstate-bench-stores-"))
    return _ROOT


def cached(key: tuple, build: Callable[[Path], Path]) -> Path:
    """A store built once per bench run (building 100k realistic events takes a while):
    read-only users share it; a benchmark that changes it takes `clone()`."""
    if key not in _CACHE:
        start = time.perf_counter()
        _CACHE[key] = build(_root() / "-".join(map(str, key)))
        print(f"  (built store {key} in {time.perf_counter() - start:.1f} s, shared by the "
              "benchmarks of this run)")
    return _CACHE[key]


def clone(source: Path, dest: Path) -> Path:
    """A private copy of a shared store (a repository folder with its .agentstate/)."""
    shutil.copytree(source, dest, symlinks=True)
    return dest


def cleanup() -> None:
    global _ROOT
    if _ROOT is not None:
        shutil.rmtree(_ROOT, ignore_errors=True)
    _ROOT = None
    _CACHE.clear()
