"""`context --budget 8000`, `context --query` and `resume` wall time on stores of 1,000 and
100,000 events, each with 10,000 memories and 200 published skills.

Stores are built fast with direct inserts through the domain tables (the full-text triggers
index events and memories as they go). Events are spread over 20 runs; the active run is the
newest and holds a tenth of them (100 events in the small store, 10,000 in the large one,
with a thousand open questions, pending verifications and hypotheses each), so the growth
measured is the store's and the active run's together. Reported, from one run of this
script: the in-process assembly time (open the store, gather, allocate, render, store the
manifest) and the CLI wall time (a subprocess, including Python start-up), each the median
of several runs, with the large/small ratio and `python -c pass` measured alongside.

Token counts are remembered between processes (agentstate/tokens/memo.py), so the CLI is timed
in four states: *repeat* (nothing new since the last pack), *after new events* (before each
sample the agent logs NEW_EVENTS events full of identifiers never seen before: new fragments,
new windows, a new pack text, as in a real turn), *cold cache* (an empty cache directory: the
first counting command on a machine, which also writes the caches; median of three) and
*first after init* (`agentstate init` has built the vocabulary copy; the pack's windows are
all new).
Then the three commands a new user runs — `context --budget 8000`, `context --query …` and
`resume` — whole process, p50, with `python -c pass` and `import typer` measured in the same
run. Targets (issue 11): at most 0.2 s warm; growth 1k → 100k at most 1.2x.
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

from agentstate.store.principals import resolve_principal
from bench.data import SMOKE, Texts, cached, scaled

# Smoke mode runs the smallest size only (one store: every line is still printed, the
# growth figures are then 1.00x and mean nothing): the bench runs, in a fraction of the time.
SIZES = (1_000, 100_000) if not SMOKE else (50,)
MEMORIES = scaled(10_000, 300)
PREFERENCE_EVERY = 10  # a tenth of the memories are user preferences (the 983 of 10k)
SKILLS = scaled(200, 10)
RUNS = 20
ACTIVE_SHARE = 10  # the active run holds 1/ACTIVE_SHARE of the store's events
REPEATS = scaled(5, 1)
COLD_SAMPLES = scaled(3, 1)  # first commands with an empty token cache, each its own cache dir
NEW_EVENTS = 10
BUDGET = 8000
KINDS = ["observation", "note", "decision", "observation", "tool", "hypothesis", "question",
         "verify", "diagnosis", "note"]
COMMON = ["test", "run", "file", "build", "the", "module", "error"]


def _text(rng: random.Random, vocab: list[str], weights: list[float], lo: int, hi: int) -> str:
    words = rng.choices(vocab, weights, k=rng.randint(lo, hi)) + rng.sample(COMMON, 2)
    rng.shuffle(words)
    return " ".join(words)


def build_store(path: Path, events: int, seed: int = 7) -> Path:
    """The store of `events` realistic events, built once per bench run and shared (a
    benchmark that changes it works on a `bench.data.clone`)."""
    return cached(("context", events, seed), lambda p: _build_store(p, events, seed))


def _build_store(path: Path, events: int, seed: int = 7) -> Path:
    from agentstate.maintenance.init import init_store
    from agentstate.store.db import open_store

    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    init_store(target=path)
    store = open_store(start=path)
    rng = random.Random(seed)
    texts = Texts(seed)
    vocab = texts.vocab
    weights = texts.weights
    with store.transaction() as conn:
        for r in range(RUNS):
            active = events // ACTIVE_SHARE
            per_run = active if r == RUNS - 1 else (events - active) // (RUNS - 1)
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
                rows.append((f"e{r:02d}{seq:07d}", run_id, seq, kind, texts.event(), source,
                             ts))
            conn.executemany(
                "INSERT INTO events (id, run, seq, kind, text, source, ts) "
                "VALUES (?, (SELECT row FROM runs WHERE id = ?), ?, ?, ?, ?, ?)", rows,
            )
        conn.execute("INSERT INTO kv (key, value) VALUES ('current_run', ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (f"benchrun{RUNS - 1:02d}",))
        statuses = ["active"] * 16 + ["superseded", "candidate", "forgotten", "contested"]
        mems = []
        for i in range(MEMORIES):
            ts = f"2026-01-{1 + i % 28:02d}T00:00:00.000000Z"
            kind = "preference" if i % PREFERENCE_EVERY == 0 else "fact"
            text = texts.preference(i) if kind == "preference" else \
                _text(rng, vocab, weights, 6, 16)
            mems.append((f"m{i:09d}", 1, kind, None, "repo", text,
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
    pack = build_context(store, budget=BUDGET, principal=resolve_principal(store))
    store.close()
    return time.perf_counter() - start, pack.tokens


def _essentials_cost(path: Path) -> tuple[float, float, int]:
    """(ms now, ms reading every preference as before, preferences stored): the essentials
    of the active run in process, p50. The old read — every live preference loaded as a
    record, ranked in Python, each line tokenized by the ceiling — is kept here as the
    figure the SQL ranking is measured against (issue 24), in the same process."""
    from agentstate.context import essentials
    from agentstate.memory.model import list_user_preferences
    from agentstate.memory.scopes import scope_applies
    from agentstate.runs.log import current_run
    from agentstate.store.db import open_store

    def every_preference(store, run, *, principal):
        def read_all(ranked, room, count):
            scope = essentials.scope_of(run)
            prefs = sorted(reversed(list_user_preferences(store, principal, scope)),
                           key=lambda p: -(scope_applies(p.scope, scope) or 0.0))
            return prefs, [essentials._preference_item(essentials.preference_ref(p), p.scope,
                                                        p.text) for p in prefs]
        saved = essentials.fitting_preferences
        essentials.fitting_preferences = read_all
        try:
            return essentials.gather(store, run, principal=principal)
        finally:
            essentials.fitting_preferences = saved

    store = open_store(start=path)
    try:
        principal = resolve_principal(store)
        run = current_run(store)
        times: dict[str, list[float]] = {"now": [], "before": []}
        texts = set()
        for _ in range(scaled(9, 1)):
            for name, gather in (("now", essentials.gather), ("before", every_preference)):
                start = time.perf_counter()
                ess = gather(store, run, principal=principal)
                times[name].append(time.perf_counter() - start)
                texts.add(ess.text())
        if len(texts) != 1:
            raise SystemExit("the essentials differ between the two reads")
        stored = ess.left_out.get("preferences", 0) + len(ess.preferences)
    finally:
        store.close()
    return (statistics.median(times["now"]) * 1000, statistics.median(times["before"]) * 1000,
            stored)


def _new_events(path: Path, rng: random.Random) -> None:
    """What an agent logs between two turns: failures naming files and tests never seen."""
    from agentstate.runs.log import append_event
    from agentstate.store.db import open_store

    store = open_store(start=path)
    for _ in range(NEW_EVENTS):
        n = rng.randrange(10**9)
        append_event(store, None, "observation",
                     f"pytest tests/test_{n:x}.py::test_case_{n % 9973} failed: "
                     f"AssertionError in src/pkg_{n % 7919}/mod_{n:o}.py line {n % 997}",
                     source="tool:pytest")
    store.close()


def _cli(path: Path, args: list[str], cache: str | None = None) -> float:
    env = dict(os.environ, NO_COLOR="1")
    if cache is not None:
        env["AGENTSTATE_CACHE_DIR"] = cache
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


def _full_encoder_build() -> float:
    """What every counting command paid before the memo: read the ranks, build the encoder."""
    code = ("import time; t = time.perf_counter(); from agentstate.tokens import load_encoding; "
            "load_encoding(); print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    return float(out.stdout.strip())


def _python_import(module: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
    return time.perf_counter() - start


QUERY = "why does the login timeout fixture fail in the parser cache"
COMMANDS = {
    "context --budget 8000": ["context", "--budget", str(BUDGET)],
    "context --query": ["context", "--budget", str(BUDGET), "--query", QUERY],
    "resume": ["resume"],
}


def _commands(paths: dict[int, Path]) -> None:
    """The three commands, warm (token caches filled), p50 whole process, alternating
    between the stores, with the interpreter's own start-up measured alongside."""
    for size in SIZES if not SMOKE else ():  # warm the caches
        for args in COMMANDS.values():
            _cli(paths[size], args)
    samples: dict[str, dict[int, list[float]]] = {n: {s: [] for s in SIZES} for n in COMMANDS}
    base: dict[str, list[float]] = {"python -c pass": [], "python -c 'import typer'": []}
    for _ in range(scaled(REPEATS + 2, 1)):
        for size in SIZES:
            for name, args in COMMANDS.items():
                samples[name][size].append(_cli(paths[size], args))
        base["python -c pass"].append(_python())
        base["python -c 'import typer'"].append(_python_import("typer"))
    med = statistics.median
    small, large = SIZES[0], SIZES[-1]
    print(f"  {'command (p50, whole process, warm)':40} {small:>9,} {large:>9,}  growth")
    for name, by_size in samples.items():
        a, b = med(by_size[small]), med(by_size[large])
        verdict = "ok" if b <= 0.2 and b / a <= 1.2 else "MISSED"
        print(f"  {name:40} {a * 1000:7.1f}ms {b * 1000:7.1f}ms  {b / a:5.2f}x  "
              f"(target ≤ 0.2 s, ≤ 1.2x: {verdict})")
    for name, values in base.items():
        print(f"  {name:40} {med(values) * 1000:7.1f}ms (same run)")


DENSE_QUERIES = ("why does the build fail on the module import", "flaky test in the runner",
                 "which file holds the config error", "error when the module is built",
                 "what broke the release build", "slow test run again")


def _dense_cost(path: Path) -> tuple[float, float, float, float] | None:
    """(lexical, lexical + dense for a question never asked, the same question asked again
    (its kept ranking), a new question with the vector matrix read again) ms per event
    search, p50 in process, on a store whose events are all embedded; None without
    the `dense` extra. Embedding the store comes first and is not timed (it is done once,
    lazily, in batches)."""
    from agentstate.memory import dense, dense_model
    from agentstate.memory.search import ranked_events
    from agentstate.store.db import open_store

    embedder = dense_model.load_embedder()
    if embedder is None:
        print("  dense signal: not measured (the dense extra is not installed)")
        return None
    store = open_store(start=path)
    try:
        t0 = time.perf_counter()
        while dense.ensure_vectors(store, embedder, limit=20_000):
            pass
        print(f"  embedded the store's events in {time.perf_counter() - t0:.1f}s (once)")
        timings: list[list[float]] = [[], [], [], []]
        for query in DENSE_QUERIES * REPEATS:
            for n, weight in enumerate((None, 0.5, 0.5, 0.5)):
                if n == 1:
                    _forget_kept_queries(store)  # a question never asked: the matrix
                if n == 3:
                    _forget_kept_queries(store)
                    dense._CACHE.clear()  # the matrix read from the table, as before caching
                start = time.perf_counter()
                ranked_events(store, query, limit=320, dense_weight=weight)
                timings[n].append((time.perf_counter() - start) * 1000)
    finally:
        store.close()
    lexical, new, repeated, uncached = (statistics.median(t) for t in timings)
    return lexical, new, repeated, uncached


def _forget_kept_queries(store) -> None:
    """Drop the query vectors and rankings the store keeps (memory/dense_queries.py), so
    the next search is one of a question never asked."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM dense_queries")


def main() -> None:
    saved = os.environ.get("AGENTSTATE_CACHE_DIR")
    try:
        _measure()
    finally:  # the other benchmarks use the usual cache
        if saved is None:
            os.environ.pop("AGENTSTATE_CACHE_DIR", None)
        else:
            os.environ["AGENTSTATE_CACHE_DIR"] = saved


def _measure() -> None:
    rng = random.Random(11)
    args = ["context", "--budget", str(BUDGET)]
    with tempfile.TemporaryDirectory(prefix="agentstate-bench-context-") as tmp:
        cache = str(Path(tmp) / "cache")  # this run's own token caches, cold at first
        os.environ["AGENTSTATE_CACHE_DIR"] = cache
        paths = {}
        for size in SIZES:
            t0 = time.perf_counter()
            paths[size] = build_store(Path(tmp) / f"s{size}", size)
            print(f"  built {size:,} events, {MEMORIES:,} memories, {SKILLS} skills in "
                  f"{time.perf_counter() - t0:.1f}s")
        # One sample is at the mercy of the machine's load: the median of COLD_SAMPLES, each
        # with its own empty cache directory and followed at once by a repeat with that
        # cache, so the cold figure has a warm one taken at the same moment beside it.
        cold_samples: dict[int, list[float]] = {size: [] for size in SIZES}
        cold_then_warm: dict[int, list[float]] = {size: [] for size in SIZES}
        for i in range(COLD_SAMPLES):
            for size in SIZES:
                fresh_cache = str(Path(tmp) / f"cold{size}-{i}")
                cold_samples[size].append(_cli(paths[size], args, fresh_cache))
                cold_then_warm[size].append(_cli(paths[size], args, fresh_cache))
        cold = {size: statistics.median(cold_samples[size]) for size in SIZES}
        after_init = {}
        for size in SIZES:  # `agentstate init` builds the vocabulary copy in advance
            warmed = str(Path(tmp) / f"init{size}")
            subprocess.run([sys.executable, "-c", "from agentstate.tokens import "
                            "warm_count_cache; warm_count_cache()"], check=True,
                           env=dict(os.environ, AGENTSTATE_CACHE_DIR=warmed))
            after_init[size] = _cli(paths[size], args, warmed)
        for size in {SIZES[0], SIZES[-1]}:  # fills this run's cache: the repeats start warm
            _cli(paths[size], args)
        _commands(paths)
        # Samples alternate between the stores, so drift in machine load hits both alike.
        inproc: dict[int, list[float]] = {size: [] for size in SIZES}
        repeat: dict[int, list[float]] = {size: [] for size in SIZES}
        fresh: dict[int, list[float]] = {size: [] for size in SIZES}
        tokens: dict[int, int] = {}
        extra: dict[str, list[float]] = {"python -c pass": [], "full encoder build": [],
                                         "agentstate --help": []}
        for _ in range(REPEATS):
            for size in SIZES:
                elapsed, tokens[size] = _in_process(paths[size])
                inproc[size].append(elapsed)
                repeat[size].append(_cli(paths[size], args))
                _new_events(paths[size], rng)
                fresh[size].append(_cli(paths[size], args))
            extra["python -c pass"].append(_python())
            extra["full encoder build"].append(_full_encoder_build())
            extra["agentstate --help"].append(_cli(paths[SIZES[0]], ["--help"]))
        dense = _dense_cost(paths[SIZES[-1]])
        essentials_ms = _essentials_cost(paths[SIZES[-1]])
    med = statistics.median
    for size in SIZES:
        print(f"  {size:>7,} events: assembly {med(inproc[size]) * 1000:6.1f} ms; CLI wall: "
              f"repeat {med(repeat[size]) * 1000:6.1f} ms, after {NEW_EVENTS} new events "
              f"{med(fresh[size]) * 1000:6.1f} ms; once: cold cache {cold[size] * 1000:6.1f} ms,"
              f" first after init {after_init[size] * 1000:6.1f} ms; pack {tokens[size]} tokens")
        print(f"  {'':>7} cold cache median of {COLD_SAMPLES} {cold[size] * 1000:6.1f} ms, the "
              f"repeat right after each {med(cold_then_warm[size]) * 1000:6.1f} ms")
    for name, samples in extra.items():
        print(f"  {name}: {med(samples) * 1000:.1f} ms (same run)")
    now_ms, before_ms, pinned = essentials_ms
    print(f"  essentials of the active run with {pinned:,} pinned preferences, in process, p50: "
          f"{now_ms:.1f} ms (ranked in SQL, read to the ceiling) against {before_ms:.1f} ms "
          f"reading every preference as before ({before_ms / now_ms:.1f}x, same run)")
    small, large = SIZES[0], SIZES[-1]
    growth = {
        "assembly": med(inproc[large]) / med(inproc[small]),
        "CLI repeat": med(repeat[large]) / med(repeat[small]),
        "CLI after new events": med(fresh[large]) / med(fresh[small]),
    }
    print(f"  growth {small:,} → {large:,} events: "
          + ", ".join(f"{name} {ratio:.2f}x" for name, ratio in growth.items())
          + f" (target < 1.5x: {'ok' if max(growth.values()) < 1.5 else 'MISSED'})")
    verdict = {name: "ok" if med(samples[large]) < 0.3 else "MISSED"
               for name, samples in (("assembly", inproc), ("CLI repeat", repeat),
                                     ("CLI after new events", fresh))}
    if dense is not None:
        added = dense[1] - dense[0]
        print(f"  dense signal at {large:,} events, in process, per query (p50 of "
              f"{len(DENSE_QUERIES)}): lexical {dense[0]:.1f} ms, with dense {dense[1]:.1f} ms "
              f"for a new question (+{added:.1f} ms; target +15 ms: "
              f"{'ok' if added <= 15 else 'MISSED'}), {dense[2]:.1f} ms asked again (its "
              f"kept ranking, +{dense[2] - dense[0]:.1f} ms); a new question without the "
              f"process's matrix {dense[3]:.1f} ms")
    print(f"  under 300 ms at {large:,}: "
          + ", ".join(f"{name} {v}" for name, v in verdict.items())
          + f"; cold cache (first command on a machine) "
            f"{'ok' if cold[large] < 0.3 else 'MISSED'}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
