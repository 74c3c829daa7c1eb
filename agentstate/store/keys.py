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


def keyed_hash(root: Path, text: str) -> str:
    return keyed_hasher(root)(text)


def keyed_hasher(root: Path) -> Callable[[str], str]:
    """keyed_hash with the key read once: for hashing many texts (gc collects thousands of
    events, and reading the key file for each cost more than the hashing)."""
    key = store_key(root)
    return lambda text: PREFIX + hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
