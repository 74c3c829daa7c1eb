"""Store sizes on disk and the write path's wall time, at 1,000 and 100,000 events.

The stores are the context benchmark's (bench_context.build_store: 20 runs, 10,000 memories,
200 skills, the events around them). Reported, from this one run: the size of the database
file (after a WAL checkpoint) and of the whole `.agentstate/` folder, what 1,000 events add
to the file (target ≤ 1.5 MB, issue 24) and which tables and indexes that growth goes to,
and the median wall time of `agentstate remember` (a new fact each time, through the write
gate) and of `agentstate log` (one event appended) as subprocesses, with `python -c pass`
alongside.

The growth is reported both ways, whatever ran before on the shared stores: lexical only (the
vector tables left out) and, when the `dense` extra is installed, with every event and memory
of both stores embedded first, as a store with the extra ends up after its first searches
(the context bench embeds only its largest store, so the file alone would say which
benchmarks ran before). The verdict is on the figure with vectors when the extra is there.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bench.bench_context import SIZES as CONTEXT_SIZES
from bench.bench_context import _cli, _python, build_store
from bench.data import SMOKE, scaled, verdict

# The growth per 1,000 events needs two sizes, also in smoke mode (where the context bench
# runs one); in a full run these are the context bench's stores, built once and shared.
SIZES = CONTEXT_SIZES if not SMOKE else (50, 200)

REPEATS = scaled(7, 1)
PER_1K_TARGET_MB = 1.5  # issue 24: a store near its content


def _db_bytes(repo: Path) -> dict[str, int]:
    """Bytes per table and index of a store's database (SQLite's dbstat), and the total."""
    import sqlite3

    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes = dict(conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"))
        sizes["(file)"] = conn.execute("PRAGMA page_count").fetchone()[0] * \
            conn.execute("PRAGMA page_size").fetchone()[0]
        sizes["(page size)"] = conn.execute("PRAGMA page_size").fetchone()[0]
        sizes["(event text and meta)"] = conn.execute(
            "SELECT coalesce(sum(length(CAST(text AS BLOB)) + length(meta)), 0) FROM events"
        ).fetchone()[0]
    finally:
        conn.close()
    return sizes


# The context benchmark runs first on the same shared stores and stores a pack manifest per
# call: those tables measure how often it ran, not the events, so they are left out.
PACK_TABLES = ("packs", "packs_run", "sqlite_autoindex_packs_1")


# The kept query vectors and rankings (memory/dense_queries.py) count the questions other
# benchmarks asked, like the packs.
QUERY_TABLES = ("dense_queries", "dense_queries_ranked", "sqlite_autoindex_dense_queries_1")
# What the dense signal stores per text: left out of the lexical figure.
VECTOR_PREFIXES = ("event_vectors", "memory_vectors", "vector_models", "vector_changes",
                   "sqlite_autoindex_event_vectors", "sqlite_autoindex_memory_vectors",
                   "sqlite_autoindex_vector_models", "sqlite_autoindex_vector_changes")


def _left_out(name: str, lexical: bool) -> bool:
    return name in PACK_TABLES or name in QUERY_TABLES or (
        lexical and name.startswith(VECTOR_PREFIXES))


def _events_bytes(sizes: dict[str, int], lexical: bool = False) -> int:
    return sizes["(file)"] - sum(n for name, n in sizes.items()
                                 if not name.startswith("(") and _left_out(name, lexical))


def _per_thousand(small: dict[str, int], large: dict[str, int], events: int,
                  lexical: bool = False) -> float:
    """What 1,000 more events add to the database file (the two stores differ only in
    their events: the same memories and skills; packs and kept queries other benchmarks
    stored left out; with `lexical`, the vector tables too)."""
    return (_events_bytes(large, lexical) - _events_bytes(small, lexical)) / events \
        * 1000 / 1e6


def _embed_all(paths: list[Path]) -> str | None:
    """Every event and memory version of each store embedded with the installed model
    (what a store with the `dense` extra holds after its first searches); the model's name,
    or None without the extra."""
    from agentstate.memory import dense, dense_model, dense_vectors
    from agentstate.store.db import open_store

    embedder = dense_model.load_embedder()
    if embedder is None:
        return None
    for path in paths:
        store = open_store(start=path)
        try:
            for kind in (dense_vectors.EVENTS, dense_vectors.MEMORIES):
                while dense.ensure_vectors(store, embedder, limit=20_000, kind=kind):
                    pass
        finally:
            store.close()
    return embedder.model


def _breakdown(a: dict[str, int], b: dict[str, int], events: int) -> None:
    """Where the added bytes go, per 1,000 events: each table and index that grew."""
    grown = sorted(((b[n] - a.get(n, 0), n) for n in b if b[n] - a.get(n, 0) > 0),
                   reverse=True)
    total = _events_bytes(b) - _events_bytes(a)
    for delta, name in grown:
        if name != "(file)" and not _left_out(name, False) and delta * 1000 / events >= 5_000:
            share = f"{delta / total:.0%} of the growth" if not name.startswith("(") else \
                "the content itself"
            print(f"    {name:<36} {delta / events * 1000 / 1e6:6.3f} MB per 1,000 events "
                  f"({share})")


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="agentstate-bench-store-") as tmp:
        paths = {}
        for size in SIZES:
            start = time.perf_counter()
            paths[size] = build_store(Path(tmp) / f"s{size}", size)
            print(f"  built {size:,} events in {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        model = _embed_all(list(paths.values()))
        print(f"  embedded every event and memory with {model} in "
              f"{time.perf_counter() - start:.1f} s" if model else
              "  not embedded: the dense extra is not installed (lexical figure only)")
        walls: dict[tuple[str, int], list[float]] = {}
        python = []
        for n in range(REPEATS):   # sizes and commands alternate: noise hits both alike
            python.append(_python())
            for size in SIZES:
                walls.setdefault(("remember", size), []).append(_cli(paths[size], [
                    "remember", f"the nightly job number {n} runs at 0{n}:15", "--kind",
                    "fact", "--key", f"nightly-{n}"]))
                walls.setdefault(("log", size), []).append(_cli(paths[size], [
                    "log", "observation", f"benchmark note {n}: nothing to see"]))
        print(f"  python -c pass: {statistics.median(python) * 1000:.1f} ms (same run)")
        print(f"  {'events':>8} {'db file':>10} {'.agentstate/':>13} {'remember p50':>13} "
              f"{'log p50':>9}")
        for size in SIZES:
            store = paths[size] / ".agentstate"
            db = store / "state.db"
            db_size = db.stat().st_size if db.exists() else 0
            print(f"  {size:>8,} {db_size / 1e6:>8.1f} MB {folder_size(store) / 1e6:>10.1f} MB "
                  f"{statistics.median(walls[('remember', size)]) * 1000:>10.1f} ms "
                  f"{statistics.median(walls[('log', size)]) * 1000:>6.1f} ms")
        _report_growth(paths, model)
        small, large = SIZES
        for what in ("remember", "log"):
            ratio = statistics.median(walls[(what, large)]) / statistics.median(
                walls[(what, small)])
            print(f"  growth {small:,} → {large:,} events, {what}: {ratio:.2f}x")


def _report_growth(paths: dict[int, Path], model: str | None) -> None:
    """The growth per 1,000 events, lexical only and with vectors (the verdict on the
    latter where the extra is installed), and where the bytes go."""
    small, large = SIZES
    a, b = _db_bytes(paths[small]), _db_bytes(paths[large])
    events = large - small
    lexical = _per_thousand(a, b, events, lexical=True)
    target = f"target ≤ {PER_1K_TARGET_MB} MB: "
    span = f"(({large:,} − {small:,}) events, pages of {b['(page size)']:,} bytes)"
    if model is None:
        print(f"  store per 1,000 events {span}, lexical only (no dense extra): "
              f"{lexical:.2f} MB, {target}{verdict(lexical <= PER_1K_TARGET_MB)}")
    else:
        full = _per_thousand(a, b, events)
        # Three places: the figure has sat within 0.02 MB of its target.
        print(f"  lexical only (vector tables left out): {lexical:.3f} MB per 1,000 events")
        print(f"  store per 1,000 events {span}, every event embedded: {full:.3f} MB, "
              f"{target}{verdict(full <= PER_1K_TARGET_MB)}")
    _breakdown(a, b, events)
