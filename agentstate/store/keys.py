"""The store's secret key: keyed hashes of text that must not confirm a guess.

`memory_history` keeps a hash of each version's text so an audit can tell two versions
apart after a purge; an unsalted sha256 would let anyone holding the database check a guess
of the purged text with `sha256sum`. The hash is an HMAC under a per-store random key kept in
`.agentstate/history.key` (mode 0600, git-ignored, never in state.db): created by `init`, or
on first use by a store made before it existed. Deleting the key makes old hashes
uncheckable by anyone, which is harmless.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from pathlib import Path

KEY_FILE = "history.key"
PREFIX = "hmac-sha256:"


def store_key(root: Path) -> bytes:
    """The key of the store at `root` (the .agentstate folder), created when missing."""
    path = root / KEY_FILE
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (FileNotFoundError, ValueError):
        pass
    key = secrets.token_bytes(32)
    # O_EXCL: two processes creating it at once keep the first one's key.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex() + "\n")
    _ignore(root)
    return key


def _ignore(root: Path) -> None:
    """Stores made before the key existed: add it to their .gitignore."""
    ignore = root / ".gitignore"
    try:
        lines = ignore.read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    if KEY_FILE not in lines:
        with ignore.open("a", encoding="utf-8") as handle:
            handle.write(("" if not lines or lines[-1] == "" else "\n") + KEY_FILE + "\n")


# The key last read for each key file, with the file's identity when it was read (device,
# inode, size, mtime). One stat instead of open, read and close: a sync import hashes a
# history text per record, and reading the file each time cost ~10% of the import. A key
# file replaced or deleted since is read again (deleted: created anew, as before).
_READ: dict[Path, tuple[tuple[int, int, int, int], bytes]] = {}


def _cached_key(root: Path) -> bytes:
    path = root / KEY_FILE
    try:
        info = os.stat(path)
    except OSError:
        return store_key(root)
    identity = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
    known = _READ.get(path)
    if known is not None and known[0] == identity:
        return known[1]
    key = store_key(root)
    _READ[path] = (identity, key)
    return key


def keyed_hash(root: Path, text: str) -> str:
    key = _cached_key(root)
    return PREFIX + hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def keyed_hasher(root: Path) -> Callable[[str], str]:
    """keyed_hash with the key read once: for hashing many texts (gc collects thousands of
    events, and reading the key file for each cost more than the hashing)."""
    key = _cached_key(root)
    # hmac.digest: the same HMAC in one call into OpenSSL, without an HMAC object per text
    # (issue 24: a sync hashes one text per version).
    return lambda text: PREFIX + hmac.digest(key, text.encode("utf-8"), "sha256").hex()
