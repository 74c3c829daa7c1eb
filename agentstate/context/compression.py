"""Extractive, deterministic compression: one line per item, always keeping its ref.

No model is involved: the compressed form is the item's label (ref, kind) followed by the
first sentence of its text, cut at a word boundary. The same text always compresses to the
same line, so packs stay reproducible, and the ref lets the model fetch the whole item.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentstate.lazy_re import LazyPattern

DEFAULT_CHARS = 140
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")
_WS = re.compile(r"\s+")
# The forms are pure functions of their arguments, kept per process: a long-lived process
# (the MCP server) asks for the same events' lines on every `context` call, and one pack
# asks for some twice (an event that is both a hit and in the trajectory). A pack has at
# most a few thousand lines (EVENT_POOL_MAX hits and their neighbours).
FORMS_KEPT = 8192


@lru_cache(maxsize=FORMS_KEPT)
def first_sentence(text: str, max_chars: int = DEFAULT_CHARS) -> str:
    """The first sentence (or line) of `text`, whitespace folded, at most `max_chars`."""
    flat = _WS.sub(" ", text).strip()
    match = _SENTENCE_END.search(flat)
    head = flat[: match.start()] if match else flat
    if len(head) <= max_chars:
        return head if head == flat else head + " …"
    cut = head[:max_chars]
    space = cut.rfind(" ")
    if space >= max_chars // 2:  # avoid cutting mid-word when a word boundary is near
        cut = cut[:space]
    return cut.rstrip() + " …"


def compress_line(label: str, text: str, max_chars: int = DEFAULT_CHARS) -> str:
    """`- [label] first sentence …` — the label carries the ref, so it is never lost."""
    return f"- [{label}] {first_sentence(text, max_chars)}"


# Not after an initial ("J.K. Rowling"): a name cut in two loses its first half.
_SENTENCES = re.compile(r"(?<=[.!?。！？])(?<!\b[A-Z]\.)\s+")


def window(sentence: str, pattern: re.Pattern[str], max_chars: int) -> str:
    """`sentence` (whitespace folded) cut to about `max_chars` around the words `pattern`
    matches (in folded text): the span from the first to the last match when it fits, else
    from the first match on, widened on both sides to whole words. `…` marks each cut. A
    sentence that fits, or holds no match, is cut as `first_sentence` cuts."""
    if len(sentence) <= max_chars:
        return sentence
    found = [m.span() for m in pattern.finditer(sentence.casefold())]
    if not found or len(sentence.casefold()) != len(sentence):
        return first_sentence(sentence, max_chars)
    start, end = found[0][0], found[0][1]
    for _, e in found[1:]:
        if e - start > max_chars:
            break
        end = e
    spare = max_chars - (end - start)
    # A little more room before the match than after: what leads to a term (its subject)
    # tends to sit before it.
    lo = max(0, start - spare // 2)
    hi = min(len(sentence), lo + max_chars)
    lo = max(0, hi - max_chars)
    if lo > 0:
        space = sentence.find(" ", lo)
        lo = space + 1 if 0 <= space < start else lo
    if hi < len(sentence):
        space = sentence.rfind(" ", end, hi + 1)
        hi = space if space >= end else hi
    cut = sentence[lo:hi].strip()
    return ("… " if lo > 0 else "") + cut + (" …" if hi < len(sentence) else "")


@lru_cache(maxsize=FORMS_KEPT)
def focus_line(label: str, text: str, stems: tuple[str, ...],
               max_chars: int = DEFAULT_CHARS, skip_lead: bool = False,
               anchorless: bool = False) -> str:
    """Like `compress_line`, but the sentence kept is the one sharing most query terms
    (`stems`, matched as word prefixes so inflections count), the first on a tie, and a
    sentence longer than `max_chars` is cut to a window around its matching words: a
    one-line form of a search hit shows why it matched. The text's first word (a speaker's
    name, a kind) is kept in front when the chosen part does not start the text.
    `skip_lead`: that first word, when it is a label (`Sven:`), does not count as a match —
    it is shown whatever sentence is chosen, and a question naming the speaker would
    otherwise pick the turn's opening ("Sven: Okay, update time!") over the sentence
    that says something. `anchorless`: where no sentence shares a word with the question
    (the label aside: a hit found by meaning alone), the longest sentence is kept rather
    than the opening (`_longest`)."""
    flat = _WS.sub(" ", text).strip()
    if not stems:
        return compress_line(label, text, max_chars)
    sentences = [s for s in _SENTENCES.split(flat) if s] or [flat]

    from agentstate.memory.terms import stem_pattern

    pattern = stem_pattern(tuple(stems))

    lead = flat.split(" ", 1)[0]
    labelled = len(lead) if lead.endswith(":") else 0

    def hits(i: int, skip: int = labelled if skip_lead else 0) -> int:
        sentence = sentences[i][skip:] if i == 0 else sentences[i]
        return len(set(pattern.findall(sentence.casefold())))

    best = max(range(len(sentences)), key=lambda i: (hits(i), -i))
    if anchorless and not any(hits(i, labelled) for i in range(len(sentences))):
        best = _longest(sentences, labelled)
        if best == 0:
            return compress_line(label, text, max_chars)
    elif not hits(best):
        return compress_line(label, text, max_chars)
    chosen = window(sentences[best], pattern, max_chars)
    if len(sentences) > 1 and not chosen.endswith(" …") and best < len(sentences) - 1:
        chosen += " …"
    if best == 0 and not chosen.startswith("… "):
        return f"- [{label}] {chosen}"
    if lead.endswith(":") and chosen.startswith("… "):
        chosen = chosen[2:]
    prefix = f"{lead} … " if lead.endswith(":") else ("" if chosen.startswith("… ") else "… ")
    return f"- [{label}] {prefix}{chosen}"


@lru_cache(maxsize=FORMS_KEPT)
def anchorless(text: str, stems: tuple[str, ...]) -> bool:
    """Whether no word of `text` past its speaker label (`Sven:`) starts with one of the
    question's `stems`: a hit found by meaning alone, whose line has no matched sentence
    to centre on. A question without stems anchors nothing: no hit is called so."""
    if not stems:
        return False
    from agentstate.memory.terms import stem_pattern

    flat = _WS.sub(" ", text).strip()
    lead = flat.split(" ", 1)[0]
    body = flat[len(lead):] if lead.endswith(":") else flat
    return not stem_pattern(stems).search(body.casefold())


# An opening sentence of at most this many characters (the speaker label aside) —
# "Wow, nice pic!", "Hey Maria!", "Thanks, Mell!" — is chatter: where nothing anchors a
# line (`anchorless`), an answer line that starts past it shows a sentence more of what
# the turn says for the same width. On the dev split at 8,000 tokens the complete items
# found by meaning alone below half the best showed 65 of 78 answers so against 59 (20
# characters: 62; 40: 64; offline, docs/evaluation.md, fourteenth round).
OPENING_CHATTER = 30


def past_opening(text: str, most: int = OPENING_CHATTER, least: int = 3,
                 stems: tuple[str, ...] = ()) -> str:
    """`text` without its opening sentence where that is chatter: a labelled turn
    (`Sven: …`) of at least `least` sentences whose first, its label aside, is at most
    `most` characters and holds no word starting with one of the question's `stems`;
    else `text` itself."""
    flat = _WS.sub(" ", text).strip()
    lead = flat.split(" ", 1)[0]
    sentences = [s for s in _SENTENCES.split(flat) if s]
    if not lead.endswith(":") or len(sentences) < least \
            or len(sentences[0]) - len(lead) - 1 > most:
        return text
    if stems:
        from agentstate.memory.terms import stem_pattern

        if stem_pattern(stems).search(sentences[0][len(lead):].casefold()):
            return text
    return f"{lead} " + " ".join(sentences[1:])


# A shorter line (a one-line form placed first) whose turn opens with chatter of at most
# this many characters — "Thanks, Melanie!", "Yep!", "Hey Gina!" — and that shares no word
# with the question: where the line would show that opening alone, it shows the sentence
# after it instead (`short_past_chatter`). On the dev split at 1,000 tokens 24 neighbours'
# and 18 weak hits' shorter lines showed such an opening while the answer was the next
# sentence; 30 characters, or the question's words not checked, cost more items than
# they showed answers (docs/evaluation.md, fifteenth round).
SHORT_LINE_CHATTER = 20


@lru_cache(maxsize=FORMS_KEPT)
def opens_with_chatter(text: str, stems: tuple[str, ...]) -> bool:
    """Whether `text` opens with chatter (`past_opening` with SHORT_LINE_CHATTER, a turn
    of two sentences or more): a shorter line showing that opening shows nothing."""
    return past_opening(text, SHORT_LINE_CHATTER, 2, stems) != text


@lru_cache(maxsize=FORMS_KEPT)
def short_past_chatter(label: str, text: str, stems: tuple[str, ...],
                       max_chars: int = DEFAULT_CHARS) -> str | None:
    """`- [label] Sven: … next sentence` (cut as `first_sentence` cuts, at `max_chars`)
    where the turn's opening is chatter (`past_opening` with SHORT_LINE_CHATTER, a turn of
    two sentences or more); None where it is not."""
    rest = past_opening(text, SHORT_LINE_CHATTER, 2, stems)
    if rest == text:
        return None
    lead, body = rest.split(" ", 1)
    return f"- [{label}] {lead} … {first_sentence(body, max_chars)}"


def _longest(sentences: list[str], labelled: int) -> int:
    """The longest of `sentences` (the first one's `labelled` characters of speaker label
    aside), the first on a tie: with no word of the question to anchor it, a turn's
    opening is most often chatter ("Guess what?", "You'll laugh at this.") and the
    sentence that says most is the one most likely to hold what it was found for. Of 63
    such hits' shorter lines in the dev split's 8,000-token packs, the longest sentence
    held the answer's words for 37, the opening for 25; the sentence with the most
    weight of words rare in the conversation, 40 — close, and it would need the store's
    word frequencies per line (docs/evaluation.md, thirteenth round)."""
    return max(range(len(sentences)),
               key=lambda i: (len(sentences[i]) - (labelled if i == 0 else 0), -i))


# An answer line is this many times as wide as the item's shorter line (`max_chars`). At
# 60 characters (a small room's lines) the window around the matched words ends just
# before what they introduce ("I wrote down some motivational …" — quotes and strategies
# cut), and the matched sentence's completion had at most 30 characters: on the dev split
# at 1,000 tokens only 279 of 577 answer lines showed the answer's words (398 at 2x, 416
# at 2.5x, measured on the same items). Wider lines cost more, so they are given later
# (budgeter.ANSWER_LINE_SHARE).
ANSWER_WIDTH = 2.5


@lru_cache(maxsize=FORMS_KEPT)
def evidence_line(label: str, text: str, stems: tuple[str, ...],
                  max_chars: int = DEFAULT_CHARS, whole_under: int = 0,
                  kind: str = "", fill: bool = False, around: bool = False,
                  past_chatter: bool = False) -> str:
    """The one-line form of an evidence item, made to carry its answer: the whole text when
    it is at most `whole_under` characters (a short turn is cheaper whole than a cut that
    drops what the question asks for), else the sentence `focus_line` picks (by the
    question's words in the text, not in its speaker label), cut to ANSWER_WIDTH times
    `max_chars`, followed by what completes it — a sentence after it (`completion`: the
    one holding what the question asks for, `kind`, else the next), in the room that
    width leaves after the matched one, at least half of `max_chars` (the answer to "what
    pastries?" is rarely the sentence that says "pastries"; it is the one after). A
    matched sentence that ends the turn, or opens with a word pointing back ("It",
    "They", "This" …: `_REFERS_BACK`), is completed by the one before it. `fill`: the
    sentences after the completion follow it while they fit in that room (a line given
    only in room no item wanted — budgeter, `_Upgrades` — has no reason to stop short).
    `around` (with `fill`): the line fills its room both ways (`_filled_around`) — after
    its completion, then before the matched sentence, a line completed by the sentence
    before it included.
    `past_chatter`: the line is made of the turn past an opening that is chatter
    (`past_opening`), its speaker label kept in front and `…` marking the cut."""
    if past_chatter and (rest := past_opening(text)) != text:
        line = evidence_line(label, rest, stems, max_chars, whole_under, kind, fill, around)
        lead = rest.split(" ", 1)[0]
        head = f"- [{label}] {lead} "
        if line.startswith(head) and not line.startswith(f"{head}… "):
            return f"{head}… {line[len(head):]}"
        return line
    flat = _WS.sub(" ", text).strip()
    if len(flat) <= whole_under:
        return f"- [{label}] {flat}"
    width = int(ANSWER_WIDTH * max_chars)
    line = focus_line(label, text, stems, width, skip_lead=True)
    ended = line.endswith(" …")
    body = line[len(f"- [{label}] "):-2 if ended else None]
    sentences = [s for s in _SENTENCES.split(flat) if s]
    core = body.removeprefix("… ").split(" … ", 1)[-1]
    at = next((i for i, s in enumerate(sentences) if s == core), None)
    if at is None or (not ended and at + 1 < len(sentences)):
        return line
    room = max(width - len(core), max_chars // 2)
    around = around and fill
    if at > 0 and _REFERS_BACK.match(core):
        # "It keeps me sane." — what it stands for is the sentence before.
        return _before(label, flat, sentences, at, core, room, around)
    if at + 1 >= len(sentences):
        if at == 0:
            return line
        # The matched sentence ends the turn: what it completes came before it ("Just
        # started doing aerial yoga. Have you tried other workout classes?").
        return _before(label, flat, sentences, at, core, room, around)
    pick = completion(sentences, at, kind)
    if pick < at:
        return _before(label, flat, sentences, at, core, room, around)
    follow = first_sentence(sentences[pick], room)
    if around and follow == sentences[pick]:
        return _filled_around(label, flat, sentences, [at, pick], room - len(follow))
    if fill and not follow.endswith(" …"):
        follow = _filled(follow, sentences[pick + 1:], room)
    return f"{line[:-2]} {'… ' if pick > at + 1 else ''}{follow}"


def _filled(follow: str, rest: list[str], room: int) -> str:
    """`follow` and the whole sentences of `rest` after it, in order, while they fit in
    `room` characters."""
    for sentence in rest:
        if len(follow) + 1 + len(sentence) > room:
            break
        follow += " " + sentence
    return follow


def _filled_around(label: str, flat: str, sentences: list[str], shown: list[int],
                   left: int) -> str:
    """The line of the `shown` sentences (indexes, in order) and, in `left` characters,
    the whole sentences after the last of them, then those before the first, nearest
    first; each side stops at the first that does not fit, and a question is passed over
    (`_asks`). `…` marks what is left out in front and between."""
    shown = list(shown)
    for step, stop in ((1, len(sentences)), (-1, -1)):
        edge = shown[-1] if step > 0 else shown[0]
        for i in range(edge + step, stop, step):
            if _asks(sentences[i]):
                continue
            # The sentence and its space, and the `…` of a question passed over.
            cost = len(sentences[i]) + 1 + (2 if i != edge + step else 0)
            if cost > left:
                break
            left -= cost
            edge = i
            shown = [*shown, i] if step > 0 else [i, *shown]
    lead = flat.split(" ", 1)[0]
    parts = [] if shown[0] == 0 else [f"{lead} …" if lead.endswith(":") else "…"]
    for n, i in enumerate(shown):
        if n and i > shown[n - 1] + 1:
            parts.append("…")
        parts.append(sentences[i])
    return f"- [{label}] " + " ".join(parts)


def _asks(sentence: str) -> bool:
    """A question: a line filled around its answer passes it over. It asks the other
    speaker something and states nothing — on the dev split 11 of 782 evidence turns hold
    the answer's words only in a question, and questions are 9% of the turns' text."""
    return sentence.endswith("?")


# A sentence opening with one of these words goes on from the one before it ("I started
# volunteering at the shelter. It keeps me sane."): the pronoun stands for what the
# question asks about, so that sentence, not the next, completes the line. Of the dev
# split's one-line evidence items holding answer words, answer lines showing them rose
# 481 → 487 of 573 at 1,000 tokens (249 → 251, 194 → 196, 241 → 244 at 2,000-8,000;
# offline, the same items), lines a character shorter on average (docs/evaluation.md,
# eleventh round).
_REFERS_BACK = LazyPattern(r"(it|its|it's|it’s|this|that|these|those|they|they're|they’re|"
                           r"he|he's|he’s|she|she's|she’s)\b", re.IGNORECASE)


def _before(label: str, flat: str, sentences: list[str], at: int, core: str,
            room: int, around: bool = False) -> str:
    """The answer line of `sentences[at]` completed by the sentence before it (`around`:
    and filled both ways, `_filled_around`)."""
    prev = first_sentence(sentences[at - 1], room)
    if around and prev == sentences[at - 1]:
        return _filled_around(label, flat, sentences, [at - 1, at], room - len(prev))
    lead = flat.split(" ", 1)[0]
    head = "" if at == 1 else (f"{lead} … " if lead.endswith(":") else "… ")
    return f"- [{label}] {head}{prev} {core}"


# What a question asks for, read from its words: the completion of an answer line is the
# sentence after the matched one that holds that kind of thing (a time: a date or time
# word or a number; a name or place: capitalised words inside the sentence; a list:
# commas and "and"/"or"), not simply the next one. On the dev split's 782 evidence turns
# holding answer words, answer lines showing them rose 606 → 617 with the kind alone (as
# with a last sentence completed by the one before alone), 628 with both, 639 with the
# sentence before also chosen by kind where none after holds it (offline, 1,000 tokens'
# widths; docs/evaluation.md, tenth round). Compiled on first use: a pack without a
# question (`context --budget N`) never asks what it asks for.
_KIND_TIME = LazyPattern(r"^\W*(when|how long|how often|what (year|month|day|date|time)|"
                        r"which (year|month|day|date))\b|\bhow many (years|months|weeks|days)\b")
_KIND_NAME = LazyPattern(r"^\W*(who|whom|whose|where|which)\b|\b(name|named|called|call)\b|"
                        r"^\W*what (city|country|place|state|town|book|books|movie|movies|band|"
                        r"song|songs|game|games|show|shows|artist|author)\b")
_KIND_LIST = LazyPattern(r"^\W*what (kinds?|types?|sorts?)\b|"
                        r"^\W*what (\w+ ){0,2}\w+[^s']s (do|does|did|has|have|are|were|is)\b|"
                        r"^\W*what (are|were)\b")
_TIME_WORDS = LazyPattern(
    r"\b(\d+|january|february|march|april|may|june|july|august|september|october|november|"
    r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today|"
    r"tomorrow|tonight|last|next|ago|since|until|week|weeks|weekend|month|months|year|years|"
    r"morning|evening|night|summer|winter|spring|fall|autumn)\b")
_CAPITALISED = LazyPattern(r"(?<=[\w,;:] )[A-Z][\w'’-]+")
_LIST_MARKS = LazyPattern(r",|\band\b|\bor\b")


@lru_cache(maxsize=FORMS_KEPT)
def question_kind(query: str) -> str:
    """`time`, `name`, `list` or "" (anything else): what the question asks for."""
    folded = query.casefold()
    for kind, pattern in (("time", _KIND_TIME), ("name", _KIND_NAME), ("list", _KIND_LIST)):
        if pattern.search(folded):
            return kind
    return ""


def _holds(sentence: str, kind: str) -> int:
    """How much of what `kind` asks for `sentence` holds (0: nothing)."""
    if kind == "time":
        return len(_TIME_WORDS.findall(sentence.casefold()))
    if kind == "name":
        return len(_CAPITALISED.findall(sentence))
    if kind == "list":
        return len(_LIST_MARKS.findall(sentence))
    return 0


def completion(sentences: list[str], at: int, kind: str) -> int:
    """Which sentence after `sentences[at]` completes it: the nearest one holding the most
    of what the question asks for (`kind`), else the next one."""
    after = range(at + 1, len(sentences))
    best = max(after, key=lambda i: (_holds(sentences[i], kind), -i))
    if _holds(sentences[best], kind):
        return best
    if at > 0 and _holds(sentences[at - 1], kind):
        return at - 1
    return at + 1
