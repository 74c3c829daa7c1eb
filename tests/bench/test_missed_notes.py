"""The report's verdict table says, beside each missed target, why and what it would take
(bench/missed.py); a line it has no note for says so instead of passing silently."""

from __future__ import annotations

from bench.missed import NOTES, note_for
from bench.run import verdicts


def _table(bench: str, *lines: str) -> list[str]:
    return [row for row in verdicts([(f"bench_{bench}", "\n".join(lines), 1.0)])
            if row.startswith("| ok") or row.startswith("| MISSED")]


def test_a_missed_line_carries_its_note_and_a_met_one_none():
    missed = "  gc / copy of the database (0.50 s, same run): 3.1x (target ≤ 2x: MISSED)"
    met = "  gc / copy of the database (0.50 s, same run): 1.1x (target ≤ 2x: ok)"
    note = note_for("maintenance", missed)
    assert note is not None and note.bench == "maintenance"
    [row_missed] = _table("maintenance", missed)
    [row_met] = _table("maintenance", met)
    assert row_missed.startswith("| MISSED | maintenance |")
    assert note.why in row_missed and note.would_take in row_missed and note.where in row_missed
    assert row_met.startswith("| ok | maintenance |") and row_met.endswith("|  |")


def test_a_line_with_two_verdicts_is_missed_if_either_is():
    line = ("Stop reading a real 20.0 MB transcript: first 0.40 s (target ≤ 0.5 s: ok), a "
            "later turn 0.9 s (target ≤ 0.5 s: MISSED)")
    [row] = _table("hooks", line)
    assert row.startswith("| MISSED | hooks |")
    assert note_for("hooks", line).why in row


def test_a_target_without_a_note_says_so():
    [row] = _table("hooks", "a new figure: 3 s (target ≤ 1 s: MISSED)")
    assert "no note in bench/missed.py" in row


def test_lines_without_a_verdict_are_not_rows():
    assert _table("context", "  python -c pass   20.0ms (same run)",
                  "the target is met by tokens") == []


def test_no_two_notes_claim_the_same_line():
    for note in NOTES:
        line = " ".join(note.marks) + " (target ≤ 1x: MISSED)"
        assert note_for(note.bench, line) is note, note.marks
