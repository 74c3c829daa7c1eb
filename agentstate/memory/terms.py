"""The words of a query or a text as the search indexes see them: folded like the word
index's tokenizer, split into word terms and CJK runs, stemmed exactly as the index stems
(through a private FTS5 table with the same tokenizer), and matched by stem in plain text.
Shared by the search (memory/search.py), the write gate's similarity check and the context
engine's query terms.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from functools import lru_cache

STOP_WORDS = frozenset(
    """a about above after again all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers him his how i if in into is it its itself just me more
    most my no nor not now of off on once only or other our ours out over own same she should
    so some such than that the their them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yours""".split()
)

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uff66-\uff9f"  # half-width katakana
)
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """Lower-case and strip diacritics the way `unicode61 remove_diacritics 2` does."""
    if text.isascii():  # nothing to decompose: the common case on every ranked candidate
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=1)
def _cjk_run() -> re.Pattern[str]:
    # Compiled on first use (~2 ms for these ranges): ASCII text never needs it.
    return re.compile(f"[{_CJK}]+")


def split_query(query: str) -> tuple[list[str], list[str]]:
    """(word terms, CJK segments), each deduplicated in order of appearance."""
    if query.isascii():  # no CJK run to split out
        cjk, rest = [], query
    else:
        cjk = list(dict.fromkeys(_cjk_run().findall(query)))
        rest = _cjk_run().sub(" ", query)
    words = list(dict.fromkeys(fold(w) for w in _WORD.findall(rest)))
    return words, cjk


def tokens(text: str) -> set[str]:
    """Word terms plus CJK bigrams: a cheap bag of tokens for similarity checks."""
    words, cjk = split_query(text)
    bag = set(words)
    for seg in cjk:
        bag.update(seg[i:i + 2] for i in range(max(1, len(seg) - 1)))
    return bag


@lru_cache(maxsize=1)
def _stemmer() -> sqlite3.Connection:
    """A private in-memory FTS5 table with the word index's tokenizer: the one way to get
    exactly the stems the index holds (what its vocabulary table lists) without a second
    stemming library that could disagree with it."""
    from agentstate.memory.memory_tables import STEMMED_TOKENIZER

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute(f"CREATE VIRTUAL TABLE s USING fts5(w, tokenize='{STEMMED_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE s_vocab USING fts5vocab(s, 'instance')")
    return conn


@lru_cache(maxsize=4096)
def stem(word: str) -> str:
    """The index term of one folded word ("researching" → "research")."""
    conn = _stemmer()
    with conn:
        conn.execute("DELETE FROM s")
        conn.execute("INSERT INTO s (rowid, w) VALUES (1, ?)", (word,))
        row = conn.execute("SELECT term FROM s_vocab ORDER BY offset LIMIT 1").fetchone()
    return row[0] if row else word


@lru_cache(maxsize=256)
def stem_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    """Matches any of `stems` at the start of a word (in folded text): one pass finds
    which query terms a text holds, inflected or not."""
    alternatives = "|".join(re.escape(s) for s in sorted(set(stems), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alternatives or '(?!)'})")


@lru_cache(maxsize=256)
def _stem_heads(stems: tuple[str, ...]) -> re.Pattern[str]:
    # The stemmer only rewrites a word's end (injury → injuri, hoping → hope): a word whose
    # stem is S starts with S less its last letter, so only such words need stemming.
    heads = sorted({s[:-1] for s in stems if len(s) >= 3}, key=len, reverse=True)
    alternatives = "|".join(re.escape(h) for h in heads)
    return re.compile(rf"(?<![^\W_])(?:{alternatives or '(?!)'})[^\W_]*")


def holds_a_stem(stems: tuple[str, ...], folded: str) -> bool:
    """Whether `stems_held` would find any: answered at the first stem found, and each
    pattern tried only where its stem (or head) occurs as a substring. Scanning a ~700
    character text with a pattern costs ~40 us (its look-behind is tried at every
    position), which over the hundreds of hits a fused search weighs was most of its time;
    substring search is ~100 times faster."""
    pattern = stem_pattern(stems)
    for s in stems:
        at = folded.find(s)
        while at != -1:
            if pattern.match(folded, at):
                return True
            at = folded.find(s, at + 1)
    heads, wanted = _stem_heads(stems), set(stems)
    for head in {s[:-1] for s in stems if len(s) >= 3}:
        at = folded.find(head)
        while at != -1:
            word = heads.match(folded, at)  # the whole word from a word's start
            if word and stem(word.group()) in wanted:
                return True
            at = folded.find(head, at + 1)
    return False


def stems_held(stems: tuple[str, ...], folded: str) -> set[str]:
    """Which of `stems` the folded text holds: at the start of a word (an inflection), or
    as the stem of one of its words — a stem is not always a prefix of its word ("injury"
    is indexed as injuri, "journey" as journei), and a text holding "injury" holds the
    question's "injury"."""
    found = set(stem_pattern(stems).findall(folded))
    missing = set(stems) - found
    if missing:
        found.update(s for word in set(_stem_heads(stems).findall(folded))
                     if (s := stem(word)) in missing)
    return found
