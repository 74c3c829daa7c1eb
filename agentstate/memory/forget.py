"""Forgetting: a tombstone by default, a purge on request.

- Tombstone: the versions become `forgotten` (out of every default read, `recall --include
  forgotten` still finds them) and the history keeps why. Reversible only by remembering again.
- Purge (`--purge`): the text is erased from the memory rows, from every other table that
  holds it (whole-value matches, and substrings for texts of PURGE_SUBSTRING_MIN characters
  or more — e.g. an event the memory was distilled from), and from every FTS5 index (the
  indexes are merged with 'optimize' so deleted entries leave the b-trees). Then the WAL is
  checkpointed and truncated, the file is VACUUMed with secure_delete on, and the WAL is
  truncated again, so the raw bytes of `state.db` and `state.db-wal` no longer contain it.
  The token-count cache (digests of counted texts) is emptied as well.
  An audit row per version keeps a hash of the text, the time and the reason.
Forgetting what is already forgotten (or purging what is already purged) is an error and
changes nothing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from agentstate.errors import InvalidInput, NotFound, Refused, UsageError
from agentstate.memory.model import chain_rows, record_history, resolve_principal
from agentstate.safety import refuse_secrets
from agentstate.store.refs import make_ref, parse_ref

PURGE_SUBSTRING_MIN = 12
PURGED_MARK = "[purged]"


@dataclass
class ForgetResult:
    targets: list[str]  # version refs that were (or would be) forgotten / purged
    dry_run: bool
    purge: bool
    reason: str
    skipped: list[str] = field(default_factory=list)  # already forgotten (tombstone mode)
    scrubbed: dict[str, int] = field(default_factory=dict)  # other table.column → rows
    # Other memories whose own text holds the purged text: a purge never rewrites another
    # memory, so the bytes stay in the file until they are forgotten too. Said, not hidden.
    still_in: list[str] = field(default_factory=list)
    vacuumed: bool = False
    wal_truncated: bool | None = None
    # The token-count cache keeps digests of counted texts (never the texts); a purge
    # empties it too, so not even a digest of the purged text is left to match a guess.
    token_cache_cleared: bool | None = None


def _select_targets(store: Any, ref: str | None, key: str | None, query: str | None,
                    scope: str | None, principal: str | None) -> list[dict]:
    chosen = [x for x in (ref, key, query) if x]
    if len(chosen) != 1:
        raise UsageError("name exactly one of: a memory ref, --key K or --query Q")
    if ref:
        parsed = parse_ref(ref, expect="mem")
        rows = chain_rows(store, parsed.id)
        if not rows:
            raise NotFound(f"no memory {make_ref('mem', parsed.id)}")
        if parsed.version is not None:
            rows = [r for r in rows if r["version"] == parsed.version]
            if not rows:
                raise NotFound(f"no memory {ref}")
        return rows
    if key:
        sql, params = "SELECT DISTINCT id FROM memories WHERE key = ?", [key]
        if scope:
            sql += " AND scope = ?"
            params.append(scope)
        ids = [r[0] for r in store.conn.execute(sql, params)]
        if not ids:
            raise NotFound(f"no memory with key {key!r}" + (f" in scope {scope}" if scope else ""))
        return [row for memory_id in ids for row in chain_rows(store, memory_id)]
    from agentstate.memory.recall import recall

    hits = recall(store, query or "", limit=50, principal=principal,
                  scopes=[scope] if scope else None)
    if not hits.hits:
        raise NotFound(f"no current memory matches {query!r}")
    ids = list(dict.fromkeys(h.id for h in hits.hits))
    return [row for memory_id in ids for row in chain_rows(store, memory_id)]


def forget(
    store: Any,
    ref: str | None = None,
    *,
    key: str | None = None,
    query: str | None = None,
    scope: str | None = None,
    reason: str | None = None,
    dry_run: bool = False,
    purge: bool = False,
    principal: str | None = None,
) -> ForgetResult:
    """Tombstone (default) or purge the memories named by a ref, a key or a query."""
    for what, value in (("the reason", reason), ("the key", key), ("the query", query)):
        if value:
            refuse_secrets(value, what)  # before any message could echo it
    why = (reason or "").strip() or ("purged on request" if purge else "forgotten on request")
    who = resolve_principal(store, principal)
    rows = _select_targets(store, ref, key, query, scope, principal)
    denied = sorted({r["scope"] for r in rows if not who.can_write(r["scope"])})
    if denied:
        raise Refused(f"principal {who.name!r} may not write scope(s) {', '.join(denied)}")
    if purge:
        todo = [r for r in rows if not r["purged"]]
        if not todo:
            raise InvalidInput("already purged: " + ", ".join(_refs(rows)) + "; nothing changed")
    else:
        todo = [r for r in rows if r["status"] != "forgotten"]
        if not todo:
            raise InvalidInput("already forgotten: " + ", ".join(_refs(rows)) +
                               "; nothing changed (use --purge to erase the text)")
    result = ForgetResult(targets=_refs(todo), dry_run=dry_run, purge=purge, reason=why,
                          skipped=[r for r in _refs(rows) if r not in _refs(todo)])
    if purge:
        texts = _purge_texts(todo)
        result.still_in = _other_memories_holding(store.conn, texts, rows)
        if dry_run:
            result.scrubbed = _scrub_elsewhere(store.conn, texts, count_only=True)
    if dry_run:
        return result
    if purge:
        _purge(store, todo, why, who.name, result)
    else:
        with store.transaction() as conn:
            for row in todo:
                conn.execute(
                    "UPDATE memories SET prior_status = status, status = 'forgotten', "
                    "status_reason = ? WHERE row = ?",
                    (f"forgotten: {why}", row["row"]),
                )
                record_history(store, row["id"], row["version"], "forget", who.name, why,
                               row["text"], prior_status=row["status"])
                if row["status"] == "contested":
                    _contest_rejected(store, row, who.name)
    return result


def _contest_rejected(store: Any, row: dict, actor: str) -> None:
    """Forgetting a contested version rejects the contradiction: the current version gets
    back the confidence the contest took from it."""
    from agentstate.memory.versions import CURRENT_CONTEST_FACTOR, bounded

    for other in chain_rows(store, row["id"]):
        if other["status"] == "active" and other["row"] != row["row"]:
            restored = bounded(other["confidence"] / CURRENT_CONTEST_FACTOR)
            store.conn.execute("UPDATE memories SET confidence = ? WHERE row = ?",
                               (restored, other["row"]))
            record_history(store, other["id"], other["version"], "contest_rejected", actor,
                           f"contest by {make_ref('mem', row['id'], row['version'])} rejected;"
                           " confidence restored", None)


def _refs(rows: list[dict]) -> list[str]:
    return [make_ref("mem", r["id"], r["version"]) for r in rows]


def _purge(store: Any, rows: list[dict], why: str, actor: str, result: ForgetResult) -> None:
    conn = store.conn
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
    texts = _purge_texts(rows)
    with store.transaction():
        for row in rows:
            conn.execute(
                "UPDATE memories SET text = '', norm_hash = ?, prior_status = COALESCE("
                "prior_status, status), status = 'forgotten', status_reason = ?, purged = 1 "
                "WHERE row = ?",
                (f"purged:{row['row']}", f"purged: {why}", row["row"]),
            )
            record_history(store, row["id"], row["version"], "purge", actor, why, row["text"],
                           prior_status=row["status"])
        result.scrubbed = _scrub_elsewhere(conn, texts)
    from agentstate.memory.search import optimize_indexes

    # Merge only the indexes that saw deletions: on a large store 'optimize' rewrites the
    # whole index, so the event indexes are left alone unless event text was scrubbed.
    touched = {name.split(".", 1)[0] for name in result.scrubbed}
    names = ["memories_fts", "memories_tri"]
    if "events" in touched:
        names += ["events_fts", "events_tri"]
    with store.transaction():
        optimize_indexes(conn, None if touched - {"events"} else names)
    result.wal_truncated = _compact(conn)
    result.vacuumed = True
    from agentstate.tokens import forget_counts

    try:
        forget_counts()
        result.token_cache_cleared = True
    except (OSError, sqlite3.Error):
        result.token_cache_cleared = False


def _fts_shadow_prefixes(conn: sqlite3.Connection) -> list[str]:
    return [
        row[0] + "_"
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    ]


def _purge_texts(rows: list[dict]) -> list[str]:
    return sorted({r["text"] for r in rows if r["text"]}, key=len, reverse=True)


def _other_memories_holding(conn: sqlite3.Connection, texts: list[str],
                            rows: list[dict]) -> list[str]:
    """Versions outside `rows` whose text is, or (long texts) contains, a purged text."""
    skip = {r["row"] for r in rows}
    found: dict[int, str] = {}
    for text in texts:
        if len(text) >= PURGE_SUBSTRING_MIN:
            sql, arg = "SELECT row, id, version FROM memories WHERE instr(text, ?) > 0", text
        else:
            sql, arg = "SELECT row, id, version FROM memories WHERE text = ?", text
        for row, memory_id, version in conn.execute(sql, (arg,)):
            if row not in skip:
                found[row] = make_ref("mem", memory_id, version)
    return sorted(found.values())


def _scrub_elsewhere(conn: sqlite3.Connection, texts: list[str],
                     count_only: bool = False) -> dict[str, int]:
    """Replace the purged text in every other ordinary table's text columns (or, with
    `count_only`, count the rows a purge would change, for --dry-run)."""
    if not texts:
        return {}
    shadows = _fts_shadow_prefixes(conn)
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
        if row[0] not in ("memories", "memory_history", "memory_evidence", "_migrations")
        and not any(row[0].startswith(p) for p in shadows)
    ]
    scrubbed: dict[str, int] = {}
    for table in tables:
        columns = [
            c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')
            if "TEXT" in (c[2] or "").upper() or not c[2]
        ]
        for column in columns:
            for text in texts:
                if count_only:
                    test = (f'instr("{column}", ?) > 0' if len(text) >= PURGE_SUBSTRING_MIN
                            else f'"{column}" = ?')
                    n = conn.execute(f'SELECT count(*) FROM "{table}" WHERE {test}',
                                     (text,)).fetchone()[0]
                    if n:
                        name = f"{table}.{column}"
                        scrubbed[name] = scrubbed.get(name, 0) + n
                    continue
                if len(text) >= PURGE_SUBSTRING_MIN:
                    cursor = conn.execute(
                        f'UPDATE "{table}" SET "{column}" = replace("{column}", ?, ?) '
                        f'WHERE instr("{column}", ?) > 0',
                        (text, PURGED_MARK, text),
                    )
                else:
                    cursor = conn.execute(
                        f'UPDATE "{table}" SET "{column}" = ? WHERE "{column}" = ?',
                        (PURGED_MARK, text),
                    )
                if cursor.rowcount:
                    name = f"{table}.{column}"
                    scrubbed[name] = scrubbed.get(name, 0) + cursor.rowcount
    return scrubbed


def _compact(conn: sqlite3.Connection) -> bool:
    """Checkpoint + truncate the WAL, VACUUM, and truncate again. False when another
    connection kept the WAL from being fully checkpointed (its old frames may remain until
    that reader finishes)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return busy == 0
