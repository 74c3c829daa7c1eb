"""`agentstate sync`: export and import time for 10,000 memories and 1,000 tombstones, and
the size of the shared folder.

Store A holds 11,000 repo-scope facts (a third of them in keyed chains of two versions),
each with evidence. Measured through the Python API (`agentstate.sync.sync`), one run each:
the first export (11,000 memory records), an export with nothing new (what every `sync`
pays), the export of 1,000 tombstones after A forgets 1,000 facts; then store B's import of
A's first folder (11,000 new versions), of the tombstones (1,000 forgets applied) and a
repeated import with nothing new (what the post-merge hook pays on each pull).

Floors from the same run (issue 24: export and import within 1.5x of a copy of the same
data): for the export, a plain script that selects the same versions and writes them as JSON
lines; for the import, inserting the same rows into a fresh store's memories and evidence
tables (their triggers and indexes on), one statement a table. Last, `agentstate sync`
with nothing new as a whole process (target ≤ 0.2 s: a stored digest says nothing
changed), next to `python -c pass`.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from agentstate.store.principals import resolve_principal
from bench.data import REPEATS, python_floor, scaled, verdict, wall

MEMORIES = scaled(10_000, 200)
TOMBSTONES = scaled(1_000, 20)
RATIO_TARGET = 1.5
NOOP_TARGET_S = 0.2


def _store(path: Path):
    from agentstate.store.clock import Clock, IdSource
    from agentstate.store.db import open_store
    from agentstate.store.init import create_store

    path.mkdir(parents=True)
    create_store(target=path)  # no skills registry: sync never reads it
    # Random ids as the command line makes them: a seeded source draws each character
    # through `random.choice`, ~30 µs an id that no real import pays.
    return open_store(path / ".agentstate", clock=Clock(datetime(2026, 1, 15, tzinfo=UTC)),
                      ids=IdSource())


def _fill(store, count: int) -> None:
    """Facts as `remember` stores them: each text passes the secret scanner when written
    (`scanned=True` keeps that, as the write gate does), so the export need not scan it
    again; the scan's cost belongs to the write, not to the export."""
    from agentstate.memory.versions import insert_version
    from agentstate.safety import refuse_secrets

    with store.transaction():
        for n in range(count):
            key = f"setting-{n}" if n % 3 == 0 else None
            memory_id = f"bench{n:05d}"
            text = f"service {n} listens on port {10000 + n} behind the gateway of zone {n % 17}"
            refuse_secrets(text, "the memory text")
            insert_version(store, memory_id=memory_id, version=1, kind="fact", key=key,
                           scope="repo", text=text, source="user",
                           status="superseded" if key else "active", confidence=0.9,
                           valid_until=None, supersedes=None, principal="owner",
                           reason="bench", evidence=[("user", "user")], scanned=True)
            if key:
                text = f"service {n} listens on port {20000 + n}"
                refuse_secrets(text, "the memory text")
                insert_version(store, memory_id=memory_id, version=2, kind="fact", key=key,
                               scope="repo", text=text, source="user", status="active",
                               confidence=0.9, valid_until=None, supersedes=1,
                               principal="owner", reason="bench",
                               evidence=[("user", "user")], scanned=True)


def _timed(label: str, action):
    start = time.perf_counter()
    result = action()
    took = time.perf_counter() - start
    return result, took, label


def export_floor(store, out: Path) -> float:
    """Select the versions and their evidence and write each as one JSON line: what any
    export must do at least."""
    import json

    start = time.perf_counter()
    rows = store.conn.execute(
        "SELECT m.id, m.version, m.kind, m.key, m.scope, m.text, m.source, m.principal, "
        "m.created, m.valid_until, m.supersedes, group_concat(e.ref) FROM memories m "
        "LEFT JOIN memory_evidence e ON e.memory_row = m.row GROUP BY m.row").fetchall()
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, separators=(",", ":")) + "\n")
    return time.perf_counter() - start


def export_copy_floor(store, folder: Path) -> float:
    """A copy of what the export writes, without the export's own work: SQLite spells one
    line per version with the shared record's fields and one per evidence ref (as the export
    has it spell a body; an id of the same length, the row's number, where the export hashes
    the line), Python writes them to the two files, and one row per version goes into
    `shared_records` with its indexes and trigger by one INSERT ... SELECT (rolled back
    after). No id hashed, no sort, no check. Printed beside the floor above (2026-12-03:
    that floor writes 37% of the export's bytes, in one file, and no row), not used for the
    verdict."""
    conn = store.conn
    start = time.perf_counter()
    memories = conn.execute(
        "SELECT json_object('created', created, 'held', NULL, 'id', printf('%032x', row), "
        "'key', key, 'kind', kind, 'parent', NULL, 'principal', principal, 'rel', NULL, "
        "'scope', scope, 'source', source, 'text', text, 'type', 'memory', 'v', 1, "
        "'valid_until', valid_until) FROM memories").fetchall()
    refs = conn.execute(
        "SELECT json_object('id', printf('%032x', rowid), 'memory', printf('%032x', "
        "memory_row), 'ref', ref, 'type', 'evidence', 'v', 1) FROM memory_evidence").fetchall()
    for name, lines in (("memories.jsonl", memories), ("evidence.jsonl", refs)):
        (folder / name).write_bytes(("\n".join(line for (line,) in lines) + "\n").encode())
    conn.execute("SAVEPOINT copy_floor")
    conn.execute("INSERT INTO shared_records (record_id, memory, version, origin, rel) "
                 "SELECT printf('%032x', row), id, version, 'export', NULL FROM memories")
    took = time.perf_counter() - start
    conn.execute("ROLLBACK TO copy_floor")
    conn.execute("RELEASE copy_floor")
    return took


def import_floor(source, target, *, staged: bool = True) -> float:
    """Insert the same version rows and their evidence rows into a fresh store (triggers and
    indexes on): what any import of the folder's memory and evidence records must do at
    least. `staged`: each table's rows bound into a temporary table and inserted by one
    INSERT ... SELECT, as the import writes its batch. Until 2026-12-03 the floor inserted
    a statement a row, and FTS5 writes a segment at each statement's savepoint: that floor
    took ~4x this one, most of it the merging of those segments (docs/development.md,
    "The import's versions in one statement"); it is printed beside this one."""
    columns = ("id, version, kind, key, scope, text, norm_hash, source, status, confidence, "
               "valid_until, created, last_confirmed, evidence_count, supersedes, principal, "
               "status_reason")
    rows = source.conn.execute(f"SELECT {columns} FROM memories").fetchall()
    refs = source.conn.execute(
        "SELECT e.ref, e.kind, e.added, e.actor, m.id, m.version FROM memory_evidence e "
        "JOIN memories m ON m.row = e.memory_row").fetchall()
    marks = ", ".join("?" * len(columns.split(",")))
    start = time.perf_counter()
    with target.transaction() as conn:
        if not staged:
            conn.executemany(f"INSERT INTO memories ({columns}) VALUES ({marks})", rows)
            conn.executemany("INSERT INTO memory_evidence (memory_row, ref, kind, added, "
                             "actor) SELECT row, ?, ?, ?, ? FROM memories WHERE id = ? AND "
                             "version = ?", refs)
        else:
            conn.execute(f"CREATE TEMP TABLE floor_versions ({columns})")
            conn.execute("CREATE TEMP TABLE floor_evidence (ref, kind, added, actor, id, "
                         "version)")
            conn.executemany(f"INSERT INTO temp.floor_versions VALUES ({marks})", rows)
            conn.execute(f"INSERT INTO memories ({columns}) SELECT {columns} FROM "
                         "temp.floor_versions ORDER BY rowid")
            conn.executemany("INSERT INTO temp.floor_evidence VALUES (?, ?, ?, ?, ?, ?)", refs)
            conn.execute("INSERT INTO memory_evidence (memory_row, ref, kind, added, actor) "
                         "SELECT m.row, e.ref, e.kind, e.added, e.actor FROM "
                         "temp.floor_evidence e JOIN memories m ON m.id = e.id AND "
                         "m.version = e.version ORDER BY e.rowid")
            conn.execute("DROP TABLE temp.floor_versions")
            conn.execute("DROP TABLE temp.floor_evidence")
    return time.perf_counter() - start


def main() -> None:
    import sys

    from agentstate.sync import shared_path, sync

    with tempfile.TemporaryDirectory(prefix="agentstate-bench-sync-") as tmp:
        a = _store(Path(tmp) / "a")
        count = MEMORIES + TOMBSTONES
        _fill(a, count)
        versions = a.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        print(f"  store A: {count:,} facts, {versions:,} versions (keyed chains of two)")
        rows = []
        floors = {"export": export_floor(a, Path(tmp) / "floor.jsonl")}
        (Path(tmp) / "copy").mkdir()
        copy_floor = export_copy_floor(a, Path(tmp) / "copy")
        first, took, label = _timed("export, first (all records)",
                                    lambda: sync(a, do_import=False,
                                                 principal=resolve_principal(a)))
        rows.append((label, took, f"{first.exported:,} memory + "
                                  f"{first.exported_evidence:,} evidence records"))
        ratios = {"export": took / floors["export"]}
        folder = shared_path(a)
        sizes = {p.name: p.stat().st_size for p in sorted(folder.glob("*.jsonl"))}
        snapshot = {name: (folder / name).read_bytes() for name in sizes}
        _, took, label = _timed("export, nothing new", lambda: sync(a, do_import=False,
                                                                    principal=resolve_principal(a)))
        rows.append((label, took, ""))
        from agentstate.memory.forget import forget

        with a.transaction():
            for n in range(TOMBSTONES):
                forget(a, f"mem:bench{n:05d}", reason="bench", principal=resolve_principal(a))
        tombs, took, label = _timed(f"export, {TOMBSTONES:,} tombstones",
                                    lambda: sync(a, do_import=False,
                                                 principal=resolve_principal(a)))
        rows.append((label, took, f"{tombs.exported_tombstones:,} tombstone records"))
        after = {p.name: p.stat().st_size for p in sorted(folder.glob("*.jsonl"))}

        b = _store(Path(tmp) / "b")
        b_folder = shared_path(b)
        b_folder.mkdir(parents=True)
        for name, data in snapshot.items():
            (b_folder / name).write_bytes(data)
        floor_store = _store(Path(tmp) / "floor")
        floors["import"] = import_floor(a, floor_store)
        floor_store.close()
        floor_store = _store(Path(tmp) / "floor-per-row")
        per_row_floor = import_floor(a, floor_store, staged=False)
        floor_store.close()
        got, took, label = _timed("import, first (new versions)",
                                  lambda: sync(b, do_export=False, principal=resolve_principal(b)))
        rows.append((label, took, f"{got.imported:,} versions imported"))
        ratios["import"] = took / floors["import"]
        for name in after:
            (b_folder / name).write_bytes((folder / name).read_bytes())
        got, took, label = _timed(f"import, {TOMBSTONES:,} tombstones",
                                  lambda: sync(b, do_export=False, principal=resolve_principal(b)))
        rows.append((label, took, f"{got.tombstoned:,} versions forgotten"))
        _, took, label = _timed("import, nothing new (each pull)",
                                lambda: sync(b, do_export=False, principal=resolve_principal(b)))
        rows.append((label, took, ""))
        for label, took, note in rows:
            print(f"  {label:<34} {took:>7.2f} s  {note}")
        total = sum(after.values())
        print(f"  shared folder: {total / 1e6:.2f} MB "
              + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in after.items())
              + f" ({total / versions:.0f} bytes a version)")
        # The same with the digest: one full sync that finds nothing to do keeps it, the
        # next one compares it and stops (in process, the domain work alone).
        sync(a, principal=resolve_principal(a))
        _, idle, _ = _timed("sync", lambda: sync(a, principal=resolve_principal(a)))
        print(f"  sync, nothing new, after the digest is kept (in process): {idle:.3f} s "
              f"(export + import with nothing new above: {rows[1][1] + rows[-1][1]:.2f} s)")
        for what, ratio in ratios.items():
            print(f"  {what} / its floor ({floors[what]:.2f} s, same run): {ratio:.1f}x "
                  f"(target ≤ {RATIO_TARGET}x: {verdict(ratio <= RATIO_TARGET)})")
        print(f"  export / a copy of its lines and rows ({copy_floor:.2f} s, same run): "
              f"{ratios['export'] * floors['export'] / copy_floor:.1f}x")
        print(f"  import / the floor of earlier runs, a statement a row ({per_row_floor:.2f} "
              f"s): {ratios['import'] * floors['import'] / per_row_floor:.1f}x")
        a.close()
        b.close()
        # The whole command with nothing new: the first run finds nothing to do and keeps
        # the digest; the next ones only compare it.
        cli = [sys.executable, "-m", "agentstate", "sync", "--json"]
        wall(cli, cwd=Path(tmp) / "a")
        noop = sorted(wall(cli, cwd=Path(tmp) / "a") for _ in range(REPEATS))[len(
            range(REPEATS)) // 2]
        base = python_floor()
        print(f"  `agentstate sync` with nothing new: {noop * 1000:.0f} ms = {noop / base:.1f}x "
              f"python -c pass ({base * 1000:.0f} ms) (target ≤ {NOOP_TARGET_S * 1000:.0f} ms: "
              f"{verdict(noop <= NOOP_TARGET_S)})")


if __name__ == "__main__":
    main()
