"""The one token counter: offline, hash-checked, calibrated, cached safely."""

from __future__ import annotations

import hashlib

import pytest

from agentstate import tokens
from agentstate.config import TokenSettings, parse_settings
from agentstate.errors import InvalidInput
from agentstate.tokens import TokenCounter, counter_for


def test_counts_with_bundled_encoding():
    counter = TokenCounter()
    assert counter.count("") == 0
    assert counter.count("hello world") == 2
    assert counter.count("你好，世界") > 0


def test_calibration_rounds_up():
    assert TokenCounter(calibration=1.15).count("hello world") == 3  # ceil(2 * 1.15)


@pytest.mark.parametrize("value", ["abc", 0, 50])
def test_bad_calibration_is_refused(value):
    with pytest.raises(InvalidInput, match=r"\[tokens\] calibration must be a number between"):
        parse_settings({"tokens": {"calibration": value}})


def test_counter_follows_the_token_settings():
    counter = counter_for(parse_settings({"tokens": {"calibration": 1.15}}).tokens)
    assert counter == TokenCounter("cl100k_base", 1.15)
    assert counter_for(TokenSettings()) == TokenCounter()


def test_a_counter_for_the_settings_counts_as_the_plain_counter(tmp_path, monkeypatch):
    """`counter_for` looks the count memo up once (a pack asks for hundreds of counts):
    its counts are the plain counter's, calibrated; another encoding keeps its encoder."""
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path))
    texts = ["hello world", "", "你好，世界", "def f(x):\n    return x * 2\n"]
    bound = counter_for(parse_settings({"tokens": {"calibration": 1.15}}).tokens)
    assert bound.memo is not None
    assert bound.count_many(texts) == TokenCounter(calibration=1.15).count_many(texts)
    assert bound.count("hello world") == 3
    with pytest.raises(InvalidInput):
        counter_for(TokenSettings(encoding="no_such_encoding")).count("x")


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(InvalidInput):
        TokenCounter(encoding="no_such_encoding").count("x")


def test_damaged_cache_is_ignored_and_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path))
    first = tokens._cached_ranks()
    (cache,) = tmp_path.glob("*.marshal")
    raw = bytearray(cache.read_bytes())
    raw[100] ^= 0xFF  # flip a byte inside the payload: the digest no longer matches
    cache.write_bytes(bytes(raw))
    rebuilt = tokens._cached_ranks()
    assert rebuilt == first
    repaired = cache.read_bytes()
    assert hashlib.sha256(repaired[32:]).digest() == repaired[:32]


def test_the_vocabulary_is_decoded_without_leaving_copies_in_a_shared_cache(tmp_path,
                                                                             monkeypatch):
    """The ranks are tiktoken's own for the file, and reading them leaves no copy of the
    1.7 MB file in tiktoken's cache folder (a new one per install, in /tmp by default)."""
    from tiktoken.load import load_tiktoken_bpe

    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "ours"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "shared"))
    ranks = tokens._cached_ranks()
    assert not (tmp_path / "shared").exists()
    assert list((tmp_path / "ours").iterdir())  # our own marshal copy, in our folder
    assert ranks == load_tiktoken_bpe(tokens.bundled_bpe_path(),
                                      expected_hash=tokens.CL100K_SHA256)
