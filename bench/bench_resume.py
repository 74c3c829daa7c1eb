"""Wall time of `agentstate resume` on a run of 10,000 events, next to `agentstate --help` and
`python -c pass`, all measured in this same run as subprocesses (median of several).

The store is built through the Python API: the run with `start_run`, then the events in one
transaction with a single executemany (the same columns `append_event` writes), so the
build takes a second rather than a minute. The log is realistic: questions with answers,
verifies with results, hypotheses confirmed by diagnoses, corrections via `supersedes`, tool
events, checkpoints.
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

from bench.data import Texts, scaled, verdict

EVENTS = scaled(10_000, 200)
PREFERENCES = scaled(500, 40)  # pinned user preferences: hundreds, as real stores hold
REPEATS = scaled(7, 1)
TARGET_S = 0.3
AGENTSTATE = str(Path(sys.executable).with_name("agentstate"))


def build_store(root: Path, events: int = EVENTS) -> str:
    from agentstate.maintenance.init import init_store
    from agentstate.runs.checkpoint import create_checkpoint
    from agentstate.runs.log import start_run
    from agentstate.runs.worktree import snapshot
    from agentstate.store.clock import IdSource
    from agentstate.store.db import open_store

    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "app.py").write_text("print('hi')\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
               GIT_COMMITTER_EMAIL="b@b")
    subprocess.run(["git", "add", "."], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "one"], cwd=root, check=True, env=env)
    init_store(target=root)
    store = open_store(start=root, ids=IdSource(seed=1))
    rng = random.Random(1)
    run, _ = start_run(store, "Make the importer handle 10k-line transcripts",
                       [f"constraint number {i}: keep the public API stable" for i in range(5)],
                       worktree=snapshot(root))
    rows, open_targets = [], {"question": [], "verify": [], "hypothesis": []}
    texts = Texts(1)
    for seq in range(6, events + 1):  # constraints took seqs 1-5
        eid = store.new_id()
        roll = rng.random()
        kind, resolves, supersedes = "observation", None, None
        if roll < 0.08:
            kind = rng.choice(["question", "verify", "hypothesis"])
            open_targets[kind].append(eid)
        elif roll < 0.15 and open_targets["question"]:
            kind, resolves = "answer", open_targets["question"].pop(0)
        elif roll < 0.20 and open_targets["verify"]:
            kind, resolves = rng.choice(["verified", "failed"]), open_targets["verify"].pop(0)
        elif roll < 0.22 and open_targets["hypothesis"]:
            kind, resolves = "diagnosis", open_targets["hypothesis"].pop(0)
        elif roll < 0.25 and rows:
            kind, supersedes = "note", rows[-1][0]
        elif roll < 0.45:
            kind = "tool"
        elif roll < 0.55:
            kind = "decision"
        text = texts.event()
        meta = json.dumps({"exit_code": rng.choice([0, 0, 1])}) if kind == "tool" else "{}"
        rows.append((eid, run.id, seq, kind, f"{kind} {seq}: {text}", "model",
                     store.now(), meta, resolves, supersedes))
    with store.transaction() as conn:
        conn.executemany(
            "INSERT INTO events (id, run, seq, kind, text, source, ts, meta, resolves, "
            "supersedes) VALUES (?, (SELECT row FROM runs WHERE id = ?), ?, ?, ?, ?, ?, ?, ?, ?)",
            rows)
        conn.executemany(
            "INSERT INTO memories (id, version, kind, key, scope, text, norm_hash, source, "
            "status, confidence, valid_until, created, last_confirmed, evidence_count, "
            "supersedes, principal, status_reason) VALUES (?, 1, 'preference', NULL, 'repo', "
            "?, ?, 'user', 'active', 0.9, NULL, ?, ?, 1, NULL, 'owner', 'bench')",
            [(f"pref{n:06d}", texts.preference(n), f"p{n}", store.now(), store.now())
             for n in range(PREFERENCES)])
    create_checkpoint(store, run.ref, "halfway through", worktree=snapshot(root))
    store.close()
    (root / "app.py").write_text("print('changed')\n")  # some drift to report
    return run.ref


def median_time(argv: list[str], cwd: Path, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, capture_output=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} failed: {proc.stderr.decode()[:300]}")
    return statistics.median(times)


def time_in_process(root: Path, repeats: int = REPEATS) -> float:
    """Median of build_pack() with the store open and modules imported: the domain work."""
    from agentstate.context.resume import build_pack
    from agentstate.store.db import open_store

    store = open_store(start=root)
    try:
        build_pack(store, principal="owner")  # warm imports and caches
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            build_pack(store, principal="owner")
            times.append(time.perf_counter() - start)
    finally:
        store.close()
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        run_ref = build_store(root)
        print(f"built a run of {EVENTS:,} events and {PREFERENCES} pinned preferences in "
              f"{time.perf_counter() - started:.1f} s")
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("agentstate --help", [AGENTSTATE, "--help"]),
            ("agentstate resume", [AGENTSTATE, "resume"]),
            ("agentstate resume --json", [AGENTSTATE, "resume", "--json"]),
            ("agentstate resume --budget 2000", [AGENTSTATE, "resume", "--budget", "2000"]),
            (f"agentstate resume {run_ref}", [AGENTSTATE, "resume", run_ref]),
        ]
        results = {name: median_time(argv, root) for name, argv in cases}
        in_process = time_in_process(root)
    base = results["python -c pass"]
    print(f"{'command':36} {'median s':>9} {'x python':>9}")
    for name, seconds in results.items():
        print(f"{name:36} {seconds:9.3f} {seconds / base:9.1f}")
    print(f"{'build_pack() in-process (warm)':36} {in_process:9.3f} {in_process / base:9.1f}"
          "   <- the domain work; the rest of `resume` is interpreter and CLI start-up")
    resume = results["agentstate resume"]
    print(f"resume on {EVENTS:,} events: {resume:.3f} s (target < {TARGET_S} s: "
          f"{verdict(resume < TARGET_S)}); "
          f"resume / --help = {resume / results['agentstate --help']:.2f}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
