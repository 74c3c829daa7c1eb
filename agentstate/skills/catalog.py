"""The skill catalog and discovery: short metadata only, read from the database mirror.

Nothing here touches git or a skill's body: the catalog is what goes into a context pack or a
resume pack (name, one-line description, version ref); the body loads only through
`skill load`. Only the *current* version of a skill is visible: the highest version whose
status is `published` (revoking the newest version falls back to the previous published one;
revoking every version removes the skill from the catalog).

A skill is *available* when every tool its version requires (`required_tools` in its
skill.toml) can run here: declared in `[tools] definitions`, or on the `[tools]` path and
allowed. An unavailable skill is listed (with why) but never matched, offered or loaded: a
procedure whose tool has gone would only fail at its first step. The required tools are read
by tree hash in one git call and kept for the process (a tree hash names its content).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.skills.status import SkillStatus
from agentstate.store.db import Store

if TYPE_CHECKING:
    from agentstate.config import ToolSettings
from agentstate.store.refs import make_ref

# Below this a match is noise (one common word shared with a description).
MIN_SCORE = 0.6
ONE_LINE = 120

_CURRENT_SQL = """
SELECT v.* FROM skill_versions v
WHERE v.status = 'published'
  AND v.version = (SELECT MAX(w.version) FROM skill_versions w
                   WHERE w.name = v.name AND w.status = 'published')
ORDER BY v.name
"""

_STOPWORDS = frozenset(
    """a an and are as at be by can do does for from has have how i if in into is it its me my
    no not of on or our please should so that the their them then there this to up use using
    was we what when where which while will with you your""".split()
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class SkillMatch:
    name: str
    version: int
    description: str  # one line
    ref: str  # skill:name@vN
    score: float


@dataclass
class CatalogEntry:
    name: str
    description: str  # one line
    version: int | None  # the current published version (or the latest, for non-published)
    status: SkillStatus
    ref: str
    # Why this version cannot run here (a required tool gone), None when it can.
    unavailable: str | None = None


def one_line(text: str, limit: int = ONE_LINE) -> str:
    """The first sentence or line of a description, cut at `limit` characters."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    end = first.find(". ")
    if end >= 20:  # the first sentence, when it is a real one
        first = first[: end + 1]
    if len(first) > limit:
        first = first[: limit - 1].rstrip() + "…"
    return first


@lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    # A tiny suffix stripper, applied to both sides, so "tests"/"testing"/"tested" meet.
    if len(word) > 4 and word.endswith("ied"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    """Lower-cased, stop-word-free, lightly stemmed words (hyphenated names split)."""
    return [
        _stem(w) for w in _WORD.findall((text or "").lower()) if w not in _STOPWORDS and len(w) > 1
    ]


@lru_cache(maxsize=16384)
def _token_set(text: str) -> frozenset[str]:
    # Catalog texts repeat across calls in one process (context assembly, benchmarks).
    return frozenset(tokens(text))


def score_skill(
    query: set[str], name: str, description: str, triggers: list[str]
) -> float:
    """Deterministic relevance of one skill to a task text.

    Triggers weigh most (a trigger fully contained in the task scores 3, a partial one scales
    with its covered fraction when at least half is covered); the best trigger counts fully
    and further ones a quarter. Name words then description words add smaller amounts,
    description words normalised by the description's length so long descriptions do not win
    by size alone.
    """
    if not query:
        return 0.0
    trigger_scores = []
    for phrase in triggers:
        words = _token_set(phrase)
        if not words:
            continue
        covered = len(words & query) / len(words)
        if covered >= 1.0:
            trigger_scores.append(3.0)
        elif covered >= 0.5:
            trigger_scores.append(2.0 * covered)
    trigger_scores.sort(reverse=True)
    total = 0.0
    if trigger_scores:
        total += trigger_scores[0] + 0.25 * sum(trigger_scores[1:])
    name_words = _token_set(name.replace("-", " "))
    total += 0.8 * len(name_words & query)
    desc_words = _token_set(description) - name_words
    if desc_words:
        total += 1.2 * len(desc_words & query) / math.sqrt(len(desc_words))
    return round(total, 4)


def _current_rows(store: Store) -> list[dict[str, Any]]:
    if not store.has_table("skill_versions"):
        return []
    return store.rows(_CURRENT_SQL)


# tree hash → the tools that version's skill.toml requires (content-addressed: never stale).
_REQUIRED: dict[str, tuple[str, ...]] = {}


def _parse_required(data: bytes | None) -> tuple[str, ...]:
    import tomllib

    if not data:
        return ()
    try:
        tools = tomllib.loads(data.decode("utf-8", errors="replace")).get("required_tools")
    except tomllib.TOMLDecodeError:
        return ()  # publish validated it; an unreadable file is doctor's business
    return tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else ()


def required_tools(store: Store, trees: list[str]) -> dict[str, tuple[str, ...]]:
    """The required tools of the versions with these tree hashes."""
    missing = [t for t in trees if t and t not in _REQUIRED]
    if missing:
        from agentstate.skills import release_files
        from agentstate.skills.folder_layout import SKILL_TOML

        for tree, data in release_files.read_tree_files(store.skills_path, missing,
                                                        SKILL_TOML).items():
            _REQUIRED[tree] = _parse_required(data)
    return {t: _REQUIRED.get(t, ()) for t in trees if t}


def tool_problem(tools: ToolSettings, tool: str, base: Path) -> str | None:
    """Why the tool layer could not run `tool` here, None when it could."""
    from agentstate.tools.runner import tool_availability

    found = tool_availability(tools, tool, base)
    if found.declared or (found.on_path and found.allowed):
        return None
    why = []
    if not found.on_path:
        why.append("not on the [tools] path nor declared in [tools] definitions")
    if not found.allowed:
        why.append(f"not allowed ({found.reason})" if found.reason else "not allowed")
    return f"required tool {tool!r} is " + " and ".join(why)


def unavailable_reasons(store: Store, rows: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """(name, version) → why that version cannot run here, for the rows that cannot.

    Each distinct tool is checked once (a few stat calls and the policy): cheap enough for
    every match and load."""
    needed = required_tools(store, [row["tree"] for row in rows if row.get("tree")])
    settings = store.settings.tools
    base = Path(store.work_tree)
    verdicts: dict[str, str | None] = {}
    out: dict[tuple[str, int], str] = {}
    for row in rows:
        problems = []
        for tool in needed.get(row.get("tree") or "", ()):
            if tool not in verdicts:
                verdicts[tool] = tool_problem(settings, tool, base)
            if verdicts[tool]:
                problems.append(verdicts[tool])
        if problems:
            out[(row["name"], row["version"])] = "; ".join(str(p) for p in problems)
    return out


def match_skills(store: Store, text: str, *, limit: int = 3) -> list[SkillMatch]:
    """Published skills (current versions only) ranked for a task text, best first.

    Ties are broken by name so the same store and text always give the same list. Returns []
    when nothing scores above the noise floor or no skill is published. A skill whose
    required tools cannot run here is never a match (see the module's docstring).
    """
    query = frozenset(tokens(text))
    if not query or limit < 1:
        return []
    matches: list[SkillMatch] = []
    ranked = scored_skills(store, query)
    # Best first, the tools checked only as far as the matches reach (a git call for trees
    # not seen yet): which tools can run here is read on every call, never kept.
    for start in range(0, len(ranked), limit):
        chunk = ranked[start:start + limit]
        gone = unavailable_reasons(store, [row for row, _ in chunk])
        for row, score in chunk:
            if (row["name"], row["version"]) not in gone and len(matches) < limit:
                matches.append(SkillMatch(
                    name=row["name"], version=row["version"],
                    description=one_line(row["description"]),
                    ref=make_ref("skill", row["name"], row["version"]), score=score))
        if len(matches) >= limit:
            break
    return matches


def scored_skills(store: Store, query: frozenset[str]) -> list[tuple[dict[str, Any], float]]:
    """The current published versions that score at least MIN_SCORE for `query` (a task's
    words, as `tokens` makes them), best first, ties by name: kept per process while no row
    of `skill_versions` has changed (`skill_changes`, m054, and the database file's
    identity: store/kept.py), as a long-lived process (the MCP server) asks the same task's
    words on every `context` call. Callers must not change the rows."""
    from agentstate.store.kept import kept

    return kept(store.conn, "skill scores", skill_changes, query,
                lambda: _score_all(store, query))


def skill_changes(conn: Any) -> int | None:
    """The count m054's triggers keep of every change to `skill_versions`; None on a store
    opened without migrating to it (nothing is then kept)."""
    try:
        row = conn.execute("SELECT changes FROM skill_changes WHERE id = 1").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else int(row[0])


def _score_all(store: Store, query: frozenset[str]) -> list[tuple[dict[str, Any], float]]:
    scored, words = [], set(query)
    for row in _current_rows(store):
        triggers = json.loads(row["triggers"] or "[]")
        score = score_skill(words, row["name"], row["description"], triggers)
        if score >= MIN_SCORE:
            scored.append((row, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]["name"]))
    return scored


def list_catalog(store: Store, *, include_all: bool = False) -> list[CatalogEntry]:
    """The catalog: one entry per skill with a current published version, sorted by name.
    An entry whose required tools cannot run here says why in `unavailable` (callers that
    offer skills to a model leave those out; `skill list` shows them).

    With include_all, skills with no published version are listed too (status `candidate`
    when a candidate is waiting, else `revoked`) with their latest version.
    """
    rows = _current_rows(store)
    gone = unavailable_reasons(store, rows) if rows else {}
    entries = [
        CatalogEntry(
            name=row["name"],
            description=one_line(row["description"]),
            version=row["version"],
            status=SkillStatus.PUBLISHED,
            ref=make_ref("skill", row["name"], row["version"]),
            unavailable=gone.get((row["name"], row["version"])),
        )
        for row in rows
    ]
    if include_all and store.has_table("skill_versions"):
        listed = {e.name for e in entries}
        rows = store.rows(
            "SELECT v.* FROM skill_versions v WHERE v.version = "
            "(SELECT MAX(w.version) FROM skill_versions w WHERE w.name = v.name) ORDER BY v.name"
        )
        for row in rows:
            if row["name"] in listed:
                continue
            entries.append(
                CatalogEntry(
                    name=row["name"],
                    description=one_line(row["description"]),
                    version=row["version"],
                    status=SkillStatus(row["status"]),
                    ref=make_ref("skill", row["name"], row["version"]),
                )
            )
        entries.sort(key=lambda e: e.name)
    return entries
