"""Evidence events labelled by their place in their run (`#N` under the run's group header):
every label resolves, as `run:ID#N`, to the event whose text the line shows (issue 23)."""

from __future__ import annotations

import re

import pytest

from agentstate.context.assemble import build_context
from agentstate.context.trace import trace
from agentstate.errors import InvalidInput, NotFound
from agentstate.runs.log import append_event, start_run
from agentstate.runs.lookups import find_event
from agentstate.store.principals import resolve_principal
from agentstate.store.refs import parse_position


@pytest.mark.parametrize("text, expected", [
    ("run:abcd#3", ("abcd", 3)), (" run:k2x9zz#140 ", ("k2x9zz", 140)), ("run:abcd#0", ("abcd", 0)),
    ("run:abcd", None), ("evt:abcd#3", None), ("run:abcd#", None), ("run:abcd#x", None),
    ("run:ab#3", None), ("run:abcd#3#4", None), ("", None),
])
def test_a_position_ref_is_a_run_and_a_seq(text, expected):
    assert parse_position(text) == expected


def _evidence_lines(text: str) -> list[tuple[str, int, str]]:
    """(run ref of the group, N, line) for every `- [#N…` line of the pack's evidence."""
    out, run = [], ""
    for line in text.splitlines():
        if line.startswith("### "):
            run = line[4:].split(" ", 1)[0]
        elif line.startswith("## "):
            run = ""
        elif (m := re.match(r"- \[#(\d+)[\] ]", line)) and run:
            out.append((run, int(m.group(1)), line))
    return out


def test_every_evidence_label_resolves_to_the_event_its_line_shows(store):
    # Two runs whose turns share words: both groups hold `#N` labels, the same N in each.
    first, _ = start_run(store, "first")
    for n in range(8):
        append_event(store, first.ref, "note", f"Dana: the bakery on Elm street sold pie {n}.")
    second, _ = start_run(store, "second")
    for n in range(8):
        append_event(store, second.ref, "note", f"Sven: the bakery by the river made tart {n}.")
    current, _ = start_run(store, "now")
    pack = build_context(store, run=current.ref, query="which bakery sold pie or tart",
                         budget=1000, save=False, principal=resolve_principal(store))
    lines = _evidence_lines(pack.text)
    assert {run for run, _, _ in lines} == {first.ref, second.ref}
    placed = {e.ref for e in pack.manifest if e.cls == "evidence" and e.decision != "dropped"}
    resolved = set()
    for run, seq, line in lines:
        node = trace(store, f"{run}#{seq}", principal="owner")
        event = find_event(store, node.ref.removeprefix("evt:"))
        assert event is not None and (event.run, event.seq) == (run, seq)
        # The line shows that event's own words (a window of them), not a neighbour's.
        words = line.split("] ", 1)[1].removeprefix("… ").split(" …")[0]
        assert words and words in event.text, (line, event.text)
        resolved.add(node.ref)
    # Every placed evidence event is one of those lines: none is left unresolvable.
    assert resolved == placed and len(lines) == len(placed)


def test_a_position_ref_on_the_command_line_and_its_errors(cli, initialised):
    run = cli.json("run", "start", "check the position refs")["run"]["ref"]
    evt = cli.json("log", "observation", "the parser passes on nested tables")["ref"]
    seq = cli.json("events", "--run", run)[-1]["seq"]
    tree = cli.json("trace", f"{run}#{seq}")
    assert tree["ref"] == evt and tree["detail"]["seq"] == seq
    missing = cli("trace", f"{run}#{seq + 1}")
    assert missing.exit_code != 0 and "no event" in missing.stdout + missing.stderr


def test_a_position_in_a_run_that_does_not_exist_is_not_found(store):
    with pytest.raises(NotFound):
        trace(store, "run:zzzzzzzz#1", principal="owner")
    with pytest.raises(InvalidInput):  # not a position ref, and not a valid ref either
        trace(store, "run:zzzzzzzz#", principal="owner")
