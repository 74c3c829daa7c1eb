"""Random ids (store/clock.py IdSource): each byte of randomness maps to the alphabet
letter `byte & 31` names, so every letter is equally likely."""

from __future__ import annotations

import os
from collections import Counter

from agentstate.store import clock
from agentstate.store.clock import ID_LENGTH, IdSource


def test_each_byte_becomes_the_letter_its_low_five_bits_name(monkeypatch):
    every = bytes(range(256))
    for start in range(0, 256, ID_LENGTH):
        chunk = every[start:start + ID_LENGTH]
        monkeypatch.setattr(os, "urandom", lambda n, chunk=chunk: chunk)
        assert IdSource().new() == "".join(clock._ALPHABET[b & 31] for b in chunk)


def test_every_letter_is_drawn_as_often_from_all_bytes():
    letters = Counter(bytes(range(256)).translate(clock._BY_BYTE).decode("ascii"))
    assert set(letters) == set(clock._ALPHABET) and set(letters.values()) == {8}


def test_an_id_has_its_length_and_letters():
    ids = {IdSource().new() for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) == ID_LENGTH and set(i) <= set(clock._ALPHABET) for i in ids)
