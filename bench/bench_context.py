"""`context --budget 8000` wall time on stores of 1,000 and 100,000 events, each with 10,000
memories and 200 published skills.

Stores are built fast with direct inserts through the domain tables (the full-text triggers
index events and memories as they go). Events are spread over 20 runs; the active run is the
newest and has 500 events in both stores (its own size is the resume benchmark's subject;
here the store grows around it). Reported, from one run of this script: the in-process
assembly time (open the store, gather, allocate, render, store the manifest) and the CLI wall
time (a subprocess, including Python start-up), each the median of several runs, with the
large/small ratio and `python -c pass` measured alongside.
Targets (issue 4): under 0.3 s; growth under 1.5x from the small store to the large one.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = (1_000, 100_000)
MEMORIES = 10_000
SKILLS = 200
RUNS = 20
ACTIVE_EVENTS = 500  # events of the active run, in both stores
REPEATS = 5
BUDGET = 8000
KINDS = ["observation", "note", "decision", "observation", "tool", "hypothesis", "question",
         "verify", "diagnosis", "note"]
COMMON = ["test", "run", "file", "build", "the", "module", "error"]


def _vocabulary(rng: random.Random, n: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = {"".join(rng.choice(letters) for _ in range(rng.randint(4, 9))) for _ in range(n)}
    return sorted(words) + ["flaky", "login", "timeout", "fixture", "parser", "cache"]


def _text(rng: random.Random, vocab: list[str], weights: list[float], lo: int, hi: int) -> str:
    words = rng.choices(vocab, weights, k=rng.randint(lo, hi)) + rng.sample(COMMON, 2)
    rng.shuffle(words)
    return " ".join(words)


def build_store(path: Path, events: int, seed: int = 7) -> Path:
    from agentstate.store.db import open_store
    from agentstate.store.init import init_store

    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    init_store(target=path)
    store = open_store(start=path)
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    with store.transaction() as conn:
        for r in range(RUNS):
            # The active run has a fixed size, so the growth measured is the store's.
            per_run = ACTIVE_EVENTS if r == RUNS - 1 else (events - ACTIVE_EVENTS) // (RUNS - 1)
            run_id = f"benchrun{r:02d}"
            status = "active" if r == RUNS - 1 else "done"
            created = f"2026-01-{1 + r:02d}T00:00:00.000000Z"
            conn.execute(
                "INSERT INTO runs (id, goal, status, created, updated, ended, branch, head,"
                " dirty_fingerprint, dirty_files) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '[]')",
                (run_id, f"fix the flaky login timeout in module {vocab[r]}", status, created,
                 created, None if status == "active" else created, "main", None, None),
            )
            rows = []
            for seq in range(1, per_run + 1):
                kind = KINDS[seq % len(KINDS)]
                source = "tool:pytest" if kind in ("observation", "tool") else "user"
                ts = f"2026-01-{1 + r:02d}T{seq // 3600 % 24:02d}:{seq // 60 % 60:02d}:" \
                     f"{seq % 60:02d}.000000Z"
                rows.append((f"e{r:02d}{seq:07d}", run_id, seq, kind,
                             _text(rng, vocab, weights, 8, 40), source, ts))
            conn.executemany(
                "INSERT INTO events (id, run, seq, kind, text, source, ts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", rows,
            )
        conn.execute("INSERT INTO kv (key, value) VALUES ('current_run', ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (f"benchrun{RUNS - 1:02d}",))
        statuses = ["active"] * 16 + ["superseded", "candidate", "forgotten", "contested"]
        mems = []
        for i in range(MEMORIES):
            ts = f"2026-01-{1 + i % 28:02d}T00:00:00.000000Z"
            kind = "preference" if i % 500 == 0 else "fact"
            mems.append((f"m{i:09d}", 1, kind, None, "repo", _text(rng, vocab, weights, 6, 16),
                         f"h{i}", "user", rng.choice(statuses), 0.8, None, ts, ts, 1, None,
                         "owner", "bench"))
        conn.executemany(
            "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, status,"
            " confidence, valid_until, created, last_confirmed, evidence_count, supersedes,"
            " principal, status_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?)", mems,
        )
        skills = []
        for i in range(SKILLS):
            triggers = json.dumps([" ".join(rng.sample(vocab[:300], 2))])
            skills.append((f"bench-skill-{i:03d}", 1, "published",
                           _text(rng, vocab, weights, 6, 14), triggers, "2026-01-01"))
        conn.executemany(
            "INSERT INTO skill_versions (name, version, status, description, triggers, created)"
            " VALUES (?, ?, ?, ?, ?, ?)", skills,
        )
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return path


def _in_process(path: Path) -> tuple[float, int]:
    from agentstate.context.assemble import build_context
    from agentstate.store.db import open_store

    start = time.perf_counter()
    store = open_store(start=path)
    pack = build_context(store, budget=BUDGET)
    store.close()
    return time.perf_counter() - start, pack.tokens


def _cli(path: Path, args: list[str]) -> float:
    env = dict(os.environ, NO_COLOR="1")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agentstate", *args], cwd=path, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"agentstate {' '.join(args)} failed: {proc.stderr.strip()}")
    return elapsed


def _python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def _tokenizer_load() -> float:
    code = ("import time; t = time.perf_counter(); from agentstate.tokens import load_encoding; "
            "load_encoding(); print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return float(out.stdout.strip())


def main() -> None:
    from agentstate.tokens import load_encoding

    load_encoding()  # a one-off per process; the CLI numbers include it
    with tempfile.TemporaryDirectory(prefix="agentstate-bench-context-") as tmp:
        paths = {}
        for size in SIZES:
            t0 = time.perf_counter()
            paths[size] = build_store(Path(tmp) / f"s{size}", size)
            print(f"  built {size:,} events, {MEMORIES:,} memories, {SKILLS} skills in "
                  f"{time.perf_counter() - t0:.1f}s")
        # Samples alternate between the stores, so drift in machine load hits both alike.
        inproc: dict[int, list[float]] = {size: [] for size in SIZES}
        cli: dict[int, list[float]] = {size: [] for size in SIZES}
        tokens: dict[int, int] = {}
        extra: dict[str, list[float]] = {"python -c pass": [], "tokenizer load": [],
                                         "agentstate --help": []}
        for _ in range(REPEATS):
            for size in SIZES:
                elapsed, tokens[size] = _in_process(paths[size])
                inproc[size].append(elapsed)
                cli[size].append(_cli(paths[size], ["context", "--budget", str(BUDGET)]))
            extra["python -c pass"].append(_python())
            extra["tokenizer load"].append(_tokenizer_load())
            extra["agentstate --help"].append(_cli(paths[SIZES[0]], ["--help"]))
    med = statistics.median
    for size in SIZES:
        print(f"  {size:>7,} events: assembly {med(inproc[size]) * 1000:7.1f} ms, "
              f"CLI wall {med(cli[size]) * 1000:7.1f} ms, pack {tokens[size]} tokens")
    for name, samples in extra.items():
        print(f"  {name}: {med(samples) * 1000:.1f} ms (same run)")
    small, large = SIZES[0], SIZES[-1]
    grow_in = med(inproc[large]) / med(inproc[small])
    grow_cli = med(cli[large]) / med(cli[small])
    print(f"  growth {small:,} → {large:,} events: assembly {grow_in:.2f}x, CLI {grow_cli:.2f}x"
          f" (target < 1.5x: {'ok' if max(grow_in, grow_cli) < 1.5 else 'MISSED'})")
    print(f"  under 300 ms at {large:,}: assembly "
          f"{'ok' if med(inproc[large]) < 0.3 else 'MISSED'}, CLI wall "
          f"{'ok' if med(cli[large]) < 0.3 else 'MISSED'}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
