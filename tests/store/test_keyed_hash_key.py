"""keyed_hash reads the store's key once, and again whenever the key file changes (the
in-process copy must never outlive a replaced or deleted key)."""

from __future__ import annotations

import hashlib
import hmac
import os

from agentstate.store.keys import KEY_FILE, PREFIX, keyed_hash


def _expected(key: bytes, text: str) -> str:
    return PREFIX + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def test_a_replaced_or_deleted_key_file_is_read_again(tmp_path):
    root = tmp_path / ".agentstate"
    root.mkdir()
    first = keyed_hash(root, "purged text")
    key = bytes.fromhex((root / KEY_FILE).read_text().strip())
    assert first == _expected(key, "purged text")
    assert keyed_hash(root, "purged text") == first  # the kept copy, same answer

    other = bytes(range(32))
    replacement = root / "new.key"
    replacement.write_text(other.hex() + "\n")
    os.replace(replacement, root / KEY_FILE)  # a new inode, as a restore writes it
    assert keyed_hash(root, "purged text") == _expected(other, "purged text")

    (root / KEY_FILE).unlink()
    fresh = keyed_hash(root, "purged text")
    new_key = bytes.fromhex((root / KEY_FILE).read_text().strip())
    assert new_key != other and fresh == _expected(new_key, "purged text")


def test_the_many_texts_hasher_gives_keyed_hash(tmp_path):
    from agentstate.store.keys import keyed_hasher

    root = tmp_path / ".agentstate"
    root.mkdir()
    hasher = keyed_hasher(root)
    for text in ("", "purged text", "ünïcode 路径"):
        assert hasher(text) == keyed_hash(root, text)
