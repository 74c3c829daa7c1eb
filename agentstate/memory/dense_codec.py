"""How a dense vector is stored: 8-bit integers with one scale per vector (m060).

A stored vector is 4 + DIM bytes: the scale (little-endian float32, the largest magnitude
divided by 127) then DIM signed bytes, each component rounded to the nearest multiple of the
scale. Why (issue 24, a store near its content): the float16 vectors were 512 bytes per event,
0.59 MB of the 2.07 MB that 1,000 events added to a store with the dense extra; these are 260,
and the rankings they make are measured in docs/architecture.md ("The store's size"). The
scale is per vector, so a vector whose components are all small keeps its precision.

Two paths make the same bytes up to a rounding at a half (tests/memory/test_dense_codec.py):
plain Python for the few texts a hook or a command embeds (no numpy), numpy for a batch and
for the matrix a search multiplies (decoded to float32 once, kept in memory).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any

LEVELS = 127  # the largest magnitude becomes ±127; -128 is never written


@lru_cache(maxsize=4)
def _layout(dim: int) -> struct.Struct:
    return struct.Struct(f"<f{dim}b")


def encode(values: list[float]) -> bytes:
    """One vector as stored (all zeros stays all zeros, with a zero scale)."""
    top = max(map(abs, values), default=0.0)
    # The scale as float32 first, so the components are divided by what is stored.
    scale = struct.unpack("<f", struct.pack("<f", top / LEVELS))[0] if top > 0 else 0.0
    if scale == 0.0:
        return _layout(len(values)).pack(0.0, *([0] * len(values)))
    return _layout(len(values)).pack(
        scale, *(max(-LEVELS, min(LEVELS, round(x / scale))) for x in values))


def dot(query: list[float], blob: bytes) -> float:
    """The query's product with one stored vector (no numpy). Vectors of another length
    (another model's width) are never compared: `map` would stop at the shorter one and
    score a prefix without a word, so a mismatch is an error, not a score."""
    import operator

    if len(blob) - 4 != len(query):
        raise ValueError(f"a stored vector of {len(blob) - 4} dimensions against a query of "
                         f"{len(query)}: vectors of different models are never compared")
    scale, *ints = _layout(len(blob) - 4).unpack(blob)
    return scale * sum(map(operator.mul, query, ints))


def decode(blob: bytes) -> list[float]:
    """One stored vector's components."""
    scale, *ints = _layout(len(blob) - 4).unpack(blob)
    return [scale * q for q in ints]


def encode_rows(matrix: Any) -> list[bytes]:
    """Each row of a float matrix (numpy) as stored, the same bytes as `encode`."""
    import numpy as np

    rows = np.asarray(matrix, dtype=np.float64)
    top = np.abs(rows).max(axis=1) if rows.size else np.zeros(len(rows))
    scales = (top / LEVELS).astype("<f4")
    safe = np.where(scales > 0, scales, 1).astype(np.float64)[:, None]
    ints = np.clip(np.rint(rows / safe), -LEVELS, LEVELS).astype(np.int8)
    ints[scales == 0] = 0
    return [scale.tobytes() + row.tobytes() for scale, row in zip(scales, ints, strict=True)]


def split_rows(blobs: list[bytes], dim: int) -> tuple[Any, Any]:
    """Stored vectors as their integers (n x dim, int8, a view on the joined bytes) and
    their scales (n x 1, float32): the components are the product (numpy)."""
    import numpy as np

    raw = np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), 4 + dim)
    return raw[:, 4:].view(np.int8), np.ascontiguousarray(raw[:, :4]).view("<f4")


def decode_rows(blobs: list[bytes], dim: int) -> Any:
    """Stored vectors as a float32 matrix, one row each (numpy)."""
    import numpy as np

    ints, scales = split_rows(blobs, dim)
    return np.multiply(ints, scales, dtype=np.float32)


def from_float16(blob: bytes) -> bytes:
    """A vector stored before m060 (little-endian float16) in this form."""
    return encode(list(struct.unpack(f"<{len(blob) // 2}e", blob)))
