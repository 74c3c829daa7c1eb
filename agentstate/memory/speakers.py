"""The speaker field of a transcript line ("Kate: …") and the preference for the turns of
the speakers a question names (`prefer_speakers`)."""

from __future__ import annotations

import re
from dataclasses import replace

from agentstate.memory.event_hit import EventHit
from agentstate.memory.terms import split_query

# Who said or did something is a field of the event: a transcript line starts with its
# speaker ("Kate: …"), one to three capitalised words before a colon.
_SPEAKER = re.compile(r"^\s*([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}):\s")
# A question that names some of the speakers seen among the hits prefers their turns: the
# others' hits weigh this much (in a conversation about Kate, "Hello Kate." lines of the
# other speaker match her name as well as her own turns do).
OTHER_SPEAKER_WEIGHT = 0.5


def speaker_of(text: str) -> str:
    """The speaker field of an event text ("" when the text does not start with one)."""
    match = _SPEAKER.match(text or "")
    return match.group(1) if match else ""


def prefer_speakers(query: str, hits: list[EventHit]) -> tuple[list[EventHit], list[str]]:
    """The hits reordered so that, when the query names some (not all) of the speakers of
    the hits, the other speakers' hits weigh OTHER_SPEAKER_WEIGHT of their score; returns
    (hits, the speakers named). A name is matched as the field, word for word (folded),
    not as text anywhere in the turn."""
    words = set(split_query(query)[0])
    speakers = {s for s in (speaker_of(h.text) for h in hits) if s}
    named = sorted(s for s in speakers if all(w in words for w in split_query(s)[0]))
    if not named or len(named) == len(speakers):
        return hits, []
    keep = set(named)
    weighted = [(h.score if speaker_of(h.text) in keep or not speaker_of(h.text)
                 else h.score * OTHER_SPEAKER_WEIGHT, n, h) for n, h in enumerate(hits)]
    weighted.sort(key=lambda t: (-t[0], t[1]))
    return [replace(h, score=round(s, 4)) for s, _, h in weighted], named
