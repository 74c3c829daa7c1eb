"""Extractive, deterministic compression: one line per item, always keeping its ref.

No model is involved: the compressed form is the item's label (ref, kind) followed by the
first sentence of its text, cut at a word boundary. The same text always compresses to the
same line, so packs stay reproducible, and the ref lets the model fetch the whole item.
"""

from __future__ import annotations

import re

DEFAULT_CHARS = 140
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s")
_WS = re.compile(r"\s+")


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


_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+")


def focus_line(label: str, text: str, stems: list[str] | tuple[str, ...],
               max_chars: int = DEFAULT_CHARS) -> str:
    """Like `compress_line`, but the sentence kept is the one sharing most query terms
    (`stems`, matched as word prefixes so inflections count), the first on a tie: a one-line
    form of a search hit shows why it matched. The text's first word (a speaker's name, a
    kind) is kept in front when the chosen sentence is not the first."""
    flat = _WS.sub(" ", text).strip()
    sentences = [s for s in _SENTENCES.split(flat) if s] or [flat]
    if len(sentences) == 1 or not stems:
        return compress_line(label, text, max_chars)

    from agentstate.memory.search import stem_pattern

    pattern = stem_pattern(tuple(stems))

    def hits(sentence: str) -> int:
        return len(set(pattern.findall(sentence.casefold())))

    best = max(range(len(sentences)), key=lambda i: (hits(sentences[i]), -i))
    if best == 0:
        return compress_line(label, text, max_chars)
    lead = flat.split(" ", 1)[0]
    chosen = first_sentence(sentences[best], max_chars)
    prefix = f"{lead} … " if lead.endswith(":") else "… "
    return f"- [{label}] {prefix}{chosen}"
