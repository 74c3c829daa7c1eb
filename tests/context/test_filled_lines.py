"""An answer line given only in room left over (not a complete item's) fills its width
with the sentences after its completion (issue 23, eleventh round); a complete item's,
placed before the items below it, fills it only where no hit is shown whole (a small room,
thirteenth round) and keeps a one-sentence completion where hits are whole."""

from __future__ import annotations

from agentstate.context.compression import ANSWER_WIDTH, evidence_line
from agentstate.context.event_items import SHORT_LINE_CHARS, event_evidence
from agentstate.memory.search import EventHit
from agentstate.memory.terms import stem

# The matched sentence, a completion, then the answer two sentences on.
TURN = ("Nora: We finally went to the night market by the old harbour on Friday evening "
        "after work. It was packed with people from all over town. Loved every stall. "
        "Got dumplings, mango sticky rice and grilled squid.")
ANSWER = ("dumplings", "mango", "squid")


def _stems(*words: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in words)


def test_a_filled_line_shows_the_sentences_after_its_completion():
    line = evidence_line("#4", TURN, _stems("night", "market"), 100, 0, "", True)
    assert all(w in line for w in ANSWER), line
    assert "all over town. Loved every stall. Got" in line  # in order, nothing skipped
    # Unfilled, the completion is the next sentence alone.
    plain = evidence_line("#4", TURN, _stems("night", "market"), 100, 0, "")
    assert not any(w in plain for w in ANSWER), plain


def test_a_filled_line_stays_within_its_width():
    text = TURN + " Then we walked home along the river, talking about the week. " * 6
    line = evidence_line("#4", text, _stems("night", "market"), 100, 0, "", True)
    body = line.removeprefix("- [#4] ")
    assert len(body) <= ANSWER_WIDTH * 100 + len("Nora: ") + 4, len(body)
    assert body.count("river") < 6  # cut at a whole sentence, not the whole turn


def _hits(n: int) -> list[EventHit]:
    return [EventHit(ref=f"evt:h{i:04d}", run="run:r", kind="note",
                     text=TURN.replace("night market", f"night market {i}"), source="user",
                     ts="2024-01-02T10:00:00Z", score=0.4 ** i)
            for i in range(n)]


def test_complete_lines_are_filled_only_where_no_hit_is_whole():
    # 100 tokens of room: no hit whole; the two strongest hits are complete items, the rest
    # are not, and every answer line is filled.
    cands = event_evidence(_hits(6), superseded=set(), stems=_stems("night", "market"),
                           room=100)
    complete = [c for c in cands if c.answer_first]
    assert len(complete) == 2 and len(cands) == 6
    assert all(c.compressed and all(w in c.compressed for w in ANSWER) for c in cands)
    # The shorter line is the same either way: what is placed first does not grow.
    assert all(c.short and len(c.short) <= SHORT_LINE_CHARS + 40 for c in cands)
    # 2,000 tokens of room: the strongest hits are whole; the complete items' answer lines
    # keep a one-sentence completion, the others' are filled.
    hits = _hits(60)
    cands = event_evidence(hits, superseded=set(), stems=_stems("night", "market"),
                           room=2000)
    complete = [c for c in cands if c.answer_first]
    rest = [c for c in cands if not c.answer_first and c.compressed != c.short]
    assert complete and rest
    assert all(c.compressed and "squid" not in c.compressed for c in complete)
    assert all(c.compressed and all(w in c.compressed for w in ANSWER) for c in rest)
