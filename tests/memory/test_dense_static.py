"""The numpy-free reader of the dense model (memory/dense_static.py): the same token ids as
the package's tokenizer, the same vectors as the numpy path, a compact tokenizer kept per
package version (a damaged copy rebuilt, a tokenizer of another kind declined)."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest

from agentstate.memory import dense_codec, dense_model, dense_static


def _texts() -> list[str]:
    rng = random.Random(23)
    alphabet = "abcdefghijklmnopqrstuvwxyz      .,!?'\"0123456789\n\t-_éñü中文🎉\u2581"
    made = ["", " ", "  ", "a", "aaaaaaa", "aa aa aaa", "    indented", "trailing  ",
            "the board game where you have to find the imposter",
            "Traceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad",
            "emoji 🎉🎉 and 中文 and naïve café", "\u2581already marked", "x" * 300]
    made += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 160)))
             for _ in range(1500)]
    words = "the a of to cello lessons dog party remember name sister snacks".split()
    made += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40)))
             for _ in range(300)]
    return made


@pytest.fixture(scope="module")
def files():
    found = dense_model._package_files()
    assert not isinstance(found, str), found
    return found


def test_token_ids_are_the_packages_tokenizers(embedder, files):
    _, tokenizer, version = files
    bpe = dense_static.load_bpe(tokenizer, version)
    assert bpe is not None
    texts = _texts()
    theirs = [e.ids for e in embedder.tokenizer.encode_batch(texts, add_special_tokens=False)]
    wrong = [(t, bpe.encode(t), ids) for t, ids in zip(texts, theirs, strict=True)
             if bpe.encode(t) != ids]
    assert not wrong, wrong[:3]


def test_vectors_are_the_numpy_paths(embedder, files):
    weights, tokenizer, version = files
    static = dense_static.load_static(weights, tokenizer, version, embedder.model,
                                      "embedding.weight", dense_model.DIM)
    assert static is not None and static.model == embedder.model
    texts = _texts()[:400]
    ours = dense_codec.decode_rows([static.blob(t) for t in texts], dense_model.DIM)
    theirs = dense_codec.decode_rows(dense_codec.encode_rows(embedder.encode(texts)),
                                     dense_model.DIM)
    assert np.abs(ours - theirs).max() < 2e-3
    assert not any(dense_codec.decode(static.blob("")))  # nothing known: all zeros


def test_the_compact_tokenizer_is_kept_per_version_and_rebuilt_when_damaged(
        tmp_path, monkeypatch, files):
    _, tokenizer, version = files
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "cache"))
    first = dense_static.load_bpe(tokenizer, version)
    kept = sorted((tmp_path / "cache").glob("*.bpe"))
    assert first is not None and len(kept) == 1 and version in kept[0].name
    # Another version of the package is another file: never read from this one.
    assert dense_static.load_bpe(tokenizer, version + ".post9") is not None
    assert len(list((tmp_path / "cache").glob("*.bpe"))) == 2
    # A damaged copy is ignored (its digest does not match) and written again.
    raw = bytearray(kept[0].read_bytes())
    raw[-10] ^= 0xFF
    kept[0].write_bytes(bytes(raw))
    again = dense_static.load_bpe(tokenizer, version)
    assert again is not None and again.encode("cello lessons") == first.encode("cello lessons")
    assert kept[0].read_bytes() != bytes(raw)


def test_a_tokenizer_of_another_kind_is_declined(tmp_path, monkeypatch, files):
    weights, tokenizer, version = files
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "cache"))
    config = json.loads(tokenizer.read_text(encoding="utf-8"))
    config["normalizer"]["normalizers"].append({"type": "Lowercase"})
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(config), encoding="utf-8")
    assert dense_static.load_bpe(other, version) is None
    copied = tmp_path / "weights.safetensors"
    shutil.copy(weights, copied)
    assert dense_static.load_static(copied, other, version, "m", "embedding.weight",
                                    dense_model.DIM) is None
