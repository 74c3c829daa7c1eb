"""Which memory versions' user-written fields the secret scanner has already passed, so a
text is scanned once (issue 24: an export scanned every line it wrote, though the write
gate had scanned the same text, key, scope and source when the version was stored).

A digest is a keyed hash (the store's key, store/keys.py: a short text cannot be guessed
back from it) of the scanner's rules (its source file's hash) and the four fields. Written
where the scanner ran and passed: `remember` and `correct` (the write gate), an import of
a teammate's record (sync/fields_scan.py scans its fields first). Read by the export
(sync/export.py), which scans a line whose version has no digest — one stored by other
means (a direct insert, an older store) — and keeps that digest once the line passes. A
changed scanner starts a new set: what an older one passed is scanned again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING

from agentstate.distribution import __version__

if TYPE_CHECKING:
    from agentstate.store.db import Store


@cache
def scanner_fingerprint() -> str:
    """The secret scanner's rules as they are in this installation: its module's hash (the
    release's number when the source cannot be read)."""
    from agentstate import secret_scan

    try:
        with open(secret_scan.__file__, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except (OSError, TypeError):
        return __version__


def digester(store: Store) -> Callable[[str, str | None, str, str], str]:
    """(text, key, scope, source) → the digest (the key file read once)."""
    from agentstate.store.keys import keyed_hasher

    hasher = keyed_hasher(store.root)
    # `_message` with its fixed head joined once: an export asks for one digest a version.
    head = _message("", None, "", "")[:-3]
    return lambda text, key, scope, source: hasher(f"{head}{text}\0{key or ''}\0{scope}\0"
                                                   f"{source}")


def _message(text: str, key: str | None, scope: str, source: str) -> str:
    return "\0".join(("scanned", scanner_fingerprint(), text, key or "", scope, source))


def scanned_digests(store: Store) -> set[str]:
    """Every digest kept (one read: an export asks about thousands of versions)."""
    return {row[0] for row in store.conn.execute("SELECT digest FROM scanned_texts")}


def mark_scanned(store: Store, digests: Iterable[str]) -> None:
    store.conn.executemany("INSERT OR IGNORE INTO scanned_texts (digest) VALUES (?)",
                           ((d,) for d in digests))


def _fields_digest(store: Store, text: str, key: str | None, scope: str, source: str) -> str:
    """One version's digest (the key comes from the process's copy, one stat, not a read of
    the key file)."""
    from agentstate.store.keys import keyed_hash

    return keyed_hash(store.root, _message(text, key, scope, source))


def mark_fields_scanned(store: Store, text: str, key: str | None, scope: str,
                        source: str) -> None:
    """After the scanner passed a version's fields, as they are stored."""
    mark_scanned(store, [_fields_digest(store, text, key, scope, source)])


def forget_fields_scanned(store: Store, text: str, key: str | None, scope: str,
                          source: str) -> None:
    """A purge takes the version's digest too: nothing derived from a purged text is kept
    beyond the purge's own audit hash."""
    store.conn.execute("DELETE FROM scanned_texts WHERE digest = ?",
                       (_fields_digest(store, text, key, scope, source),))
