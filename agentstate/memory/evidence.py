"""What an event must be to count as evidence for a memory (docs/security.md, "Principals and
authority"; docs/memory.md, "Evidence").

Two questions, asked by `remember --evidence` and `memory confirm` alike:

1. *Is it about the fact?* The event must share the fact's content: its key words or the
   value it states (numbers, versions). An event that has nothing to do with the fact is
   refused, naming what is missing. For a command's event only the command's *output* counts:
   words that also appear on its command line are the writer's own, so `exec -- echo "the
   database is postgres 9.6"` is not evidence that the database is postgres 9.6.
2. *Did it come from a channel the writer does not control?* An event the model logged
   (`model`) or a prompt relayed by an agent client (`prompt:AGENT`, which the agent could have
   written itself) is shown as context but never activates or confirms a fact.

Words are split the way the search indexes split them (memory/terms.py): stems for words,
bigrams for text without spaces (Chinese, Japanese), so a CJK fact is checked as well as an
English one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentstate.errors import Refused
from agentstate.memory.terms import STOP_WORDS, fold, split_query, stem, stem_pattern
from agentstate.store.sources import is_relayed_prompt

if TYPE_CHECKING:
    from agentstate.runs.records import Event
    from agentstate.store.db import Store

# Sources whose events are words the writer (or an agent imitating the user) could have
# produced itself: never evidence from outside.
SELF_AUTHORED_SOURCES = ("model",)
SHOWN_TERMS = 8  # how many missing words a refusal names


@dataclass(frozen=True)
class FactTerms:
    """The content of a fact as the check sees it: word stems, stated values, CJK bigrams."""

    words: tuple[str, ...]
    values: tuple[str, ...]
    bigrams: tuple[str, ...]
    shown: tuple[tuple[str, str], ...] = ()  # (stem, the word as the fact has it)

    def show(self, term: str) -> str:
        return dict(self.shown).get(term, term)

    @property
    def all(self) -> tuple[str, ...]:
        return self.words + self.values + self.bigrams


def fact_terms(text: str) -> FactTerms:
    words, cjk = split_query(text)
    content = [w for w in words if w not in STOP_WORDS]
    # A stated value: a word with a digit (9.6 splits into 9 and 6, both must be there).
    values = [w for w in content if any(ch.isdigit() for ch in w)]
    shown = {stem(w): w for w in reversed(content) if w not in values and len(w) > 1}
    stems = [stem(w) for w in content if w not in values and len(w) > 1]
    bigrams: list[str] = []
    for seg in cjk:
        bigrams.extend([seg] if len(seg) == 1 else [seg[i:i + 2] for i in range(len(seg) - 1)])
    return FactTerms(tuple(dict.fromkeys(stems)), tuple(dict.fromkeys(values)),
                     tuple(dict.fromkeys(bigrams)), tuple(shown.items()))


def _found(terms: FactTerms, text: str) -> set[str]:
    """The terms of `terms` that `text` holds (a stem at the start of a word, a value as a
    whole word, a bigram anywhere)."""
    if not text:
        return set()
    folded = fold(text)
    found: set[str] = set()
    present = set(split_query(text)[0])
    if terms.words:
        pattern = stem_pattern(terms.words)
        found.update(m.group(0) for m in pattern.finditer(folded))
        # A stem is not always a prefix of its word (staging → stage, key → kei): the text's
        # own words, stemmed the same way, are matched too.
        wanted = set(terms.words)
        found.update(s for s in (stem(w) for w in present) if s in wanted)
    if terms.values:
        found.update(v for v in terms.values if v in present)
    found.update(b for b in terms.bigrams if b in folded)
    return found


def _authored_and_output(event: Event) -> tuple[str, str]:
    """(what the writer typed, what came back) of an event. A command's event: its command
    line, and its output excerpt. Any other event: nothing came back; the text is the
    writer's, but it is still the event's content (a user's or a tool's note)."""
    meta: dict[str, Any] = event.meta or {}
    command = meta.get("command")
    if command:
        line = " ".join(str(part) for part in command) if isinstance(command, list) else str(
            command)
        return line, str(meta.get("excerpt") or "")
    return "", event.text + ("\n" + str(meta["excerpt"]) if meta.get("excerpt") else "")


@dataclass(frozen=True)
class Aboutness:
    ok: bool
    shared: tuple[str, ...]
    missing: tuple[str, ...]
    echoed: tuple[str, ...]  # terms only on the command line


def _states_the_command(text: str, event: Event, authored: str) -> bool:
    """A fact about the command itself — naming its whole command line and its exit code
    ("`make test` works in this repository (exit 0)", what `run distill` proposes) — is
    about the event: the exit code came back from the tool, whatever the arguments said."""
    exit_code = (event.meta or {}).get("exit_code")
    if not authored or not isinstance(exit_code, int) or isinstance(exit_code, bool):
        return False
    folded = " ".join(fold(text).split())
    return (" ".join(fold(authored).split()) in folded
            and str(exit_code) in split_query(text)[0])


def about(text: str, event: Event) -> Aboutness:
    """Does `event` share `text`'s content? (see the module docstring)"""
    terms = fact_terms(text)
    if not terms.all:
        # Nothing but stop words: no content to compare, nothing to refuse on.
        return Aboutness(True, (), (), ())
    authored, output = _authored_and_output(event)
    if _states_the_command(text, event, authored):
        return Aboutness(True, terms.all, (), ())
    in_output = _found(terms, output)
    echoed = _found(terms, authored)
    have = in_output - echoed
    said = echoed - have
    values_ok = bool(terms.values) and all(v in have for v in terms.values) and bool(
        have - set(terms.values))
    ok = len(have) * 2 >= len(terms.all) or values_ok
    return Aboutness(ok, tuple(terms.show(t) for t in terms.all if t in have),
                     tuple(terms.show(t) for t in terms.all if t not in have),
                     tuple(terms.show(t) for t in terms.all if t in said))


def require_about(store: Store, text: str, refs: list[tuple[str, str]], what: str) -> None:
    """Refuse (exit 3) when an event among `refs` does not share `text`'s content, naming
    what it lacks. `user` and `file:` refs are not checked here."""
    from agentstate.runs.log import get_event

    events = {ref: get_event(store, ref) for ref, kind in refs if kind == "evt"}
    verdicts = {ref: about(text, event) for ref, event in events.items()}
    good = {ref for ref, verdict in verdicts.items() if verdict.ok}
    for ref, verdict in verdicts.items():
        if verdict.ok:
            continue
        # One thread: a hypothesis a cited diagnosis resolves, the question a cited answer
        # answers. It rides along with the event that is about the fact.
        event = events[ref]
        if event.resolves in good or any(events[g].resolves == ref for g in good):
            continue
        missing = ", ".join(verdict.missing[:SHOWN_TERMS]) + (
            ", …" if len(verdict.missing) > SHOWN_TERMS else "")
        echo = (f"; {', '.join(verdict.echoed[:SHOWN_TERMS])} appear only on its command "
                "line (a command that echoes a claim is not evidence of it)"
                if verdict.echoed else "")
        raise Refused(f"evidence {ref} is not about {what}: it shares "
                      f"{len(verdict.shared)} of {len(verdict.shared) + len(verdict.missing)} "
                      f"of its key words or values (missing: {missing}){echo}; cite an event "
                      "whose text or output states the fact")


def self_authored(source: str) -> bool:
    """An event from this source is the writer's own word, or one the agent could forge."""
    return source in SELF_AUTHORED_SOURCES or is_relayed_prompt(source)


__all__ = ["about", "fact_terms", "require_about", "self_authored"]
