"""Store sizes on disk and the write path's wall time, at 1,000 and 100,000 events.

The stores are the context benchmark's (bench_context.build_store: 20 runs, 10,000 memories,
200 skills, the events around them). Reported, from this one run: the size of the database
file (after a WAL checkpoint) and of the whole `.agentstate/` folder, what 1,000 events add
to the file (target ≤ 1.5 MB, issue 24) and which tables and indexes that growth goes to,
and the median wall time of `agentstate remember` (a new fact each time, through the write
gate) and of `agentstate log` (one event appended) as subprocesses, with `python -c pass`
alongside.
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
        sizes["(event text and meta)"] = conn.execute(
            "SELECT coalesce(sum(length(CAST(text AS BLOB)) + length(meta)), 0) FROM events"
        ).fetchone()[0]
    finally:
        conn.close()
    return sizes


# The context benchmark runs first on the same shared stores and stores a pack manifest per
# call: those tables measure how often it ran, not the events, so they are left out.
PACK_TABLES = ("packs", "pack_items", "packs_run", "pack_items_ref", "sqlite_autoindex_packs_1",
               "sqlite_autoindex_pack_items_1")


def _events_bytes(sizes: dict[str, int]) -> int:
    return sizes["(file)"] - sum(sizes.get(name, 0) for name in PACK_TABLES)


def _per_thousand(small: Path, large: Path, events: int) -> float:
    """What 1,000 more events add to the database file (the two stores differ only in
    their events: the same memories and skills; packs other benchmarks stored left out)."""
    return (_events_bytes(_db_bytes(large)) - _events_bytes(_db_bytes(small))) / events \
        * 1000 / 1e6


def _breakdown(small: Path, large: Path, events: int) -> None:
    """Where the added bytes go, per 1,000 events: each table and index that grew."""
    a, b = _db_bytes(small), _db_bytes(large)
    grown = sorted(((b[n] - a.get(n, 0), n) for n in b if b[n] - a.get(n, 0) > 0),
                   reverse=True)
    total = _events_bytes(b) - _events_bytes(a)
    for delta, name in grown:
        if name != "(file)" and name not in PACK_TABLES and delta * 1000 / events >= 5_000:
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
        small, large = SIZES
        per_1k = _per_thousand(paths[small], paths[large], large - small)
        print(f"  store per 1,000 events (({large:,} − {small:,}) events): {per_1k:.2f} MB, "
              f"target ≤ {PER_1K_TARGET_MB} MB: {verdict(per_1k <= PER_1K_TARGET_MB)}")
        _breakdown(paths[small], paths[large], large - small)
        for what in ("remember", "log"):
            ratio = statistics.median(walls[(what, large)]) / statistics.median(
                walls[(what, small)])
            print(f"  growth {small:,} → {large:,} events, {what}: {ratio:.2f}x")
