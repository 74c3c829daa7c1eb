"""The dense model's vectors made without numpy or `tokenizers`, for the few texts a
command or a hook needs embedded (a query, the events of one turn).

Loading the model the usual way (memory/dense.py, `Embedder`) costs ~0.35 s of CPU per
process — `import numpy` ~180 ms, `tokenizers` parsing the 1.8 MB tokenizer JSON ~130-160
ms, the 16 MB weight table ~20-30 ms — where a query's vector needs ~20 rows of the table
and a few hundred merge look-ups. This module does only that:

- the tokenizer is the model's byte-level BPE (SentencePiece style: a space becomes `▁`, a
  `▁` is prepended, characters missing from the vocabulary fall back to their UTF-8 bytes),
  kept in a compact form built once from the JSON — the single characters' ids and the
  merges as two sorted integer arrays (`pair → rank, new id`) — in the user cache directory
  the token counter uses (tokens/), keyed by the package's version and the JSON's size and
  time, checked by a SHA-256 of its own bytes. It loads in ~2 ms.
- the weight rows are read from the safetensors file through a memory map, only the
  query's tokens (float16 rows, averaged in Python).

The compact form is only built from a tokenizer whose configuration is the one described
here; any other (a new version of the package with another normaliser, say) gives `None`
and the caller keeps `tokenizers`. tests/memory/test_dense_static.py compares token ids
and vectors with `tokenizers` + numpy on a few thousand texts.
"""

from __future__ import annotations

import struct
from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

SPACE = "\u2581"  # SentencePiece's word mark
# A text's vector averages at most this many token rows' worth of characters: a longer text
# is cut (an event of ~700 characters has ~200 tokens; a pasted log of 100 KB would cost
# seconds here, and `tokenizers` embeds such texts in the batch path anyway).
MAX_CHARS = 20_000
# The compact form's layout; a change of layout is a new name, never a misread file.
FORMAT = 1


@dataclass(frozen=True)
class _Bpe:
    """The compact tokenizer: single characters' ids, merges as sorted `a * size + b` keys
    with `rank * size + new id` values, the byte-fallback ids, and the vocabulary size."""

    chars: dict[str, int]
    keys: Any   # array('q'), sorted
    values: Any  # array('q')
    size: int
    unknown: int

    def merge(self, a: int, b: int) -> int | None:
        """rank * size + new id of the merge of `a` then `b`, None when they do not merge."""
        key = a * self.size + b
        keys = self.keys
        i = bisect_left(keys, key)
        if i < len(keys) and keys[i] == key:
            return int(self.values[i])
        return None

    def symbols(self, text: str) -> list[int]:
        """The normalised text's characters as ids (bytes where a character is unknown)."""
        ids: list[int] = []
        chars = self.chars
        for ch in SPACE + text.replace(" ", SPACE):
            found = chars.get(ch)
            if found is not None:
                ids.append(found)
                continue
            for byte in ch.encode("utf-8"):
                ids.append(chars.get(f"<0x{byte:02X}>", self.unknown))
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`, as the model's tokenizer makes them (no special tokens):
        the pair of lowest rank merges first, the leftmost of equal pairs first."""
        import heapq

        if not text:
            return []  # the normaliser prepends nothing to an empty text
        ids = self.symbols(text)
        n = len(ids)
        nxt = [*range(1, n), -1]
        prev = list(range(-1, n - 1))
        alive = [True] * n
        heap = [(v // self.size, i, ids[i], ids[i + 1]) for i in range(n - 1)
                if (v := self.merge(ids[i], ids[i + 1])) is not None]
        heapq.heapify(heap)
        while heap:
            _, i, a, b = heapq.heappop(heap)
            j = nxt[i]
            if not alive[i] or ids[i] != a or j < 0 or ids[j] != b:
                continue  # a stale entry: one of its symbols merged since
            new = int(self.merge(a, b) or 0) % self.size
            ids[i], alive[j] = new, False
            k = nxt[i] = nxt[j]
            if k >= 0:
                prev[k] = i
                if (v := self.merge(new, ids[k])) is not None:
                    heapq.heappush(heap, (v // self.size, i, new, ids[k]))
            if (p := prev[i]) >= 0 and (v := self.merge(ids[p], new)) is not None:
                heapq.heappush(heap, (v // self.size, p, ids[p], new))
        return [ids[i] for i in range(n) if alive[i]]


def _supported(config: dict[str, Any]) -> bool:
    """Whether the tokenizer JSON describes the BPE this module implements."""
    model = config.get("model") or {}
    norm = config.get("normalizer") or {}
    steps = norm.get("normalizers") or []
    kinds = [(s.get("type"), s.get("prepend") or (s.get("pattern") or {}).get("String"))
             for s in steps]
    return (model.get("type") == "BPE" and model.get("byte_fallback") is True
            and not model.get("ignore_merges") and model.get("dropout") is None
            and not model.get("continuing_subword_prefix")
            and not model.get("end_of_word_suffix")
            and config.get("pre_tokenizer") is None
            and kinds == [("Prepend", SPACE), ("Replace", " ")]
            and steps[1].get("content") == SPACE)


def _build(tokenizer: Path) -> _Bpe | None:
    """The compact form, from the tokenizer JSON (~0.4 s, once per version)."""
    import json
    from array import array

    try:
        config = json.loads(tokenizer.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not _supported(config):
        return None
    vocab: dict[str, int] = config["model"]["vocab"]
    size = max(vocab.values()) + 1
    pairs: dict[int, int] = {}
    for rank, merge in enumerate(config["model"]["merges"]):
        a, b = merge.split(" ", 1) if isinstance(merge, str) else merge
        new = vocab.get(a + b)
        if a in vocab and b in vocab and new is not None:
            pairs.setdefault(vocab[a] * size + vocab[b], rank * size + new)
    keys = sorted(pairs)
    chars = {t: i for t, i in vocab.items() if len(t) == 1 or
             (len(t) == 6 and t.startswith("<0x") and t.endswith(">"))}
    unknown = vocab.get(config["model"].get("unk_token") or "", 0)
    return _Bpe(chars, array("q", keys), array("q", [pairs[k] for k in keys]), size, unknown)


def _cache_path(tokenizer: Path, version: str) -> Path:
    from agentstate.tokens import cache_dir

    info = tokenizer.stat()
    name = f"{tokenizer.stem}-{version}-{info.st_size}-{info.st_mtime_ns}-v{FORMAT}.bpe"
    return cache_dir() / name.replace("/", "_")


def load_bpe(tokenizer: Path, version: str) -> _Bpe | None:
    """The compact tokenizer for this file and package version: from the cache when it is
    there and whole, else built from the JSON and cached. None when the tokenizer is not
    the kind this module implements (or unreadable)."""
    import hashlib
    import marshal
    import os
    from array import array

    try:
        path = _cache_path(tokenizer, version)
    except OSError:
        return None
    try:
        raw = path.read_bytes()
        if hashlib.sha256(raw[32:]).digest() == raw[:32]:
            chars, keys, values, size, unknown = marshal.loads(raw[32:])
            k, v = array("q"), array("q")
            k.frombytes(keys)
            v.frombytes(values)
            return _Bpe(chars, k, v, size, unknown)
    except (OSError, ValueError, EOFError, TypeError):
        pass  # missing, damaged or foreign: built again below
    bpe = _build(tokenizer)
    if bpe is None:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = marshal.dumps((bpe.chars, bpe.keys.tobytes(), bpe.values.tobytes(),
                              bpe.size, bpe.unknown))
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(hashlib.sha256(blob).digest() + blob)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home: built again next time
    return bpe


class _Rows:
    """The float16 weight table of a safetensors file, read a row at a time."""

    def __init__(self, weights: Path, name: str, dim: int) -> None:
        import json
        import mmap

        with weights.open("rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        (length,) = struct.unpack_from("<Q", self.map, 0)
        header = json.loads(bytes(self.map[8:8 + length]))
        entry = header[name]
        if entry["dtype"] != "F16" or entry["shape"][1] != dim:
            raise ValueError(f"{name}: {entry['dtype']} {entry['shape']}")
        self.start = 8 + length + entry["data_offsets"][0]
        self.count = entry["shape"][0]
        self.row = struct.Struct(f"<{dim}e")

    def get(self, token: int) -> tuple[float, ...]:
        token = min(max(token, 0), self.count - 1)  # as the numpy path clips
        return self.row.unpack_from(self.map, self.start + token * self.row.size)


class StaticModel:
    """Text → L2-normalised vector, as `dense.Embedder` makes it, from the compact
    tokenizer and the memory-mapped rows (plain floats, no numpy)."""

    def __init__(self, bpe: _Bpe, rows: _Rows, model: str) -> None:
        self.bpe, self.rows, self.model = bpe, rows, model

    def vector(self, text: str) -> list[float]:
        """The text's vector; all zeros when none of its tokens is known (or it is empty)."""
        import math

        dim = self.rows.row.size // 2
        rows = [self.rows.get(token) for token in self.bpe.encode(text[:MAX_CHARS])]
        # Column sums over the rows (the mean's division cancels in the normalisation).
        total: list[float] = (list(map(sum, zip(*rows, strict=True))) if rows
                              else [0.0] * dim)
        norm = math.sqrt(math.fsum(x * x for x in total))
        return [x / norm for x in total] if norm > 0 else total

    def blob(self, text: str) -> bytes:
        """The vector as stored (memory/dense_codec.py), like the numpy path's."""
        from agentstate.memory.dense_codec import encode

        return encode(self.vector(text))


@lru_cache(maxsize=2)
def load_static(weights: Path, tokenizer: Path, version: str, model: str, tensor: str,
                dim: int) -> StaticModel | None:
    """The numpy-free model for these files, once per process; None when it cannot be
    made (an unsupported tokenizer, an unreadable table)."""
    bpe = load_bpe(tokenizer, version)
    if bpe is None:
        return None
    try:
        rows = _Rows(weights, tensor, dim)
    except (OSError, ValueError, KeyError, IndexError, struct.error):
        return None
    return StaticModel(bpe, rows, model)
