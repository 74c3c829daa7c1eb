"""How a full-text query is planned before memory/search.py runs it: which of its terms
are searched, in which index, and how they combine (`plan_query`).

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

"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentstate.errors import InvalidInput
from agentstate.memory.kept_index import _kept_for
from agentstate.memory.terms import STOP_WORDS, split_query, stem

# In more than this fraction of indexed texts a term is "common": its BM25 IDF is about
# zero (FTS5 clamps it), so it adds nothing to a score but makes every row a match.
COMMON_FRACTION = 0.5
# Below this many indexed texts, IDF is too noisy to prune anything.
MIN_DOCS_FOR_PRUNING = 50
# Most word terms (rarest first) and CJK segments one query searches for.
MAX_TERMS = 24
# BM25 ranks every text holding any searched term, so a term's cost is its document count.
# Terms are searched rarest first while their counts add up to at most this many texts; the
# rest ("costly": frequent in a large store, so worth little to BM25) only weigh in through
# coverage, and are searched when the rarer terms find too few hits. On a store of a few
# thousand texts nothing is set aside; on a large one the search stays bounded by the index.
SCORED_ROWS = 4_000
# Bigram pieces of longer CJK segments searched per query.
MAX_CJK_PIECES = 16

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
