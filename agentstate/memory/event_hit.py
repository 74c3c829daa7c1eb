"""An event found by a search (`EventHit`): what the lexical search, the dense fusion and
the context pack pass around."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EventHit:
    """One event matching a search: its ref, run, kind, text, source, time and score 0..1."""

    ref: str
    run: str
    kind: str
    text: str
    source: str
    ts: str
    score: float
