"""Ranks of chosen byte strings, read straight from the BPE file without decoding it.

The file is ~100k lines of `base64(token) rank`. Decoding every line (what tiktoken's loader
does) costs ~0.13–0.3 s; a process with an empty cache only needs the ranks of the byte
strings inside its texts' windows, a few thousand at most. Splitting the file's text and
keying a dict by the base64 *text* of each token takes a fraction of that, and a look-up then
base64-encodes the wanted byte string instead. Standard base64 is canonical (one encoding per
byte string, padded), so a wanted string is in the vocabulary exactly when its encoding is a
key. The file's bytes are checked against the published SHA-256 before any of them is used.
"""

from __future__ import annotations

import hashlib
from binascii import a2b_base64, b2a_base64
from collections.abc import Iterable

from agentstate.errors import InvalidInput


class BpeIndex:
    """The vocabulary of one verified BPE file, keyed by base64 text."""

    def __init__(self, path: str, expected_sha256: str) -> None:
        with open(path, "rb") as fh:
            data = fh.read()
        if hashlib.sha256(data).hexdigest() != expected_sha256:
            raise InvalidInput(f"BPE file {path} does not match its published SHA-256")
        # str, not bytes: splitting and hashing ASCII text is about twice as fast here.
        parts = data.decode("ascii").split()
        self._ranks: dict[str, str] = dict(zip(parts[::2], parts[1::2], strict=True))
        self._longest = 0

    def __len__(self) -> int:
        return len(self._ranks)

    def ranks_of(self, wanted: Iterable[bytes]) -> dict[bytes, int]:
        """Ranks of those `wanted` byte strings that are tokens."""
        ranks = self._ranks
        found: dict[bytes, int] = {}
        for token in wanted:
            rank = ranks.get(b2a_base64(token, newline=False).decode("ascii"))
            if rank is not None:
                found[token] = int(rank)
        return found

    def longest(self) -> int:
        """Length in bytes of the longest token."""
        if not self._longest:
            # Only keys as long as the longest can decode to the longest token (4 characters
            # per 3 bytes, padding aside): decode just those.
            width = max(map(len, self._ranks))
            self._longest = max(len(a2b_base64(k)) for k in self._ranks if len(k) == width)
        return self._longest

    def decoded(self) -> dict[bytes, int]:
        """The whole vocabulary, decoded (what the full encoder needs)."""
        return {a2b_base64(k): int(r) for k, r in self._ranks.items()}
