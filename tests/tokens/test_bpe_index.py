"""The BPE index answers rank look-ups exactly as the decoded vocabulary does."""

from __future__ import annotations

import random

import pytest

from agentstate import tokens
from agentstate.errors import InvalidInput
from agentstate.tokens.bpe import BpeIndex


@pytest.fixture(scope="module")
def index() -> BpeIndex:
    return BpeIndex(tokens.bundled_bpe_path(), tokens.CL100K_SHA256)


def test_index_is_the_whole_vocabulary(index):
    vocab = tokens._vocabulary()
    assert len(index) == len(vocab)
    assert index.decoded() == vocab
    assert index.longest() == max(map(len, vocab))


def test_ranks_of_tokens_and_non_tokens(index):
    vocab = tokens._vocabulary()
    rng = random.Random(5)
    chosen = rng.sample(sorted(vocab), 3000)
    # Non-tokens near tokens: extended, cut, and random bytes (also invalid UTF-8).
    others = [t + b"\xff" for t in chosen[:500]] + [t[:-1] for t in chosen[:500]]
    others += [rng.randbytes(rng.randrange(1, 9)) for _ in range(2000)]
    wanted = set(chosen) | set(others) | {bytes([b]) for b in range(256)}
    assert index.ranks_of(wanted) == {t: vocab[t] for t in wanted if t in vocab}
    assert index.ranks_of([]) == {}


def test_a_file_with_the_wrong_hash_is_refused(tmp_path):
    damaged = tmp_path / "cl100k_base.tiktoken"
    raw = bytearray(open(tokens.bundled_bpe_path(), "rb").read())
    raw[10] ^= 1
    damaged.write_bytes(bytes(raw))
    with pytest.raises(InvalidInput, match="SHA-256"):
        BpeIndex(str(damaged), tokens.CL100K_SHA256)
