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
