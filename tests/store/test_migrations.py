"""Named migrations: from a blank database and from every older prefix of the list."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import types

import pytest
import sqlite_utils

from agentstate.store.migrations import (
    all_migrations,
    applied_migrations,
    apply_migrations,
    pending_migrations,
    schema_version,
)

NAMES = [name for name, _ in all_migrations()]

# Every migration name that has shipped, in order. Stores record these names: an entry here
# may never be renamed, reordered or removed; new ones are appended to MIGRATION_ORDER.
SHIPPED = [
    "m001_runs_events",
    "m101_memories",
    "m102_event_search",
    "m103_trigram_vocab",
    "m201_skills_registry",
    "m301_packs",
    "m202_publish_journal",
    "m104_purged_history_hashes",
    "m002_events_run_kind_seq",
    "m105_stemmed_word_index",
    "m003_events_collected",
    "m401_shared_records",
    "m302_pack_item_notes",
    "m004_events_hook_keys",
    "m015_trigram_for_cjk_events",
    "m016_events_lean_indexes",
    "m020_event_vectors",
    "m030_eval_reports",
    "m031_memories_status_created",
    "m032_sync_change_counter",
    "m040_memory_vectors",
    "m041_scanned_texts",
    "m042_user_preferences",
    "m043_memory_changes",
    "m050_dense_queries",
    "m052_vector_changes",
    "m054_skill_changes",
]


def _schema(db: sqlite_utils.Database) -> list[tuple]:
    return sorted(
        (row[0], row[1], " ".join((row[2] or "").split()))
        for row in db.conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
    )


def _fresh(path) -> sqlite_utils.Database:
    return sqlite_utils.Database(sqlite3.connect(path, isolation_level=None))


@pytest.fixture(scope="module")
def reference_schema(tmp_path_factory):
    db = _fresh(tmp_path_factory.mktemp("ref") / "ref.db")
    apply_migrations(db)
    return _schema(db)


def test_shipped_names_keep_their_place():
    assert NAMES[: len(SHIPPED)] == SHIPPED


def test_a_later_migration_of_an_earlier_domain_applies_last_everywhere(tmp_path, monkeypatch):
    """A second runs migration that depends on a later domain's table (here `packs`) must
    run after it on a fresh store and on every upgraded one: order comes from one list, not
    from the domain that defines the function. (With per-domain lists joined runs-first, a
    fresh store applied such a migration before `packs` existed.)"""
    from agentstate.runs import run_tables as runs_schema
    from agentstate.store import migrations

    def m002_runs_probe(db):
        db.conn.execute("ALTER TABLE packs ADD COLUMN probe TEXT")

    monkeypatch.setattr(runs_schema, "m002_runs_probe", m002_runs_probe, raising=False)
    monkeypatch.setattr(migrations, "MIGRATION_ORDER",
                        (*migrations.MIGRATION_ORDER, ("m002_runs_probe", "runs")))
    names = [name for name, _ in migrations.all_migrations()]
    assert names == [*NAMES, "m002_runs_probe"]
    fresh = _fresh(tmp_path / "fresh.db")
    assert apply_migrations(fresh) == names
    expected = _schema(fresh)
    for upto in NAMES:
        db = _fresh(tmp_path / f"from-{upto}.db")
        apply_migrations(db, upto=upto)
        apply_migrations(db)
        assert applied_migrations(db) == names, upto
        assert _schema(db) == expected, upto


def test_names_are_unique_and_prefixed_by_domain():
    assert len(set(NAMES)) == len(NAMES)
    assert NAMES[0] == "m001_runs_events"
    for name in NAMES:
        assert name[0] == "m" and name[1:4].isdigit() and name[4] == "_", name


LAST_OF_THE_OLD_NAMING = "m004_events_hook_keys"
FIRST_NEW_NUMBER = 15  # the 14 migrations named before it; the sequence goes on from there
NEW_NAME = re.compile(r"^m0(\d\d)_[a-z0-9]+(?:_[a-z0-9]+)*$")


def new_name_problems(names: list[str]) -> list[str]:
    """What is wrong with the names appended after the last one of the old, per-domain
    numbering: each is `m0NN_<what>` with NN from 15 on, rising, so the names sort in the
    order the migrations run (docs/architecture.md, "A migration")."""
    after = names[names.index(LAST_OF_THE_OLD_NAMING) + 1:]
    problems = [f"{n}: not m0NN_<what>" for n in after if not NEW_NAME.match(n)]
    numbers = [int(m.group(1)) for n in after if (m := NEW_NAME.match(n))]
    if numbers and numbers[0] < FIRST_NEW_NUMBER:
        problems.append(f"{after[0]}: numbers start at {FIRST_NEW_NUMBER:03d}")
    problems += [f"{b}: does not sort after {a}" for a, b in zip(after, after[1:], strict=False)
                 if not a < b]
    return problems


# The shipped names up to the last of the old numbering: the made-up cases below are appended
# there, so they do not depend on which new migrations have shipped since.
OLD_NAMES = NAMES[:NAMES.index(LAST_OF_THE_OLD_NAMING) + 1]


def test_names_after_the_old_numbering_sort_in_run_order():
    assert new_name_problems(NAMES) == []
    assert new_name_problems([*OLD_NAMES, "m015_cost_ledger", "m020_retrieval_index"]) == []
    assert new_name_problems([*NAMES, "m099_a_later_one"]) == []


def test_a_name_out_of_run_order_is_caught():
    """The check itself can fail: a name that sorts before the one it runs after, one in the
    old per-domain numbering, and a number taken from the old range are all reported."""
    assert new_name_problems([*OLD_NAMES, "m016_b", "m015_a"]) == [
        "m015_a: does not sort after m016_b"]
    assert new_name_problems([*OLD_NAMES, "m105_more_memory"]) == [
        "m105_more_memory: not m0NN_<what>"]
    assert new_name_problems([*NAMES, "m010_too_early"]) == [
        f"m010_too_early: does not sort after {NAMES[-1]}"]
    assert new_name_problems([*OLD_NAMES, "m005_events_more"]) == [
        "m005_events_more: numbers start at 015"]


def test_blank_database_gets_every_migration(tmp_path, reference_schema):
    db = _fresh(tmp_path / "blank.db")
    assert schema_version(db) == "(blank)"
    assert apply_migrations(db) == NAMES
    assert applied_migrations(db) == NAMES and pending_migrations(db) == []
    assert schema_version(db) == NAMES[-1]
    assert apply_migrations(db) == []  # idempotent
    assert _schema(db) == reference_schema


@pytest.mark.parametrize("upto", NAMES)
def test_upgrade_from_every_older_prefix(tmp_path, reference_schema, upto):
    db = _fresh(tmp_path / "old.db")
    first = apply_migrations(db, upto=upto)
    assert first == NAMES[: NAMES.index(upto) + 1]
    # A store written by the older version holds data that must survive the upgrade.
    db.conn.execute("INSERT INTO runs (id, goal, status, created, updated) "
                    "VALUES ('abcd1234', 'old goal', 'active', 't', 't')")
    db.conn.execute("INSERT INTO events (id, run, seq, kind, text, source, ts) "
                    "VALUES ('evt00001', 'abcd1234', 1, 'note', 'kept', 'user', 't')")
    rest = apply_migrations(db)
    assert first + rest == NAMES
    assert _schema(db) == reference_schema
    assert db.conn.execute("SELECT text FROM events").fetchone()[0] == "kept"


def test_a_failing_migration_leaves_nothing_behind(tmp_path, monkeypatch):
    from agentstate.store import migrations

    def broken(db):
        db.conn.execute("CREATE TABLE half_done (x)")
        raise sqlite3.OperationalError("boom")

    # Looked up by name like a real one: a module holding it, and an entry naming it.
    holder = types.ModuleType("broken_migration_holder")
    holder.m999_broken = broken
    monkeypatch.setitem(sys.modules, holder.__name__, holder)
    monkeypatch.setitem(migrations.SCHEMA_MODULES, "broken", (holder.__name__,))
    monkeypatch.setattr(migrations, "MIGRATION_ORDER",
                        (*migrations.MIGRATION_ORDER, ("m999_broken", "broken")))
    db = _fresh(tmp_path / "x.db")
    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(db)
    assert "half_done" not in db.table_names()
    assert applied_migrations(db) == NAMES  # the good ones stay applied


def test_commands_upgrade_an_older_store(cli, initialised):
    db_path = initialised / ".agentstate" / "state.db"
    db = sqlite3.connect(db_path)
    names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    db.close()
    if len(names) < 2:
        pytest.skip("only one migration exists")
    # Roll the record back to the first migration's schema: drop what later ones made.
    fresh = tmp = initialised / "older.db"
    older = _fresh(tmp)
    apply_migrations(older, upto=names[0])
    older.conn.close()
    db_path.unlink()
    for extra in db_path.parent.glob("state.db-*"):
        extra.unlink()
    fresh.rename(db_path)
    cli.ok("run", "start", "goal on an upgraded store")
    assert applied_migrations(_fresh(db_path)) == NAMES


def test_opening_a_store_does_not_import_sqlite_utils(initialised):
    import subprocess
    import sys

    code = ("import sys; from agentstate.store.db import open_store; s = open_store(); "
            "s.conn.execute('SELECT count(*) FROM events').fetchone(); "
            "print('sqlite_utils' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=initialised, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_an_older_store_is_backed_up_before_its_first_use_migrates_it(cli, initialised):
    """A store made by an earlier version: the first command copies the database, then
    migrates; the copy is the old schema with the old data, and it is said on stderr."""
    db_path = initialised / ".agentstate" / "state.db"
    older = _fresh(initialised / "older.db")
    apply_migrations(older, upto="m001_runs_events")
    older.conn.execute("INSERT INTO runs (id, goal, status, created, updated) VALUES "
                       "('oldrun1', 'from the old version', 'active', '2025-01-01T00:00:00Z', "
                       "'2025-01-01T00:00:00Z')")
    older.conn.close()
    db_path.unlink()
    for extra in db_path.parent.glob("state.db-*"):
        extra.unlink()
    (initialised / "older.db").rename(db_path)
    result = cli.ok("run", "list")
    copy = db_path.parent / f"state.db-before-{NAMES[1]}"
    assert f"the database from before is kept at {copy}" in result.stderr
    assert "run:oldrun1" in result.stdout
    kept = sqlite3.connect(copy)
    assert [r[0] for r in kept.execute("SELECT name FROM _migrations")] == [NAMES[0]]
    assert kept.execute("SELECT goal FROM runs").fetchall() == [("from the old version",)]
    assert applied_migrations(_fresh(db_path)) == NAMES
    again = cli.ok("run", "list")
    assert "upgraded" not in again.stderr  # once
    ignored = subprocess.run(["git", "check-ignore", "-q", str(copy)], cwd=initialised)
    assert ignored.returncode == 0  # a local copy, never committed
