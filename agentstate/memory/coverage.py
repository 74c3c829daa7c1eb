"""How much of a query a text holds (`coverage`): the share of the plan's word terms it
contains (a whole word or an inflection fully, a fragment of a longer word half) and of its
CJK segments' bigrams. Search scores are weighed by it, so that on a small store, where
BM25's IDF is nearly flat, a one-word overlap does not look as good as a full match."""

from __future__ import annotations

from functools import lru_cache

from agentstate.memory.query_plan import QueryPlan
from agentstate.memory.terms import _WORD, fold, split_query, stem_pattern


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

