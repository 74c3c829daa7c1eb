"""`recall` wall time at 1,000 and 100,000 memories, through the real CLI (a subprocess).

Stores are built fast with direct inserts in one transaction (the FTS triggers index them as
they go), not with 100k CLI calls. Texts mix a Zipf-like vocabulary with a few very common
words, so "common-words" queries hit a large share of the store. Reported per query: the
best of several whole CLI processes (least disturbed by other load on a shared machine; the
two sizes alternate), the median of in-process read-gate calls, and the large/small ratios
measured in this same run.
Targets (issue 3): under 0.3 s at 100,000 and growth under 1.5x.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentstate.store.principals import resolve_principal
from bench.data import SMOKE, scaled

SIZES = (1_000, 100_000) if not SMOKE else (50,)  # smoke: the smallest size only
REPEATS = scaled(7, 1)
QUERIES = {
    "rare words": "flaky migration timeout",
    "common words": "the project uses the test command for the build",
    "chinese": "数据库迁移",
    "no match": "zzzqqq",
}
if SMOKE:
    QUERIES = {"rare words": QUERIES["rare words"]}
COMMON = ["project", "uses", "test", "command", "build", "code", "file", "run"]
CJK = ["数据库迁移必须向后兼容", "测试命令是 make test", "部署前运行集成测试", "配置文件在根目录"]


def _vocabulary(rng: random.Random, n: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return sorted(words) + ["flaky", "migration", "timeout"]


def build_store(path: Path, n: int, seed: int = 1) -> Path:
    """An initialised store at `path` with `n` active memories (plus some other statuses)."""
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store

    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    init_store(target=path)
    store = open_store(start=path)
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    statuses = ["active"] * 16 + ["superseded", "candidate", "forgotten", "contested"]
    with store.transaction() as conn:
        # Bulk load: park the FTS sync triggers, insert, rebuild the indexes in one pass, and
        # put the same triggers back (read from the schema, so they cannot drift).
        triggers = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                                "AND tbl_name = 'memories'").fetchall()
        for name, _ in triggers:
            conn.execute(f"DROP TRIGGER {name}")
        rows = []
        for i in range(n):
            words = rng.choices(vocab, weights, k=rng.randint(6, 16))
            words += rng.sample(COMMON, rng.randint(0, 3))
            rng.shuffle(words)
            text = " ".join(words)
            if i % 50 == 0:
                text = rng.choice(CJK) + " " + text
            status = rng.choice(statuses)
            ts = f"2026-01-{1 + i % 28:02d}T00:00:00.000000Z"
            rows.append((f"b{i:09d}", 1, "fact", None, "repo", text, f"h{i}", "user", status,
                         0.8, None, ts, ts, 1, None, "owner", "bench"))
        conn.executemany(
            "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, status,"
            " confidence, valid_until, created, last_confirmed, evidence_count, supersedes,"
            " principal, status_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?)",
            rows,
        )
        for index in ("memories_fts", "memories_tri"):
            conn.execute(f"INSERT INTO {index}({index}) VALUES ('rebuild')")
        for _, sql in triggers:
            conn.execute(sql)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


def _time_cli_pair(stores: list[Path], query: str) -> list[float]:
    """Best-of-REPEATS wall time of `agentstate recall QUERY --json` for each store, the
    stores measured alternately so a burst of load on this shared machine hits both."""
    env = dict(os.environ, NO_COLOR="1")
    samples: list[list[float]] = [[] for _ in stores]
    for _ in range(REPEATS):
        for i, cwd in enumerate(stores):
            start = time.perf_counter()
            out = subprocess.run([sys.executable, "-m", "agentstate", "recall", query, "--json"],
                                 cwd=cwd, env=env, capture_output=True, text=True)
            samples[i].append(time.perf_counter() - start)
            if out.returncode != 0:
                raise RuntimeError(f"recall failed: {out.stderr.strip()}")
    return [min(s) for s in samples]


def _best_process(argv: list[str]) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return min(samples)


def _time_inprocess(cwd: Path, query: str) -> float:
    """The read gate alone (no interpreter start-up): what the context engine pays."""
    from agentstate.memory.recall import recall
    from agentstate.store.db import open_store

    store = open_store(start=cwd)
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        recall(store, query, principal=resolve_principal(store))
        samples.append(time.perf_counter() - start)
    store.close()
    return statistics.median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = {}
        for n in SIZES:
            start = time.perf_counter()
            stores[n] = build_store(Path(tmp) / f"s{n}", n)
            print(f"built {n:>7,} memories in {time.perf_counter() - start:.1f} s")
        python = _best_process([sys.executable, "-c", "pass"])
        startup = _best_process([sys.executable, "-m", "agentstate", "--help"])
        print(f"python -c pass: {python:.3f} s   agentstate --help (start-up floor): "
              f"{startup:.3f} s")
        print(f"{'query':<14} {'1k cli':>8} {'100k cli':>9} {'ratio':>6}   "
              f"{'1k gate':>8} {'100k gate':>9} {'ratio':>6}")
        small, large = SIZES[0], SIZES[-1]
        for label, query in QUERIES.items():
            pair = [stores[small], stores[large]] if small != large else [stores[small]]
            cli = _time_cli_pair(pair, query) * (3 - len(pair))  # one size: the same twice
            gate = [_time_inprocess(stores[n], query) for n in (small, large)]
            over = []
            if cli[1] >= 0.3:
                over.append("over 0.3 s" + (" (start-up alone is " f"{startup:.2f} s)"
                                             if startup > 0.2 else ""))
            if cli[1] / cli[0] >= 1.5:
                over.append("growth over 1.5x")
            flag = f"  <-- {'; '.join(over)}" if over else ""
            print(f"{label:<14} {cli[0]:>8.3f} {cli[1]:>9.3f} {cli[1] / cli[0]:>6.2f}   "
                  f"{gate[0]:>8.4f} {gate[1]:>9.4f} {gate[1] / max(gate[0], 1e-6):>6.2f}{flag}")
        print(f"(sizes {small:,} and {large:,}; cli = best of {REPEATS} runs of the whole "
              "`agentstate recall --json` process, sizes alternated; gate = median of "
              f"{REPEATS} in-process `recall()` calls)")


if __name__ == "__main__":
    main()
