"""Full-text search over memories and events (SQLite FTS5), shared by recall and context.

Query planning (which terms are searched, in which index, and how they combine) is in
memory/query_plan.py; what a process keeps of an index between calls in
memory/kept_index.py; how much of the query a hit holds (its score's weight) in
memory/coverage.py. The hybrid ranking of a context pack (`ranked_events`) fuses the
lexical hits with the dense ones (memory/dense.py), weighed by what they hold of the
question (memory/hit_strength.py) and by the speakers it names (memory/speakers.py).

Scores are BM25 (FTS5's `bm25()`, sign flipped so larger is better), normalised per index to
0..1 against the best hit, and summed across the two indexes. Callers apply their own cuts.

Public API (stable; the context engine calls it):
- `search_events(store, query, *, limit=50, run_id=None, exclude_run_id=None, kinds=None)`
  → list[EventHit]
- `search_memory_rows(store, query, *, cap=200)` → list[(memory row, relevance)]
- `ranked_events(store, query, *, limit=50, …)` → list[EventHit] (the context pack's search)
- `plan_query(store, query, corpus)` → QueryPlan (for explanations), in memory/query_plan.py
Query words (folding, splitting, stemming) are in memory/terms.py; index upkeep (optimize,
check, rebuild) in memory/indexes.py.
"""

from __future__ import annotations

from typing import Any

from agentstate.errors import InvalidInput
from agentstate.memory.coverage import _with_coverage
from agentstate.memory.event_hit import EventHit
from agentstate.memory.hit_strength import _content_weighted, holds_nothing, lexical_strength
from agentstate.memory.kept_index import _kept_for
from agentstate.memory.query_plan import (
    EVENTS,
    MAX_TERMS,
    MEMORIES,
    Corpus,
    QueryPlan,
    _quote,
    coverage_terms,
    plan_query,
    widened,
)
from agentstate.memory.speakers import prefer_speakers
from agentstate.runs.event_sql import RUN_ROW, run_id_of

# What only a widened query (common terms too) finds scores at most this share of the
# weakest hit of the rarer terms.
WIDENED_WEIGHT = 0.5
# Substring scans (1-2 character CJK queries) look at no more than this many newest rows.
SCAN_LIMIT = 2_000
# A 1-2 character CJK query looks up at most this many trigrams that start with it.
PREFIX_TRIGRAMS = 100
# The trigrams looked up per bigram piece of a longer CJK segment (fewer than for a short
# query: the pieces of one question share the work, and the substring scan of the newest
# texts catches what the bound leaves out).
PIECE_TRIGRAMS = 40


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


# ---------------------------------------------------------------- hybrid ranking

# Below this share of the question's content words (speakers' names left out) found in its
# best lexical hits, the lexical ranking is weak, and the dense signal weighs
# WEAK_LEXICAL_DENSE_WEIGHT even where the budget alone would keep it out. The share counts
# stems at the start of a word, the count this threshold was set with: counted by stem
# (`stems_held`), shares rise and two dev questions at 2,000 tokens crossed 0.5 and lost
# their evidence (docs/evaluation.md, issue 23, sixth round) — whether a hit holds any
# word of the question at all is decided by stem (`holds_nothing`, `_content_weighted`).
WEAK_LEXICAL = 0.5
WEAK_LEXICAL_DENSE_WEIGHT = 0.5
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
