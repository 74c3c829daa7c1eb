"""Each table has one owning package; no other package names it in SQL.

The owner map mirrors the table in docs/architecture.md (a test compares them). A package that
needs another domain's rows calls a function of the owner (runs/lookups.py, memory/model.py,
skills/records.py …); the few modules allowed to name another domain's table are listed in
EXCEPTIONS, each with its reason, and an exception that is no longer needed fails too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import agentstate

PACKAGE = Path(agentstate.__file__).parent
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

OWNERS: dict[str, str] = {
    **dict.fromkeys(("runs", "events", "checkpoints", "kv", "events_batch"), "runs"),
    **dict.fromkeys((
        "memories", "memory_evidence", "memory_history", "memories_fts", "memories_tri",
        "memories_vocab", "memories_tri_vocab", "events_fts",
        "events_tri", "events_vocab", "events_tri_vocab", "event_vectors", "memory_vectors",
        "scanned_texts", "dense_queries", "vector_changes", "memory_changes", "vector_models",
    ), "memory"),
    **dict.fromkeys(("skill_versions", "skill_loads", "skill_tests", "skill_publish_journal",
                     "skill_changes"), "skills"),
    # Created by the skills migration m201 (shipped migrations never move), written and read
    # only by the one tool layer.
    "tool_calls": "tools",
    "packs": "context",  # its manifest in its `items` (m061 dropped `pack_items`)
    **dict.fromkeys(("shared_records", "sync_changes"), "sync"),
    "eval_reports": "evals",
    "_migrations": "store",
}

# (module, table) → why that module may name another domain's table.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("skills/skill_tables.py", "tool_calls"):
        "created by the skills migration m201, which shipped and is never edited; "
        "tools/runner.py holds every query on it",
    ("memory/memory_tables.py", "events"):
        "m105 refilled the event word index from the texts of `events` when it made the "
        "index stem words, in a shipped migration, which is never edited",
    ("memory/event_index_tables.py", "events"):
        "the event index's migrations (m102, m015, m057, m063) create the triggers on "
        "`events` that keep it in step, in shipped migrations, which are never edited; m063 "
        "rebuilt `events` with the row the index names",
    ("memory/event_index_tables.py", "events_batch"):
        "the event index waits while an import's batch is written and indexes it when the "
        "marker is deleted (m057): a trigger on the marker, so the index stays memory's",
    ("memory/search.py", "events"):
        "memory owns the event index and joins it to the rows it indexes in the same query; "
        "splitting the join would add a query per search",
    ("memory/query_plan.py", "events"):
        "a query's plan counts the texts of the event index (the rows it indexes) to tell a "
        "common term from a rare one",
    ("memory/dense_vectors.py", "events"):
        "the event vectors are computed from the texts of the rows they describe, read in "
        "the query that finds which rows have none yet",
    ("memory/indexes.py", "events"):
        "the event index's check and rebuild compare it with, and refill it from, the rows "
        "it indexes",
    ("memory/forget.py", "events"):
        "purge is the store-wide erasure: it rewrites a forgotten text wherever it is, "
        "including the memory's own source events",
}

# Whole packages that compose several domains on purpose (none names a table today; listed
# so that adding such code there is a decision, not an accident).
COMPOSERS = {
    "maintenance": "init, doctor and repair span every domain by design",
    "evals": "builds and measures temporary stores through the domains (it owns one table "
             "of its own, eval_reports, the kept reports)",
}

# SQL that names a table: after FROM/JOIN/INTO/UPDATE/TABLE, or an index's ON x(. Foreign
# keys (REFERENCES runs(id)) are left out: they declare a link, they do not read the table.
_TABLE_AFTER = re.compile(
    r"\b(?:from|join|into|update|table)\s+[\"'`]?([A-Za-z_][A-Za-z0-9_]*)"
    r"|\bon\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(",
    re.IGNORECASE,
)
# The tables SQLite creates behind an FTS5 index: they belong to the index's owner.
_FTS_SHADOWS = ("_data", "_idx", "_content", "_docsize", "_config")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _is_db(node: ast.expr) -> bool:
    """`db` or `something.db`: a sqlite_utils Database (a dict indexed by "events" is not)."""
    return (isinstance(node, ast.Name) and node.id == "db") or \
        (isinstance(node, ast.Attribute) and node.attr == "db")


def tables_named(source: str) -> set[str]:
    """The known tables a module's code names: in SQL string literals (docstrings and
    comments aside), through `store.insert("t", …)` and sqlite_utils' `db["t"]` /
    `db.table("t")`."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            for match in _TABLE_AFTER.finditer(node.value):
                name = (match.group(1) or match.group(2)).lower()
                if name in OWNERS:
                    found.add(name)
        elif isinstance(node, ast.Subscript) and _is_db(node.value) \
                and isinstance(node.slice, ast.Constant) and node.slice.value in OWNERS:
            found.add(str(node.slice.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("table", "insert") and node.args \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in OWNERS:
            found.add(str(node.args[0].value))
    return found


def cross_domain_names(root: Path = PACKAGE) -> dict[tuple[str, str], str]:
    """(module, table) → the table's owner, for every module naming a table its package does
    not own (composer packages left out)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        package = module.split("/")[0] if "/" in module else "(top)"
        if package in COMPOSERS:
            continue
        for table in tables_named(path.read_text(encoding="utf-8")):
            if OWNERS[table] != package:
                out[(module, table)] = OWNERS[table]
    return out


def test_no_module_names_a_table_another_domain_owns():
    found = cross_domain_names()
    unexplained = {k: v for k, v in found.items() if k not in EXCEPTIONS}
    assert unexplained == {}, (
        "these modules name another domain's table (call a function of the owner instead, "
        f"e.g. runs/lookups.py): {unexplained}")


def test_every_listed_exception_is_still_needed():
    stale = sorted(set(EXCEPTIONS) - set(cross_domain_names()))
    assert stale == [], f"exceptions no longer needed, remove them: {stale}"


def test_the_scan_sees_sql_and_the_table_api():
    code = '''
"""Docstrings may say they read FROM events."""
def f(store, ids):
    store.conn.execute("SELECT id FROM events "
                       f"WHERE run IN ({ids})")
    store.db["skill_loads"].insert({})
    hook["events"] = []  # a dict key, not a table
    store.db.table("packs").insert({})
    store.insert("checkpoints", {"id": 1})
    store.conn.execute("CREATE INDEX x ON memories(id)")
    return "from runs", "update kv"  # any string literal counts, prose included
'''
    assert tables_named(code) == {"events", "skill_loads", "packs", "memories", "runs", "kv",
                                  "checkpoints"}


def test_every_table_of_a_fresh_store_has_an_owner(store):
    names = {row[0] for row in store.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    shadows = {name for name in names
               if any(name == base + suffix for base in OWNERS for suffix in _FTS_SHADOWS)}
    assert names - shadows == set(OWNERS)


def test_the_architecture_page_lists_the_same_owners():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Who owns each table", 1)[1].split("\n## ", 1)[0]
    listed: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[1].startswith("`"):
            continue
        owner = re.match(r"`([a-z_]+)/", cells[1])
        assert owner, line
        for table in re.findall(r"`([a-z_]+)`", cells[0]):
            listed[table] = owner.group(1)
    assert listed == OWNERS


# Packages that own no table: they call domain functions and never touch the connection.
NO_TABLES = ("cli", "integrations", "maintenance", "web", "(top)")


def raw_database_uses(source: str) -> list[int]:
    """Lines where code reaches a store's connection (`store.conn`, `x.store.db`, …)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("conn", "db"):
            owner = node.value
            name = owner.id if isinstance(owner, ast.Name) else \
                owner.attr if isinstance(owner, ast.Attribute) else ""
            if name == "store":
                lines.append(node.lineno)
    return sorted(lines)


def test_packages_without_tables_never_reach_the_connection():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        package = module.split("/")[0] if "/" in module else "(top)"
        if package in NO_TABLES:
            lines = raw_database_uses(path.read_text(encoding="utf-8"))
            if lines:
                found[module] = lines
    assert found == {}, f"use a domain function (or a Store method) instead: {found}"


def test_the_connection_scan_sees_attribute_chains():
    assert raw_database_uses("store.conn.execute('x')\nself.store.db['t']\nconn.execute('y')\n"
                             "from agentstate.store.db import Store\n") == [1, 2]
