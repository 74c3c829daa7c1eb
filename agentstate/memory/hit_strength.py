"""What the best lexical hits hold of a question: the share of its content words they hold
(`lexical_strength`, which decides how much the dense ranking weighs), whether they hold
none (`holds_nothing`), and the weight of a hit that matches only a name
(`_content_weighted`). The speakers' names are left out of the question's words: every turn
of theirs carries them."""

from __future__ import annotations

import re

from agentstate.memory.event_hit import EventHit
from agentstate.memory.speakers import speaker_of
from agentstate.memory.terms import (
    STOP_WORDS,
    fold,
    holds_a_stem,
    split_query,
    stem,
    stem_pattern,
)

# The best lexical hits read for what they hold of the question (how search.py uses the
# share: WEAK_LEXICAL and EMPTY_LEXICAL there).
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
# (event_items.NEIGHBOUR_WEIGHT ** 2): related by who speaks, not by what is said. Only where
# the room gives the dense ranking a weight of its own (context/assemble.py, dense_weight),
# or where no best hit holds anything of the question (EMPTY_LEXICAL): in a small room the
# dense hits are the weaker bet where the lexical ones hold some of it, and weighing those
# down there cost the second corpus 0.021 at 1,000 tokens (docs/evaluation.md).
NAME_ONLY_SHARE = 0.25


def _content_weighted(query: str, hits: list[EventHit]) -> list[EventHit]:
    stems = _content_stems(query, hits)
    if not stems or not hits:
        return hits
    return [h if _holds_content(stems, h.text) else
            EventHit(h.ref, h.run, h.kind, h.text, h.source, h.ts,
                     round(h.score * NAME_ONLY_SHARE, 4))
            for h in hits]

