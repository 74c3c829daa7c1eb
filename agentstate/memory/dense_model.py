"""The dense model: where the installed package keeps its files, loading them
(`load_embedder`, or the numpy-free reader for a few texts), the model's name@version, and
which signal searches use here (`signal`, doctor's line).

The model is a static embedding (WordLlama's `l2_supercat_256`: one 256-dimension vector
per token of a 32,000-token vocabulary, averaged over a text's tokens) read from the files
the `wordllama` package installs — weights and tokenizer ship inside its wheel, so nothing
is ever downloaded. It is optional (the `dense` extra): without it `available()` says why
and every caller keeps the lexical path. Why this model (measured in docs/evaluation.md
and pyproject.toml): on the LoCoMo dev split it ranks an evidence turn in the top 10 for
41% of questions (a 64-dimension static model: 25%; a 4-bit e5-small: better, but ~58 ms
of CPU per text against 0.3 ms here).

The files are read with `tokenizers` and `safetensors` (the package's own dependencies)
rather than through `wordllama.WordLlama.load`: the package's loader imports pydantic and
its training code (~1.2 s on these machines) and looks for the tokenizer where the wheel
does not put it (it then tries to download it). What it computes is the same: the mean of
the token vectors, normalised (a test compares the two).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentstate.memory.dense_static import StaticModel

PACKAGE = "wordllama"
CONFIG = "l2_supercat"
DIM = 256


@dataclass(frozen=True)
class Signal:
    """Which retrieval signal is active, and why (doctor prints `detail`)."""

    dense: bool
    model: str          # name@version, "" without the package
    detail: str


class Embedder:
    """The installed static model: text → L2-normalised float32 vectors."""

    def __init__(self, tokenizer: Any, table: Any, model: str) -> None:
        self.tokenizer = tokenizer
        self.table = table  # (vocabulary, DIM) float16
        self.model = model

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        top = self.table.shape[0] - 1
        for i, enc in enumerate(encoded):
            ids = np.clip(np.asarray(enc.ids, dtype=np.int64), 0, top)
            if ids.size:
                out[i] = self.table[ids].astype(np.float32).mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _package_files() -> tuple[Any, Any, str] | str:
    """(weights path, tokenizer path, version), or why the model cannot be used."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return (f"lexical search only: the dense signal needs the `{PACKAGE}` package "
                "(pip install 'agentstate-cli[dense]')")
    root = Path(next(iter(spec.submodule_search_locations)))
    weights = root / "weights" / f"{CONFIG}_{DIM}.safetensors"
    tokenizer = root / "tokenizers" / f"{CONFIG}_tokenizer_config.json"
    missing = [p.name for p in (weights, tokenizer) if not p.is_file()]
    if missing:
        return f"lexical search only: {PACKAGE} is installed without {', '.join(missing)}"
    return weights, tokenizer, _version(root)


def _version(root: Any) -> str:
    """The installed package's version, from its dist-info folder's name beside it (what
    importlib.metadata would find, without its ~50-100 ms import on every command); the
    metadata's own answer where the folder is not there (an editable or unusual install)."""
    found = sorted(root.parent.glob(f"{PACKAGE}-*.dist-info"))
    if len(found) == 1:
        return found[0].name[len(PACKAGE) + 1:-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"


@lru_cache(maxsize=2)
def _files(package: str) -> tuple[Any, Any, str] | str:
    """`_package_files`, once per process (keyed by the package name, which tests change)."""
    return _package_files()


def _model_name(number: str) -> str:
    return f"{PACKAGE}-{CONFIG}-{DIM}@{number}"


def current_model() -> str | None:
    """The installed model's name@version, without loading it; None without the package."""
    found = _files(PACKAGE)
    return None if isinstance(found, str) else _model_name(found[2])


def load_static_model() -> StaticModel | None:
    """The numpy-free reader of the installed model (memory/dense_static.py), for the few
    texts a command embeds; None without the package or where it cannot be made."""
    found = _files(PACKAGE)
    if isinstance(found, str):
        return None
    from agentstate.memory.dense_static import load_static

    weights, tokenizer, number = found
    return load_static(weights, tokenizer, number, _model_name(number), "embedding.weight",
                       DIM)


@lru_cache(maxsize=1)
def load_embedder() -> Embedder | None:
    """The model, loaded once per process; None when it is not installed or unreadable."""
    found = _package_files()
    if isinstance(found, str):
        return None
    weights, tokenizer_path, number = found
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        table = load_file(str(weights))["embedding.weight"]
    except Exception:  # a broken install: the lexical path, and doctor says why
        return None
    return Embedder(tokenizer, table, _model_name(number))


def signal() -> Signal:
    """Which signal searches use here (doctor's line)."""
    found = _package_files()
    if isinstance(found, str):
        return Signal(False, "", found)
    embedder = load_embedder()
    if embedder is None:
        return Signal(False, "", f"lexical search only: {PACKAGE}'s model files do not load")
    return Signal(True, embedder.model,
                  f"lexical + dense ({embedder.model}, fused by rank)")
