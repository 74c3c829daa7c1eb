"""The secret gate of an import: what a teammate's memory record must pass to be stored.

A record passes the gate a local write of the same fields passes. The write gate
(memory/write.py `remember`) scans the text, the key, the scope and the source, each alone;
here each field a teammate wrote freely is scanned alone the same way — those four, and the
principal, kind, creation time and validity, which a local write takes from the store but a
line in the shared folder spells out. The rest of a line cannot hold a secret:
records.parse_line refuses the whole folder over a key outside the schema, `id` and
`parent` are 32 hex digits, `rel` and `held` are one of two words, `v` and `type` constants.

Not the line itself (as until 2026-12): the line's JSON escapes change what the scanner
sees — a tab inside a password line is the two characters `\\t` there, and the rule that
needs whitespace misses it — and its sorted keys put one field's end beside the next
field's start, so a record was refused or not depending on what its neighbouring field
happened to end with, which no local write is judged by (docs/development.md, "The
first import against its floor", 2026-12-03 morning).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from agentstate.lazy_re import LazyPattern
from agentstate.safety import find_secrets

# Scanned alone, each of them: a short field's verdict is kept for the import's records.
SHORT_FIELDS = ("key", "scope", "source", "principal", "kind", "created", "valid_until")
# A time as agentstate writes one (store/clock.py: `2026-01-10T09:30:00.000000Z`). No rule
# of the scanner can match it — no letter but T and Z, no run of 16 token characters — so
# it is not scanned: each record of a real folder has a creation time of its own, and a
# scan of each was as long as the scan of the other short fields of the whole folder.
_TIME = LazyPattern(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


class RecordScan:
    """One import's secret gate. Most records of a folder share their scope, source,
    principal and kind, so a short field's value is scanned once per import (the scanner is
    a function of the text alone: the verdict is the same each time)."""

    def __init__(self) -> None:
        self._verdicts: dict[str, frozenset[str]] = {}

    def secret_kinds(self, data: dict[str, Any]) -> set[str]:
        """The kinds of secret found in the record's fields (empty: none)."""
        found = {finding.kind for finding in find_secrets(data["text"])}
        verdicts = self._verdicts
        for value in _SHORT(data):
            if value:
                verdict = verdicts.get(value)
                if verdict is None:
                    verdict = verdicts[value] = _verdict(value)
                if verdict:
                    found |= verdict
        return found


_SHORT = itemgetter(*SHORT_FIELDS)
_CLEAN: frozenset[str] = frozenset()


def _verdict(value: str) -> frozenset[str]:
    if len(value) == 27 and _TIME.fullmatch(value):
        return _CLEAN
    return frozenset(f.kind for f in find_secrets(value))
