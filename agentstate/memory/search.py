"""Full-text search over memories and events (SQLite FTS5), shared by recall and context.

Two indexes per corpus (see `agentstate.memory.memory_tables`):
- a word index (`unicode61`, diacritics removed) for languages that separate words;
- a trigram index for runs of CJK text (Chinese, Japanese kana, Korean), which have no spaces,
  so the word tokenizer would see a whole sentence as one token.

Query planning (`plan_query`):
- the query is split into word terms and CJK segments; a query with neither (only
  punctuation, or empty) raises InvalidInput;
- English stop words are dropped (unless the query has nothing else);
- very common terms (low IDF: in more than COMMON_FRACTION of the indexed texts, from the
  `fts5vocab` table) are dropped when rarer terms remain, because they add almost nothing to
  BM25 but make FTS5 score every row that contains them. When *every* term is common, they
  are all required (AND) instead of alternatives (OR), which keeps the candidate set small;
- a CJK segment of three or more characters becomes its overlapping trigrams (OR'd), so a
  query matches texts sharing substrings with it; shorter segments (one or two characters,
  which a trigram index cannot look up) fall back to a bounded substring scan;
- a CJK segment of three or more characters is also searched by its overlapping bigrams
  (`cjk_pieces`, looked up like the short segments): a natural question runs its words
  together (迁移失败 "migration failed", 谁负责迁移 "who is in charge of the migration"), and
  a text that holds 迁移 and 失败 apart shares no trigram with it. Most Chinese and Japanese
  words are two characters long, so the pieces include every such word of the question
  (and a few junk pairs across word boundaries, which rarely match anything); coverage
  (the share of the segment's bigrams a text holds) ranks the text holding more of them
  first. This costs no dictionary: a segmenter such as jieba needs ~1 s and tens of MB to
  load its dictionary on every CLI start, and knows no Japanese.

Scores are BM25 (FTS5's `bm25()`, sign flipped so larger is better), normalised per index to
0..1 against the best hit, and summed across the two indexes. Callers apply their own cuts.

Public API (stable; the context engine calls it):
- `search_events(store, query, *, limit=50, run_id=None, exclude_run_id=None, kinds=None)`
  → list[EventHit]
- `search_memory_rows(store, query, *, cap=200)` → list[(memory row, relevance)]
- `plan_query(store, query, corpus)` → QueryPlan (for explanations)
Query words (folding, splitting, stemming) are in memory/terms.py; index upkeep (optimize,
check, rebuild) in memory/indexes.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.memory.terms import (
    _WORD,
    STOP_WORDS,
    fold,
    holds_a_stem,
    split_query,
    stem,
    stem_pattern,
)
from agentstate.runs.event_sql import RUN_ROW, run_id_of

# In more than this fraction of indexed texts a term is "common": its BM25 IDF is about
# zero (FTS5 clamps it), so it adds nothing to a score but makes every row a match.
COMMON_FRACTION = 0.5
# Below this many indexed texts, IDF is too noisy to prune anything.
MIN_DOCS_FOR_PRUNING = 50
# What only a widened query (common terms too) finds scores at most this share of the
# weakest hit of the rarer terms.
WIDENED_WEIGHT = 0.5
# Substring scans (1-2 character CJK queries) look at no more than this many newest rows.
SCAN_LIMIT = 2_000
# Most word terms (rarest first) and CJK segments one query searches for.
MAX_TERMS = 24
# BM25 ranks every text holding any searched term, so a term's cost is its document count.
# Terms are searched rarest first while their counts add up to at most this many texts; the
# rest ("costly": frequent in a large store, so worth little to BM25) only weigh in through
# coverage, and are searched when the rarer terms find too few hits. On a store of a few
# thousand texts nothing is set aside; on a large one the search stays bounded by the index.
SCORED_ROWS = 4_000
# A 1-2 character CJK query looks up at most this many trigrams that start with it.
PREFIX_TRIGRAMS = 100
# Bigram pieces of longer CJK segments searched per query, and the trigrams looked up per
# piece (fewer than for a short query: the pieces of one question share the work, and the
# substring scan of the newest texts catches what the bound leaves out).
MAX_CJK_PIECES = 16
PIECE_TRIGRAMS = 40

@dataclass(frozen=True)
class Corpus:
    words: str  # FTS5 word index
    trigrams: str  # FTS5 trigram index
    vocab: str  # fts5vocab(row) over the word index
    tri_vocab: str  # fts5vocab(row) over the trigram index
    count_sql: str  # how many texts are indexed


MEMORIES = Corpus("memories_fts", "memories_tri", "memories_vocab", "memories_tri_vocab",
                  "SELECT max(row) FROM memories")
EVENTS = Corpus("events_fts", "events_tri", "events_vocab", "events_tri_vocab",
                "SELECT max(row) FROM events")


@dataclass
class QueryPlan:
    """How a query will be run: which terms were kept, pruned, and how they combine."""

    query: str
    words: list[str] = field(default_factory=list)  # terms used in the word index
    operator: str = "OR"  # how the word terms combine
    # Every word term is common: rank the newest matches instead of scoring them all.
    newest_first: bool = False
    cjk: list[str] = field(default_factory=list)  # CJK segments of 3+ characters
    short_cjk: list[str] = field(default_factory=list)  # 1-2 characters: substring scan
    # Overlapping bigrams of the 3+ character segments (the words a question runs together).
    cjk_pieces: list[str] = field(default_factory=list)
    stop_words: list[str] = field(default_factory=list)
    common: list[str] = field(default_factory=list)  # pruned as low-IDF
    # Beyond SCORED_ROWS: not ranked by BM25, counted in coverage, searched when widening.
    costly: list[str] = field(default_factory=list)
    costly_rows: int = 0  # texts holding a costly or common term (widening's cost bound)
    dropped: list[str] = field(default_factory=list)  # beyond MAX_TERMS
    indexed: int = 0
    stems: dict[str, str] = field(default_factory=dict)  # word → its index term

    @property
    def empty(self) -> bool:
        return not (self.words or self.cjk or self.short_cjk)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


# Document frequencies are counted up to this many texts. FTS5's vocabulary table counts a
# term's texts by reading its whole posting list (a cost that grows with the store); a
# bounded MATCH stops early, and a term in more texts than this is costly whatever its
# exact count (see SCORED_ROWS).
DF_CAP = SCORED_ROWS + 1


def _document_frequencies(conn: Any, corpus: Corpus, words: dict[str, str]
                          ) -> dict[str, int]:
    """Per index term (`words` maps each to a query word that stems to it): how many
    indexed texts hold it, exact below DF_CAP and DF_CAP from there on. Kept per process
    while the word index is unchanged (`_kept_for`): a long-lived process (the MCP server)
    plans the same task query on every `context` call, ~40 bounded counts each."""
    kept = _kept_for(conn, corpus.words)
    missing = {term: word for term, word in words.items() if ("df", term) not in kept}
    sql = (f"SELECT count(*) FROM (SELECT 1 FROM {corpus.words} "
           f"WHERE {corpus.words} MATCH ? LIMIT ?)")
    for term, word in missing.items():
        kept["df", term] = conn.execute(sql, (_quote(word), DF_CAP)).fetchone()[0]
    return {term: kept["df", term] for term in words}


# (database file, FTS5 index) → (the index's state when kept, what was read of it: the
# document frequencies of terms, the best rows of MATCH expressions).
_KEPT: dict[tuple[str, str], tuple[tuple[Any, ...], dict[Any, Any]]] = {}
KEPT_ENTRIES = 4_096
# FTS5 keeps its index's structure (the list of its segments, and a count of the segments
# ever written) in one record of its `_data` table. Segments are never changed in place:
# every committed insert, delete or merge writes a new one and rewrites this record, so an
# equal record means an equal index (tests/memory/test_kept_index.py).
_STRUCTURE_ID = 10


def _kept_for(conn: Any, table: str) -> dict[Any, Any]:
    """What this process keeps of the FTS5 index `table` of this connection's database,
    emptied when the index changed since (`_index_state`); a fresh dict, kept nowhere, for
    a database without a file or inside a transaction (FTS5 shows the transaction's own
    writes to its queries before the structure record changes at commit, and a rollback
    takes them back)."""
    state = None if conn.in_transaction else _index_state(conn, table)
    if state is None:
        return {}
    where, now = state
    seen = _KEPT.get(where)
    if seen is None or seen[0] != now or len(seen[1]) > KEPT_ENTRIES:
        for other in [w for w in _KEPT if w[0] != where[0]]:
            del _KEPT[other]  # another database file: an eval goes through many stores
        seen = _KEPT[where] = (now, {})
    return seen[1]


def _index_state(conn: Any, table: str) -> tuple[tuple[str, str], tuple[Any, ...]] | None:
    """((database path, index), what identifies the index's contents now: the file's
    identity — a restore puts another file at the path — and FTS5's structure record),
    read before the index itself, so a commit landing between the two makes the next call
    read again; None for a database without a file."""
    import os

    path = conn.execute("PRAGMA database_list").fetchone()[2]
    if not path:
        return None
    info = os.stat(path)
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?",
                       (_STRUCTURE_ID,)).fetchone()
    return (path, table), (info.st_dev, info.st_ino, row[0] if row else None)


def plan_query(store: Any, query: str, corpus: Corpus = MEMORIES,
               max_terms: int = MAX_TERMS) -> QueryPlan:
    """Split and plan a query. Raises InvalidInput when nothing is searchable.

    Every content word is searched for and BM25's own IDF weighs it: a word that many texts
    share (a speaker's name, say) counts for little but still separates a text that has it
    from one that has not. Only stop words are left out, and words in more than
    COMMON_FRACTION of the texts, whose IDF FTS5 clamps to almost nothing anyway."""
    text = (query or "").strip()
    if not text:
        raise InvalidInput("the query is empty")
    words, cjk = split_query(text)
    if not words and not cjk:
        raise InvalidInput(f"the query {query!r} has no words to search for")
    plan = QueryPlan(query=text)
    plan.cjk = [seg for seg in cjk if len(seg) >= 3]
    plan.short_cjk = [seg for seg in cjk if len(seg) < 3]
    content = [w for w in words if w not in STOP_WORDS]
    plan.stop_words = [w for w in words if w in STOP_WORDS]
    if not content and not cjk:
        content, plan.stop_words = words, []  # a query of only stop words still searches
    # One term per stem: "research" and "researching" in one query count once.
    by_stem: dict[str, str] = {}
    for word in content:
        by_stem.setdefault(stem(word), word)
    content = list(by_stem.values())
    plan.stems = {word: s for s, word in by_stem.items()}
    conn = store.conn
    plan.indexed = conn.execute(corpus.count_sql).fetchone()[0] or 0
    if content and plan.indexed:
        df = _document_frequencies(conn, corpus, by_stem)
        frequency = {word: df[plan.stems[word]] for word in content}
        content = [w for w in content if frequency[w] > 0] or content
        content.sort(key=lambda w: frequency[w])  # rarest first: MAX_TERMS keeps the rarest
        if plan.indexed >= MIN_DOCS_FOR_PRUNING:
            limit = COMMON_FRACTION * plan.indexed
            rare = [w for w in content if frequency[w] <= limit]
            common = [w for w in content if frequency[w] > limit]
            if rare and frequency[rare[0]] >= DF_CAP:
                # A store so large that even the rarest term is in more than DF_CAP
                # texts: as common, whatever share of the store that is.
                rare, common = [], content
            if rare:
                plan.common = common
                content = rare
            else:
                # Every term is in most texts: require them all, and take the newest
                # matches rather than scoring a large share of the store.
                plan.operator = "AND" if len(common) > 1 else "OR"
                plan.newest_first = True
        if not plan.newest_first:
            total, kept = 0, 0
            for word in content:
                if kept and total + frequency[word] > SCORED_ROWS:
                    break
                total, kept = total + frequency[word], kept + 1
            plan.costly = content[kept:]
            content = content[:kept]
            plan.costly_rows = sum(frequency[w] for w in plan.costly + plan.common)
    # A long query (a goal plus open questions, or a whole memory checked for near
    # duplicates) keeps its rarest terms: more would only slow the OR query down.
    plan.dropped = content[max_terms:]
    plan.words = content[:max_terms]
    plan.cjk = plan.cjk[:max_terms]
    pieces = dict.fromkeys(seg[i:i + 2] for seg in plan.cjk for i in range(len(seg) - 1))
    plan.cjk_pieces = [p for p in pieces if p not in plan.short_cjk][:MAX_CJK_PIECES]
    return plan


def widened(plan: QueryPlan) -> QueryPlan:
    """The plan with its pruned common and costly terms searched for too (OR): BM25-ranked
    while they are in at most SCORED_ROWS texts, else their newest matches (read off the
    end of the index, so a large store costs no more than a small one)."""
    from dataclasses import replace

    return replace(plan, words=plan.words + plan.costly + plan.common, common=[], costly=[],
                   operator="OR", newest_first=plan.costly_rows > SCORED_ROWS)


def coverage_terms(plan: QueryPlan) -> QueryPlan:
    """The plan whose coverage counts the costly terms too (they were only left out of
    the BM25 search to bound its cost, not for lack of meaning)."""
    from dataclasses import replace

    if not plan.costly:
        return plan
    return replace(plan, words=plan.words + plan.costly, costly=[])


def _normalised(rows: list[tuple[int, float]]) -> dict[int, float]:
    """bm25() is negative (smaller is better): flip and scale so the best hit is 1.0."""
    scores = {row: -score for row, score in rows}
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return {row: 1.0 for row in scores}
    return {row: max(0.0, value) / best for row, value in scores.items()}


def _match_words(conn: Any, corpus: Corpus, plan: QueryPlan, cap: int,
                 join: str = "", where: str = "", values: tuple[Any, ...] = ()
                 ) -> list[tuple[int, float]]:
    if not plan.words:
        return []
    expression = f" {plan.operator} ".join(_quote(w) for w in plan.words)
    newest = plan.newest_first
    rows = _run_match(conn, corpus.words, expression, cap, join, where, values, newest)
    required = list(plan.words)
    while not rows and plan.operator == "AND" and len(required) > 1:
        # No text has every common term: drop the most common one and try again.
        required.pop()
        expression = " AND ".join(_quote(w) for w in required)
        rows = _run_match(conn, corpus.words, expression, cap, join, where, values, newest)
    return rows


def _match_trigrams(conn: Any, corpus: Corpus, plan: QueryPlan, cap: int,
                    join: str = "", where: str = "", values: tuple[Any, ...] = ()
                    ) -> list[tuple[int, float]]:
    grams: list[str] = []
    for seg in plan.cjk:
        grams.extend(seg[i:i + 3] for i in range(len(seg) - 2))
    short = [(seg, PREFIX_TRIGRAMS) for seg in plan.short_cjk]
    for seg, bound in short + [(piece, PIECE_TRIGRAMS) for piece in plan.cjk_pieces]:
        # Too short to be a trigram: the indexed trigrams that start with it (a range scan
        # of the trigram vocabulary). Occurrences at the very end of a text have no such
        # trigram; the bounded substring scan catches those among recent texts.
        grams.extend(
            term for (term,) in conn.execute(
                f"SELECT term FROM {corpus.tri_vocab} WHERE term >= ? AND term < ? "
                "ORDER BY term LIMIT ?",
                (seg, seg + "\U0010ffff", bound),
            )
        )
    if not grams:
        return []
    expression = " OR ".join(_quote(g) for g in dict.fromkeys(grams))
    return _run_match(conn, corpus.trigrams, expression, cap, join, where, values)


def _run_match(conn: Any, table: str, expression: str, cap: int, join: str, where: str,
               values: tuple[Any, ...], newest: bool = False) -> list[tuple[int, float]]:
    """Top `cap` rows of one FTS5 index by BM25 (or the newest `cap` matches, which FTS5
    reads straight off the end of its doclists); `join`/`where` narrow them (e.g. by run)."""
    extra = f"AND {where}" if where else ""
    kept: dict[Any, Any] = {}
    if not where:  # the join only narrows: without a condition it would cost a row each
        join = ""
        # The rows then depend on the index alone: kept per process while it is unchanged
        # (a long-lived process runs the same task query on every `context` call).
        kept = _kept_for(conn, table)
        found = kept.get(("match", expression, cap, newest))
        if found is not None:
            return list(found)
    score, order = ("-1.0", f"{table}.rowid DESC") if newest else (f"bm25({table})", "s")
    sql = (
        f"SELECT {table}.rowid, {score} AS s FROM {table} {join} "
        f"WHERE {table} MATCH ? {extra} ORDER BY {order} LIMIT ?"
    )
    rows = [(row, score) for row, score in conn.execute(sql, (expression, *values, cap))]
    if not where:
        kept["match", expression, cap, newest] = tuple(rows)
    return rows


def _combine(*parts: dict[int, float]) -> dict[int, float]:
    total: dict[int, float] = {}
    for part in parts:
        for row, value in part.items():
            total[row] = total.get(row, 0.0) + value
    best = max(total.values(), default=0.0)
    return {row: value / best for row, value in total.items()} if best > 0 else total


# ---------------------------------------------------------------- memories


def search_memory_rows(store: Any, query: str, *, cap: int = 200,
                       plan: QueryPlan | None = None) -> list[tuple[int, float]]:
    """Memory version rows (`memories.row`) matching the query, best first, with relevance
    0..1. Every status is returned (the read gate decides what to withhold and counts it)."""
    plan = plan or plan_query(store, query, MEMORIES)
    conn = store.conn
    words = _normalised(_match_words(conn, MEMORIES, plan, cap))
    grams = _normalised(_match_trigrams(conn, MEMORIES, plan, cap))
    scan: dict[int, float] = {}
    if plan.short_cjk or plan.cjk_pieces:
        scan = _substring_scan(
            conn, "SELECT row, text FROM memories ORDER BY row DESC LIMIT ?", [],
            plan.short_cjk + plan.cjk_pieces,
        )
    combined = _combine(words, grams, scan)
    if not combined:
        combined = _normalised(_match_fragments(conn, MEMORIES, plan, cap))
    if combined:
        marks = ",".join("?" * len(combined))
        texts = dict(conn.execute(f"SELECT row, text FROM memories WHERE row IN ({marks})",
                                  list(combined)))
        combined = _with_coverage(coverage_terms(plan), combined, texts)
    return sorted(combined.items(), key=lambda item: (-item[1], -item[0]))[:cap]


# Memory versions in the dense fusion. A store holds few memories, so the nearest ones are
# near only relatively: a version counts as a dense match from this cosine similarity up
# (with the bundled static model, texts on one subject score ~0.25-0.35 and unrelated
# ones -0.1-0.1), scaled from there to the best match, at DENSE_MEMORY_WEIGHT of the best
# lexical match: words the query shares outrank a paraphrase, and a paraphrase alone is
# still found. Without lexical matches the dense ones alone, at full weight.
DENSE_MEMORY_FLOOR = 0.2
DENSE_MEMORY_WEIGHT = 0.5


def fused_memory_rows(store: Any, query: str, matches: list[tuple[int, float]], *,
                      cap: int = 200) -> list[tuple[int, float]]:
    """`search_memory_rows`' matches fused with the memory versions nearest to `query` in
    meaning (memory/dense.py; unchanged without the model): each keeps the larger of its
    lexical relevance and its dense one (see DENSE_MEMORY_FLOOR), best first."""
    from agentstate.memory.dense import dense_memory_ranked

    near = [(row, sim) for row, sim in dense_memory_ranked(store, query, cap)
            if sim >= DENSE_MEMORY_FLOOR]
    if not near:
        return matches
    top = near[0][1]
    weight = DENSE_MEMORY_WEIGHT if matches else 1.0
    scores = dict(matches)
    for row, sim in near:
        dense = weight * ((sim - DENSE_MEMORY_FLOOR) / (top - DENSE_MEMORY_FLOOR)
                          if top > DENSE_MEMORY_FLOOR else 1.0)
        scores[row] = max(scores.get(row, 0.0), dense)
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:cap]


def _fragments(plan: QueryPlan) -> list[str]:
    return [w for w in plan.words if len(w) >= 3]


def _match_fragments(conn: Any, corpus: Corpus, plan: QueryPlan, cap: int,
                     join: str = "", where: str = "", values: tuple[Any, ...] = ()
                     ) -> list[tuple[int, float]]:
    """Fallback when no whole word matched: the words (3+ characters) as substrings, through
    the trigram index — `pytes` finds `pytest`, `config` finds `myconfig.yaml`. The event
    trigram index holds only texts with CJK (schema m015): events add `_match_prefixes` and
    a scan of the newest texts (see search_events)."""
    fragments = _fragments(plan)
    if not fragments:
        return []
    expression = " OR ".join(_quote(w) for w in fragments)
    return _run_match(conn, corpus.trigrams, expression, cap, join, where, values)


def _match_prefixes(conn: Any, corpus: Corpus, plan: QueryPlan, cap: int,
                    join: str = "", where: str = "", values: tuple[Any, ...] = ()
                    ) -> list[tuple[int, float]]:
    """The fragments as word prefixes in the word index (`pytes` → `pytest`), over every
    indexed text: what the event trigram index no longer holds for text without CJK."""
    fragments = _fragments(plan)
    if not fragments:
        return []
    expression = " OR ".join(f"{_quote(w)}*" for w in fragments)
    return _run_match(conn, corpus.words, expression, cap, join, where, values)


def coverage(plan: QueryPlan, text: str) -> float:
    """Share of the query's (kept) terms a text contains: word terms by token, CJK segments
    by the share of their bigrams present. BM25's IDF is nearly flat on small stores (FTS5
    clamps it), so this keeps a one-word overlap from looking as good as a full match."""
    return _coverage(*_coverage_key(plan), text)


def _coverage_key(plan: QueryPlan) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """What `coverage` reads of a plan: its word terms, their index terms, its CJK segments."""
    return (tuple(plan.words), tuple(plan.stems.get(w, w) for w in plan.words),
            tuple(plan.cjk + plan.short_cjk))


# Kept per process (a pure function of the terms and the text): a long-lived process (the
# MCP server) scores the same hits for the same task query on every `context` call.
@lru_cache(maxsize=8192)
def _coverage(words: tuple[str, ...], stems: tuple[str, ...], segments: tuple[str, ...],
              text: str) -> float:
    parts: list[float] = []
    if words:
        folded = fold(text)
        # ASCII text has no CJK run and folds word by word as a whole: one pass suffices.
        have = set(_WORD.findall(folded)) if text.isascii() else set(split_query(text)[0])
        # A whole word, or an inflection of it (a word starting with its stem), counts
        # fully; a fragment of a longer word (the fallback) half.
        inflected = set(stem_pattern(stems).findall(folded))
        parts.extend(1.0 if w in have or (len(st) >= 3 and st in inflected)
                     else 0.5 if w in folded else 0.0
                     for w, st in zip(words, stems, strict=True))
    for seg in segments:
        grams = [seg[i:i + 2] for i in range(max(1, len(seg) - 1))]
        parts.append(sum(1 for g in grams if g in text) / len(grams))
    return sum(parts) / len(parts) if parts else 1.0


def _with_coverage(plan: QueryPlan, scores: dict[int, float], texts: dict[int, str]
                   ) -> dict[int, float]:
    terms = _coverage_key(plan)
    adjusted = {row: value * max(0.1, _coverage(*terms, texts.get(row) or ""))
                for row, value in scores.items()}
    best = max(adjusted.values(), default=0.0)
    return {row: value / best for row, value in adjusted.items()} if best > 0 else adjusted


def _substring_scan(conn: Any, sql: str, values: list[Any], segments: list[str]
                    ) -> dict[int, float]:
    """1-2 character CJK segments (too short for the trigram index): the share of segments
    each of the newest SCAN_LIMIT texts contains."""
    hits: dict[int, float] = {}
    for row, text in conn.execute(sql, (*values, SCAN_LIMIT)):
        n = sum(1 for seg in segments if seg in text)
        if n:
            hits[row] = n / len(segments)
    return hits


# ---------------------------------------------------------------- events


def _newest_events_sql(conditions: list[str], folded: bool = False) -> str:
    """The newest events' texts (lower-cased for ASCII fragments), for `_substring_scan`."""
    where = (" WHERE " + " AND ".join(conditions)) if conditions else ""
    text = "lower(e.text)" if folded else "e.text"
    return f"SELECT e.row, {text} FROM events e{where} ORDER BY e.row DESC LIMIT ?"


@dataclass
class EventHit:
    """One event matching a search: its ref, run, kind, text, source, time and score 0..1."""

    ref: str
    run: str
    kind: str
    text: str
    source: str
    ts: str
    score: float


def search_events(
    store: Any,
    query: str,
    *,
    limit: int = 50,
    run_id: str | None = None,
    exclude_run_id: str | None = None,
    kinds: list[str] | tuple[str, ...] | None = None,
    max_terms: int = MAX_TERMS,
) -> list[EventHit]:
    """Events from every run matching `query`, best first (BM25, normalised 0..1).

    `run_id` / `exclude_run_id` take a run id or a `run:…` ref. `kinds` restricts event kinds.
    Raises InvalidInput for a query with no searchable words (e.g. only punctuation).
    """
    if limit < 1:
        raise InvalidInput("limit must be at least 1")
    plan = plan_query(store, query, EVENTS, max_terms or MAX_TERMS)
    conditions, values = _event_conditions(run_id, exclude_run_id, kinds)
    combined, plan = _event_scores(store.conn, plan, conditions, values, limit)
    if not combined:
        return []
    return _event_hits(store.conn, plan, combined, limit)


def _event_conditions(run_id: str | None, exclude_run_id: str | None,
                      kinds: list[str] | tuple[str, ...] | None) -> tuple[list[str], list[Any]]:
    """SQL conditions on `events e` (and their values) narrowing an event search."""
    conditions: list[str] = []
    values: list[Any] = []
    if run_id:
        conditions.append(f"e.run = {RUN_ROW}")
        values.append(run_id.removeprefix("run:"))
    if exclude_run_id:
        conditions.append(f"e.run IS NOT {RUN_ROW}")  # an unknown run excludes nothing
        values.append(exclude_run_id.removeprefix("run:"))
    if kinds:
        conditions.append(f"e.kind IN ({','.join('?' * len(kinds))})")
        values.extend(kinds)
    return conditions, values


def _joined(table: str) -> str:
    return f"JOIN events e ON e.row = {table}.rowid"


def _event_scores(conn: Any, plan: QueryPlan, conditions: list[str], values: list[Any],
                  limit: int) -> tuple[dict[int, float], QueryPlan]:
    """{search row: score} from the word index (widened when the rarer terms find too
    few), the trigram index and the short-CJK scan; else from word fragments. Also the
    plan the scores came from."""
    cap = max(limit * 2, 100)
    where, bound = " AND ".join(conditions), tuple(values)
    words = _normalised(
        _match_words(conn, EVENTS, plan, cap, _joined(EVENTS.words), where, bound)
    )
    if len(words) < limit and (plan.common or plan.costly):
        # The rarer terms found too few events to fill what was asked for: widen the query
        # to the common terms too (a name every other text carries). What only the wider
        # query finds ranks below everything the rarer terms found — the pack is filled,
        # not reordered.
        wide = widened(plan)
        floor = WIDENED_WEIGHT * min(words.values(), default=1.0)
        extra = _normalised(
            _match_words(conn, EVENTS, wide, cap, _joined(EVENTS.words), where, bound)
        )
        for row, value in extra.items():
            words.setdefault(row, floor * value)
        plan = wide
    grams = _normalised(
        _match_trigrams(conn, EVENTS, plan, cap, _joined(EVENTS.trigrams), where, bound)
    )
    scan: dict[int, float] = {}
    if plan.short_cjk or plan.cjk_pieces:
        scan = _substring_scan(conn, _newest_events_sql(conditions), values,
                               plan.short_cjk + plan.cjk_pieces)
    combined = _combine(words, grams, scan)
    if not combined:
        # Fragments: CJK texts through the trigram index, every text by word prefix, and
        # the newest SCAN_LIMIT texts by substring (`config` inside `myconfig.yaml`; older
        # ASCII texts are not in the trigram index since m015 — the price of its size).
        combined = _combine(
            _normalised(_match_fragments(conn, EVENTS, plan, cap, _joined(EVENTS.trigrams),
                                         where, bound)),
            _normalised(_match_prefixes(conn, EVENTS, plan, cap, _joined(EVENTS.words),
                                        where, bound)),
            _substring_scan(conn, _newest_events_sql(conditions, folded=True), values,
                            _fragments(plan)) if _fragments(plan) else {},
        )
    return combined, plan


def _event_hits(conn: Any, plan: QueryPlan, combined: dict[int, float], limit: int
                ) -> list[EventHit]:
    """The best `limit` of the scored rows as hits, scores adjusted by query coverage."""
    marks = ",".join("?" * len(combined))
    rows = {
        r[0]: r
        for r in conn.execute(
            f"SELECT e.row, e.id, {run_id_of('e')}, e.kind, e.text, e.source, e.ts FROM events e "
            f"WHERE e.row IN ({marks})",
            list(combined),
        )
    }
    combined = _with_coverage(coverage_terms(plan), combined,
                              {row: r[4] for row, r in rows.items()})
    best = sorted(combined.items(), key=lambda item: (-item[1], -item[0]))[:limit]
    return [
        EventHit(ref=f"evt:{r[1]}", run=f"run:{r[2]}", kind=r[3], text=r[4], source=r[5],
                 ts=r[6], score=round(score, 4))
        for row, score in best
        if (r := rows.get(row)) is not None
    ]




# ---------------------------------------------------------------- hybrid ranking and fields

# Who said or did something is a field of the event: a transcript line starts with its
# speaker ("Kate: …"), one to three capitalised words before a colon.
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
# A question that names some of the speakers seen among the hits prefers their turns: the
# others' hits weigh this much (in a conversation about Kate, "Hello Kate." lines of the
# other speaker match her name as well as her own turns do).
OTHER_SPEAKER_WEIGHT = 0.5


def speaker_of(text: str) -> str:
    """The speaker field of an event text ("" when the text does not start with one)."""
    match = _SPEAKER.match(text or "")
    return match.group(1) if match else ""


def prefer_speakers(query: str, hits: list[EventHit]) -> tuple[list[EventHit], list[str]]:
    """The hits reordered so that, when the query names some (not all) of the speakers of
    the hits, the other speakers' hits weigh OTHER_SPEAKER_WEIGHT of their score; returns
    (hits, the speakers named). A name is matched as the field, word for word (folded),
    not as text anywhere in the turn."""
    words = set(split_query(query)[0])
    speakers = {s for s in (speaker_of(h.text) for h in hits) if s}
    named = sorted(s for s in speakers if all(w in words for w in split_query(s)[0]))
    if not named or len(named) == len(speakers):
        return hits, []
    keep = set(named)
    weighted = [(h.score if speaker_of(h.text) in keep or not speaker_of(h.text)
                 else h.score * OTHER_SPEAKER_WEIGHT, n, h) for n, h in enumerate(hits)]
    weighted.sort(key=lambda t: (-t[0], t[1]))
    return [replace(h, score=round(s, 4)) for s, _, h in weighted], named


# Below this share of the question's content words (speakers' names left out) found in its
# best lexical hits, the lexical ranking is weak, and the dense signal weighs
# WEAK_LEXICAL_DENSE_WEIGHT even where the budget alone would keep it out. The share counts
# stems at the start of a word, the count this threshold was set with: counted by stem
# (`stems_held`), shares rise and two dev questions at 2,000 tokens crossed 0.5 and lost
# their evidence (docs/evaluation.md, issue 23, sixth round) — whether a hit holds any
# word of the question at all is decided by stem (`holds_nothing`, `_content_weighted`).
WEAK_LEXICAL = 0.5
WEAK_LEXICAL_DENSE_WEIGHT = 0.5
STRENGTH_HITS = 5


def _content_stems(query: str, hits: list[EventHit]) -> tuple[str, ...]:
    """The query's content words as stems, the speakers of the hits left out (every turn of
    theirs, and every turn addressing them, carries the name)."""
    words = [w for w in split_query(query)[0] if w not in STOP_WORDS]
    # Each speaker split once (a pool of hundreds of turns has a handful of speakers).
    names = {w for s in {speaker_of(h.text) for h in hits} for w in split_query(s)[0]}
    return tuple(dict.fromkeys(stem(w) for w in words if w not in names))


def _content_share(pattern: re.Pattern[str], stems: tuple[str, ...], text: str) -> float:
    return len(set(pattern.findall(fold(text)))) / len(stems)


def _holds_content(stems: tuple[str, ...], text: str) -> bool:
    # By stem, not by prefix alone: a hit holding "injury" holds the question's "injury"
    # (indexed as injuri), and counting it as holding nothing made it a name-only hit.
    return holds_a_stem(stems, fold(text))


def holds_nothing(query: str, hits: list[EventHit]) -> bool:
    """Whether none of the best STRENGTH_HITS hits holds one of the query's content words
    (by stem; the speakers' names left out), for a query that has some."""
    stems = _content_stems(query, hits)
    return bool(stems) and not any(_holds_content(stems, h.text)
                                   for h in hits[:STRENGTH_HITS])


def lexical_strength(query: str, hits: list[EventHit]) -> float:
    """The largest share of the query's content words (stems; the speakers named in the
    query left out, since every turn of theirs carries the name) that one of the best
    STRENGTH_HITS hits holds; 0.0 without hits, 1.0 for a query of names alone."""
    stems = _content_stems(query, hits)
    if not stems:
        return 1.0
    if not hits:
        return 0.0
    pattern = stem_pattern(stems)
    return max(_content_share(pattern, stems, h.text) for h in hits[:STRENGTH_HITS])


# In the fusion, a lexical hit that holds none of the question's content words (only a
# name: a speaker's, matched as text) weighs NAME_ONLY_SHARE of its score. A lexical score
# is relative to the best hit: where every hit matches only a name ("Which role did Chidi
# get hired for?" against every turn of Chidi's and every "Hey Chidi"), the best holds
# nothing of the question and still scores 1.0, above any dense neighbour. (Weighing every
# hit by the share it holds, from NAME_ONLY_SHARE to 1.0, cost the dev split 0.024 at
# 8,000 tokens: a hit with one of three words is still the better bet there.) A hit
# holding only a name is worth what the pack gives a turn two away from a hit
# (sources.NEIGHBOUR_WEIGHT ** 2): related by who speaks, not by what is said. Only where
# the room gives the dense ranking a weight of its own (context/assemble.py, dense_weight),
# or where no best hit holds anything of the question (EMPTY_LEXICAL): in a small room the
# dense hits are the weaker bet where the lexical ones hold some of it, and weighing those
# down there cost the second corpus 0.021 at 1,000 tokens (docs/evaluation.md).
NAME_ONLY_SHARE = 0.25
# Where not one of the best lexical hits holds a content word of the question (names aside:
# `lexical_strength` at most this, and `holds_nothing` by stem), the lexical list is no
# ranking at all — a flat band of turns that carry a speaker's name — and what finds the
# evidence is the dense ranking, far
# down it (a paraphrased fact stood 77th-347th on the second corpus). There the fused
# ranking is as long as the caller's `empty_limit` (a pool sized for the room, not for the
# lexical hits' one line each: context/assemble.py, EMPTY_LEXICAL_POOL), so the dense
# list reaches that deep and its scale (weakest to best) spans it, and the name-only hits
# weigh NAME_ONLY_SHARE — at any room, since such a question is fused with the dense
# ranking at any room (WEAK_LEXICAL). Widening every weak query's pool cost the dev split;
# so did this rule in small rooms while "holds" meant a stem at the start of a word (hits
# holding "injury", indexed as injuri, counted as name-only: `stems_held`), and it no
# longer does (docs/evaluation.md, issue 23, fifth and sixth rounds).
EMPTY_LEXICAL = 0.0


def _content_weighted(query: str, hits: list[EventHit]) -> list[EventHit]:
    stems = _content_stems(query, hits)
    if not stems or not hits:
        return hits
    return [h if _holds_content(stems, h.text) else
            EventHit(h.ref, h.run, h.kind, h.text, h.source, h.ts,
                     round(h.score * NAME_ONLY_SHARE, 4))
            for h in hits]


def ranked_events(store: Any, query: str, *, limit: int = 50, max_terms: int = MAX_TERMS,
                  dense_weight: float | None = None, speakers: bool = True,
                  empty_limit: int | None = None) -> list[EventHit]:
    """The event search of a context pack: the lexical ranking (`search_events`), fused
    with the dense one when the model is installed (`_fused`): at `dense_weight`, raised to
    WEAK_LEXICAL_DENSE_WEIGHT where the lexical hits hold little of the question
    (`lexical_strength`); None keeps the search lexical. Where `dense_weight` itself is
    above 0, or none of the best lexical hits holds any of the question's content words
    (`lexical_strength` 0), each lexical hit first weighs what it holds of the question
    (`_content_weighted`); in the latter case the fused ranking is also `empty_limit` long
    when that is more than `limit` (see EMPTY_LEXICAL). Then the speaker field is
    preferred (`prefer_speakers`). A query with no word the index knows is ranked by the
    dense signal alone, never an error."""
    try:
        lexical = search_events(store, query, limit=limit, max_terms=max_terms)
    except InvalidInput:
        lexical = []
    hits = lexical
    # Lexical hits are weighed by what they hold of the question where the budget itself
    # lets dense hits in, or where they hold nothing of it (NAME_ONLY_SHARE, EMPTY_LEXICAL).
    weigh = bool(dense_weight)
    strength = lexical_strength(query, lexical) if dense_weight is not None else 1.0
    if strength < WEAK_LEXICAL:
        # The question's own words (a speaker's name aside) are in none of the best hits:
        # the lexical ranking says little, whatever the budget (a paraphrase).
        dense_weight = max(dense_weight or 0.0, WEAK_LEXICAL_DENSE_WEIGHT)
    if strength <= EMPTY_LEXICAL and holds_nothing(query, lexical):
        # Not one content word of the question in the best hits: they are a flat band of
        # name matches at any room, and the dense ranking needs to reach past them.
        weigh = True
        if empty_limit:
            limit = max(limit, empty_limit)
    if dense_weight:
        from agentstate.memory.dense import dense_ranked

        near = dense_ranked(store, query, limit)
        if near:
            hits = _fused(store, _content_weighted(query, lexical) if weigh else lexical,
                          near, dense_weight, limit)
    if speakers and hits:
        hits, _ = prefer_speakers(query, hits)
    return hits


def _fused(store: Any, lexical: list[EventHit], near: list[tuple[str, float]],
           weight: float, limit: int) -> list[EventHit]:
    """Lexical hits and dense neighbours in one ranking. A dense neighbour scores `weight`
    × its similarity scaled between the weakest and the best of the dense list (0..1); an
    event in both lists keeps the larger of its two scores. So the lexical ranking is kept
    wherever its scores are above what the dense signal may claim (at a small budget,
    `weight` is small and dense hits only fill what the lexical ones leave), and the top
    of the dense ranking joins it as the budget grows. Without lexical hits (no word of the
    query is indexed) the dense ranking alone, at full weight."""
    top, low = near[0][1], near[-1][1]
    span = (top - low) or 1.0
    weight = weight if lexical else 1.0
    dense = {eid: weight * (sim - low) / span for eid, sim in near}
    by_id = {h.ref.removeprefix("evt:"): h for h in lexical}
    scores = {eid: h.score for eid, h in by_id.items()}
    for eid, value in dense.items():
        scores[eid] = max(scores.get(eid, 0.0), value)
    place = {eid: n for n, eid in enumerate([*by_id, *(e for e in dense if e not in by_id)])}
    order = sorted(scores, key=lambda eid: (-scores[eid], place[eid]))[:limit]
    # Only the dense hits that made the cut are read (each is a row of text, and the
    # dense list is as long as the pool).
    by_id.update(_dense_only_hits(store, [eid for eid in order if eid not in by_id]))
    # Made anew rather than with dataclasses.replace, which looks up the fields per call
    # (a few ms over a pool of hundreds, on every query). An id no longer in the table (a
    # deleted event whose vector was still cached) is left out.
    return [EventHit(h.ref, h.run, h.kind, h.text, h.source, h.ts, round(scores[eid], 4))
            for eid in order if (h := by_id.get(eid)) is not None]


def _dense_only_hits(store: Any, ids: list[str]) -> dict[str, EventHit]:
    """EventHits (score 0) for event ids found by the dense signal alone."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        r[0]: EventHit(ref=f"evt:{r[0]}", run=f"run:{r[1]}", kind=r[2], text=r[3],
                       source=r[4], ts=r[5], score=0.0)
        for r in store.conn.execute(
            f"SELECT e.id, {run_id_of('e')}, e.kind, e.text, e.source, e.ts FROM events e "
            f"WHERE e.id IN ({marks})", ids)
    }
