"""Which memory versions' user-written fields the secret scanner has already passed, so a
text is scanned once (issue 24: an export scanned every line it wrote, though the write
gate had scanned the same text, key, scope and source when the version was stored).

The mark is a column of the version's own row (`scanned_with`, m058): the fingerprint of
the scanner's rules that passed its four fields. Set where the scanner ran and passed:
`remember` and `correct` (the write gate), an import of a teammate's record
(sync/fields_scan.py scans its fields first), an export's own scan of a version that had
no mark. Read by the export in the statement that reads the versions (a version whose
mark is not this scanner's is scanned). A changed scanner has another fingerprint: what an
older one passed is scanned again. A change to any of the four fields drops the mark
(m058's trigger), so a mark never vouches for a text it did not see; it holds nothing
derived from the text, and a purge, which empties the text, drops it too.

Until m058 the same answer was a keyed digest of the four fields (m041's `scanned_texts`),
recomputed by every export for every version it read: 1.5 µs a version, ~10% of a first
export. m058 empties that table, and nothing writes to it since.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from agentstate.distribution import __version__

if TYPE_CHECKING:
    from agentstate.store.db import Store

MARK_LENGTH = 16  # hex digits of the fingerprint kept on each row


def scanner_modules() -> tuple[ModuleType, ...]:
    """The modules whose source is the scanner's rules: the scan itself and the table of
    known formats it runs. A rule moved into another module must be named here, or a change
    to it would leave what the old rules passed marked as scanned
    (tests/memory/test_scanner_mark.py checks that every agentstate module secret_scan
    imports is listed or is plumbing)."""
    from agentstate import secret_formats, secret_scan

    return (secret_scan, secret_formats)


@cache
def scanner_fingerprint() -> str:
    """The secret scanner's rules as they are in this installation: the hash of its
    modules' source (the release's number when a source cannot be read)."""
    digest = hashlib.sha256()
    try:
        for module in scanner_modules():
            with open(module.__file__ or "", "rb") as handle:
                digest.update(module.__name__.encode() + b"\0" + handle.read() + b"\0")
    except (OSError, TypeError):
        return __version__
    return digest.hexdigest()


def scanner_mark() -> str:
    """What `scanned_with` holds for a version this scanner passed."""
    return hashlib.sha256(scanner_fingerprint().encode()).hexdigest()[:MARK_LENGTH]


def mark_rows_scanned(store: Store,
                      scanned: Iterable[tuple[int, str, str | None, str, str]]) -> None:
    """After this scanner passed (row, text, key, scope, source) of versions: each row is
    marked only if its fields are still the ones scanned (a purge or an edit in between
    leaves it unmarked, to be scanned again)."""
    mark = scanner_mark()
    store.conn.executemany(
        "UPDATE memories SET scanned_with = ? WHERE row = ? AND text IS ? AND key IS ? AND "
        "scope IS ? AND source IS ?", ((mark, *fields) for fields in scanned))

