"""Forgetting: a tombstone by default, a purge on request.

- Tombstone: the versions become `forgotten` (out of every default read, `recall --include
  forgotten` still finds them) and the history keeps why. Reversible only by remembering again.
- Purge (`--purge`): the text — matched ignoring case and whitespace
  (agentstate.store.residue) — is erased from the memory rows, from every other table that
  holds it (whole-value matches, and substrings for texts of PURGE_SUBSTRING_MIN characters
  or more — e.g. an event the memory was distilled from; any length in the events the memory
  cites as source or evidence), from skill drafts and logs under `.agentstate/`, and from
  every FTS5 index (merged with 'optimize' so deleted entries leave the b-trees). Then the
  WAL is checkpointed and truncated, the file is VACUUMed with secure_delete on, and the WAL
  is truncated again, so the raw bytes of `state.db` and `state.db-wal` no longer contain it.
  The token-count cache (digests of counted texts) is emptied as well. What remains (other
  memories, short-text mentions, git objects of the skills registry, exports, config.toml)
  is listed in `still_in`, with the git command that rewrites the registry's history.
  An audit row per version keeps a keyed hash of the text, the time and the reason.
  Purging what the user stated is the owner-only action `purge`; forgetting it at all takes
  a principal that may speak as the user (not the agent).
Forgetting what is already forgotten (or purging what is already purged) is an error and
changes nothing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.errors import InvalidInput, NotFound, Refused, UsageError
from agentstate.memory.history import record_history
from agentstate.memory.model import MemoryVersion, acting, chain_rows, with_evidence_refs
from agentstate.memory.status import MemoryStatus
from agentstate.safety import refuse_secrets
from agentstate.store import residue
from agentstate.store.limits import MAX_REASON_CHARS, check_length
from agentstate.store.principals import Principal
from agentstate.store.refs import make_ref, parse_ref
from agentstate.store.residue import Matcher

if TYPE_CHECKING:
    from agentstate.store.db import Store

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
    files_scrubbed: list[str] = field(default_factory=list)  # under .agentstate/
    # The plain-git command that rewrites the skills registry's history (shown when its
    # objects hold the text; it never contains the text).
    rewrite_command: str | None = None


def _select_targets(store: Store, ref: str | None, key: str | None, query: str | None,
                    scope: str | None, principal: Principal | str) -> list[MemoryVersion]:
    chosen = [x for x in (ref, key, query) if x]
    if len(chosen) != 1:
        raise UsageError("name exactly one of: a memory ref, --key K or --query Q")
    if ref:
        parsed = parse_ref(ref, expect="mem")
        rows = chain_rows(store, parsed.id)
        if not rows:
            raise NotFound(f"no memory {make_ref('mem', parsed.id)}")
        if parsed.version is not None:
            rows = [r for r in rows if r.version == parsed.version]
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

    # Lexical only: what a forget by query removes must say the words it was given, never
    # something merely near them in meaning.
    hits = recall(store, query or "", limit=50, principal=principal,
                  scopes=[scope] if scope else None, dense=False)
    if not hits.hits:
        raise NotFound(f"no current memory matches {query!r}")
    ids = list(dict.fromkeys(h.id for h in hits.hits))
    return [row for memory_id in ids for row in chain_rows(store, memory_id)]


def forget(
    store: Store,
    ref: str | None = None,
    *,
    key: str | None = None,
    query: str | None = None,
    scope: str | None = None,
    reason: str | None = None,
    dry_run: bool = False,
    purge: bool = False,
    principal: Principal | str,
    export_dirs: Sequence[Path] = (),
    compact: bool = True,
) -> ForgetResult:
    """Tombstone (default) or purge the memories named by a ref, a key or a query.
    `export_dirs`: folders other layers copy store content into (skill exports), searched
    by a purge and reported in `still_in`. `compact=False` leaves the VACUUM to the caller
    (`compact_after_purge`): a purge applied inside a larger transaction, which VACUUM
    cannot run in."""
    for what, value in (("the reason", reason), ("the key", key), ("the query", query)):
        if value:
            refuse_secrets(value, what)  # before any message could echo it
    check_length(reason, MAX_REASON_CHARS, "the reason")
    why = (reason or "").strip() or ("purged on request" if purge else "forgotten on request")
    who = acting(store, principal)
    rows = _select_targets(store, ref, key, query, scope, principal)
    denied = sorted({r.scope for r in rows if not who.can_write(r.scope)})
    if denied:
        raise Refused(f"principal {who.name!r} may not write scope(s) {', '.join(denied)}")
    if purge:
        todo = [r for r in rows if not r.purged]
        if not todo:
            raise InvalidInput("already purged: " + ", ".join(_refs(rows)) + "; nothing changed")
    else:
        todo = [r for r in rows if r.status != MemoryStatus.FORGOTTEN]
        if not todo:
            raise InvalidInput("already forgotten: " + ", ".join(_refs(rows)) +
                               "; nothing changed (use --purge to erase the text)")
    result = ForgetResult(targets=_refs(todo), dry_run=dry_run, purge=purge, reason=why,
                          skipped=[r for r in _refs(rows) if r not in _refs(todo)])
    if purge:
        _check_may_purge(store, who, todo)
    else:
        _check_may_forget(store, who, todo)
    if purge:
        todo = with_evidence_refs(store.conn, todo)
        matcher = Matcher.build(_purge_texts(todo), PURGE_SUBSTRING_MIN)
        _register(store.conn, matcher)
        if dry_run:
            result.still_in = _other_memories_holding(store.conn, todo)
            result.scrubbed = _scrub_elsewhere(store.conn, todo, count_only=True)
            _files(store, matcher, result, dry_run=True, export_dirs=export_dirs)
    if dry_run:
        return result
    if purge:
        _purge(store, todo, why, who.name, result, compact)
        _files(store, matcher, result, dry_run=False, export_dirs=export_dirs)
    else:
        with store.transaction() as conn:
            for row in todo:
                conn.execute(
                    "UPDATE memories SET prior_status = status, status = 'forgotten', "
                    "status_reason = ? WHERE row = ?",
                    (f"forgotten: {why}", row.row),
                )
                record_history(store, row.id, row.version, "forget", who.name, why,
                               row.text, prior_status=row.status)
                if row.status == MemoryStatus.CONTESTED:
                    _contest_rejected(store, row, who.name)
    return result


def _user_stated(store: Store, row: MemoryVersion) -> bool:
    """Stated by the user (source `user`) or vouched for by the user (`user` evidence)."""
    from agentstate.memory.model import vouched_by_user

    return row.source == "user" or vouched_by_user(store, row.row)


def _check_may_purge(store: Store, who: Principal, rows: list[MemoryVersion]) -> None:
    """Purging what the user stated (source `user`, or the user as evidence) is the
    owner-only action `purge`."""
    if who.may("purge"):
        return
    for row in rows:
        if _user_stated(store, row):
            who.check_action("purge", f"purge {make_ref('mem', row.id, row.version)}, "
                                      "stated by the user")


def _check_may_forget(store: Store, who: Principal, rows: list[MemoryVersion]) -> None:
    """Tombstoning what the user stated takes a principal that may speak as the user: a
    lower authority (the agent) cannot undo the user's word, only contest it by writing a
    new version that the user then confirms or rejects."""
    if who.can_claim("user"):
        return
    stated = [make_ref("mem", r.id, r.version) for r in rows if _user_stated(store, r)]
    if stated:
        raise Refused(f"principal {who.name!r} may not forget {', '.join(stated)}: stated by "
                      "the user, and it may not speak as the user (config.toml "
                      f"[principals.{who.name}] sources); nothing changed. Ask the user to "
                      "run `agentstate forget` from their own terminal")


def _contest_rejected(store: Store, row: MemoryVersion, actor: str) -> None:
    """Forgetting a contested version rejects the contradiction: the current version gets
    back the confidence the contest took from it."""
    from agentstate.memory.versions import CURRENT_CONTEST_FACTOR, bounded

    for other in chain_rows(store, row.id):
        if other.status == MemoryStatus.ACTIVE and other.row != row.row:
            restored = bounded(other.confidence / CURRENT_CONTEST_FACTOR)
            store.conn.execute("UPDATE memories SET confidence = ? WHERE row = ?",
                               (restored, other.row))
            record_history(store, other.id, other.version, "contest_rejected", actor,
                           f"contest by {make_ref('mem', row.id, row.version)} rejected;"
                           " confidence restored", None)


def _refs(rows: list[MemoryVersion]) -> list[str]:
    return [make_ref("mem", r.id, r.version) for r in rows]


def _purge(store: Store, rows: list[MemoryVersion], why: str, actor: str, result: ForgetResult,
           compact: bool = True) -> None:
    from agentstate.store.keys import keyed_hash

    conn = store.conn
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed, not left readable
    with store.transaction():
        for row in rows:
            conn.execute(
                "UPDATE memories SET text = '', norm_hash = ?, prior_status = COALESCE("
                "prior_status, status), status = 'forgotten', status_reason = ?, purged = 1 "
                "WHERE row = ?",
                (f"purged:{row.row}", f"purged: {why}", row.row),
            )
            # Rows written before hashes were keyed keep a plain sha256: re-key them now.
            conn.execute("UPDATE memory_history SET text_hash = ? WHERE memory = ? AND "
                         "version = ? AND text_hash IS NOT NULL",
                         (keyed_hash(store.root, row.text), row.id, row.version))
            record_history(store, row.id, row.version, "purge", actor, why, row.text,
                           prior_status=row.status)
        result.scrubbed = _scrub_elsewhere(conn, rows)
    from agentstate.memory.indexes import optimize_indexes

    # Merge only the indexes that saw deletions: on a large store 'optimize' rewrites the
    # whole index, so the event indexes are left alone unless event text was scrubbed.
    touched = {name.split(".", 1)[0] for name in result.scrubbed}
    names = ["memories_fts", "memories_tri"]
    if "events" in touched:
        names += ["events_fts", "events_tri"]
    with store.transaction():
        optimize_indexes(conn, None if touched - {"events"} else names)
    result.still_in = _other_memories_holding(conn, rows) + _remaining_in_tables(conn)
    if compact:
        result.wal_truncated, result.token_cache_cleared = compact_after_purge(store)
        result.vacuumed = True


def compact_after_purge(store: Store) -> tuple[bool, bool]:
    """The end of a purge, outside any transaction: VACUUM with the WAL truncated before and
    after, and the token-count cache emptied. → (WAL truncated, cache cleared)."""
    from agentstate.tokens import forget_counts

    truncated = _compact(store.conn)
    try:
        forget_counts()
        cleared = True
    except (OSError, sqlite3.Error):
        cleared = False
    return truncated, cleared


def _fts_shadow_prefixes(conn: sqlite3.Connection) -> list[str]:
    return [
        row[0] + "_"
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
        )
    ]


def _purge_texts(rows: list[MemoryVersion]) -> list[str]:
    return sorted({r.text for r in rows if r.text}, key=len, reverse=True)


def _register(conn: sqlite3.Connection, matcher: Matcher) -> None:
    """SQL functions for the purge's matching (case- and whitespace-insensitive)."""
    conn.create_function("purge_hit", 1, lambda v: int(matcher.hit(v)))
    conn.create_function("purge_scrub", 1, lambda v: matcher.scrub(v) if isinstance(v, str)
                         else v)
    conn.create_function("purge_hit_any", 1, lambda v: int(matcher.hit_anywhere(v)))
    conn.create_function("purge_scrub_any", 1, lambda v: matcher.scrub_anywhere(v)
                         if isinstance(v, str) else v)


def _other_memories_holding(conn: sqlite3.Connection, rows: list[MemoryVersion]) -> list[str]:
    """Versions outside `rows` whose text is, or (long texts) contains, a purged text."""
    skip = {r.row for r in rows}
    found = [make_ref("mem", memory_id, version) for row, memory_id, version in conn.execute(
        "SELECT row, id, version FROM memories WHERE purge_hit(text)") if row not in skip]
    return sorted(found)


def _text_columns(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(table, column) of every ordinary table's text columns but the memory tables (the
    memory rows are purged by ref; history and evidence never hold text)."""
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
    return [(table, c[1]) for table in tables
            for c in conn.execute(f'PRAGMA table_info("{table}")')
            if "TEXT" in (c[2] or "").upper() or not c[2]]


def _tied_events(rows: list[MemoryVersion]) -> list[str]:
    """Event ids a purged version came from (its source or evidence): scrubbed of the text
    even when it is too short to be searched for everywhere."""
    ids = {r.source.removeprefix("evt:") for r in rows if r.source.startswith("evt:")}
    ids |= {ref.removeprefix("evt:") for r in rows for ref in r.evidence_refs
            if ref.startswith("evt:")}
    return sorted(ids)


def _scrub_elsewhere(conn: sqlite3.Connection, rows: list[MemoryVersion],
                     count_only: bool = False) -> dict[str, int]:
    """Replace the purged text in every other ordinary table's text columns (or, with
    `count_only`, count the rows a purge would change, for --dry-run)."""
    scrubbed: dict[str, int] = {}

    def add(name: str, n: int) -> None:
        if n:
            scrubbed[name] = scrubbed.get(name, 0) + n

    for table, column in _text_columns(conn):
        if count_only:
            add(f"{table}.{column}", conn.execute(
                f'SELECT count(*) FROM "{table}" WHERE purge_hit("{column}")').fetchone()[0])
        else:
            add(f"{table}.{column}", conn.execute(
                f'UPDATE "{table}" SET "{column}" = purge_scrub("{column}") '
                f'WHERE purge_hit("{column}")').rowcount)
    tied = _tied_events(rows)
    if tied:
        marks = ",".join("?" * len(tied))
        if count_only:
            add("events.text (source events)", conn.execute(
                f"SELECT count(*) FROM events WHERE id IN ({marks}) AND purge_hit_any(text) "
                "AND NOT purge_hit(text)", tied).fetchone()[0])
        else:
            add("events.text (source events)", conn.execute(
                f"UPDATE events SET text = purge_scrub_any(text) WHERE id IN ({marks}) "
                "AND purge_hit_any(text)", tied).rowcount)
    return scrubbed


def _remaining_in_tables(conn: sqlite3.Connection) -> list[str]:
    """Every table row that still holds a purged text anywhere (a short text is only scrubbed
    where it is the whole value or in the memory's own source events; other mentions are
    listed here, not rewritten)."""
    found = []
    for table, column in _text_columns(conn):
        if table == "events":
            refs = [make_ref("evt", r[0]) for r in conn.execute(
                f'SELECT id FROM events WHERE purge_hit_any("{column}") LIMIT 11')]
        else:
            refs = [f"row {r[0]}" for r in conn.execute(
                f'SELECT rowid FROM "{table}" WHERE purge_hit_any("{column}") LIMIT 11')]
        if refs:
            more = " and more" if len(refs) > 10 else ""
            found.append(f"{table}.{column}: {', '.join(refs[:10])}{more}")
    return found


def _files(store: Store, matcher: Matcher, result: ForgetResult, dry_run: bool,
           export_dirs: Sequence[Path]) -> None:
    """The files agentstate writes: skill drafts (the registry's work tree) and logs are
    rewritten; the released-version cache is deleted (rebuilt from git on demand); the
    registry's git objects and the skill exports are reported with how to remove them."""
    import shutil

    # Long texts are rewritten wherever they occur; a short one only where it is tied to
    # the memory (in the database), so in files it is reported, not rewritten.
    search, report = matcher.substring, matcher.anywhere
    if report is None:
        return
    root = store.root
    skills = store.skills_path
    releases = skills / ".releases"
    drafts = residue.files_under(skills, skip=(".git", ".releases"))
    logs = [p for p in residue.files_under(root, skip=("skills",))
            if not p.name.startswith("state.db") and p.name not in ("config.toml",
                                                                     "history.key")]
    for path in residue.files_holding(drafts + logs, report):
        name = str(path.relative_to(root))
        if search is None or not residue.files_holding([path], search):
            result.still_in.append(f"{name} (a short text: rewrite it by hand)")
        elif dry_run or residue.scrub_file(path, search):
            result.files_scrubbed.append(name)
    for version_dir in sorted(releases.glob("*/v*")) if releases.is_dir() else []:
        if residue.files_holding(residue.files_under(version_dir), report):
            result.files_scrubbed.append(str(version_dir.relative_to(root)) + "/ (removed)")
            if not dry_run:
                shutil.rmtree(version_dir, ignore_errors=True)
    for aside in sorted(root.glob("before-restore-*/")):  # agentstate.maintenance.restore
        result.still_in.append(f"{aside.name}/ (a store kept aside by `restore`: its "
                               "database is not purged; delete the folder)")
    config = root / "config.toml"
    if residue.files_holding([config], report):
        result.still_in.append("config.toml (your own file: edit it)")
    git = residue.git_objects_holding(skills, report)
    if git.objects:
        paths = f" ({', '.join(git.paths)})" if git.paths else " (unreachable)"
        result.still_in.append(f"skills git objects: {len(git.objects)} blob(s){paths}; "
                               "releases are immutable, rewrite with rewrite_command")
        result.rewrite_command = git.command
    for folder in export_dirs:
        hits = residue.files_holding(residue.files_under(folder), report)
        if hits:
            where = folder.relative_to(store.work_tree) if folder.is_relative_to(
                store.work_tree) else folder
            result.still_in.append(f"{where}: {len(hits)} exported file(s); after the "
                                   "rewrite run `agentstate skill export` again")


def _compact(conn: sqlite3.Connection) -> bool:
    """Checkpoint + truncate the WAL, VACUUM, and truncate again. False when another
    connection kept the WAL from being fully checkpointed (its old frames may remain until
    that reader finishes)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return busy == 0
