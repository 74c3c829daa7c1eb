"""Budget allocation: who gets the window.

1. Pinned fragments are included as they are, always, and the task's essentials
   (context/essentials.py) in their short form. If that pack alone is larger than the budget,
   the budget is refused (BudgetTooSmall names the minimum — the same one `resume` names).
2. Every other candidate is visited in priority order — class first (the config's class
   order), then score, then ref (so ties are deterministic) — and gets the best form that
   still fits: whole, else its one-line compression, else (later, at index priority) a
   pointer line in the index, else it is dropped for budget. An evidence item with an
   answer line is compressed to its shorter line first; the answer line's extra tokens
   come at 0.4 of the item's score in that order (`_Upgrades`, ANSWER_LINE_SHARE) — but a
   complete item (`answer_first`, the strongest hits) is placed as its answer line first,
   and as its shorter line only where that does not fit.
3. Cost estimates are per fragment; the final answer is measured on the rendered text with the
   project's tokenizer. While that measurement is over budget, the lowest-priority placed
   fragment is demoted one step and the text measured again. The budget can therefore never
   be exceeded, whatever the tokenizer does at fragment boundaries. An essential is demoted to
   its short form, never further.
4. Duplicates: of two twins (the same ref, or the same text), the one placed first stays and
   the other is dropped as `duplicate of REF`; a twin whose partner ends up out of the text is
   not called a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentstate.context.candidates import (
    CLASSES,
    SECTION_TITLES,
    Candidate,
    ClassAllocation,
    section_title,
)
from agentstate.context.placement import assign_positions
from agentstate.context.rendering import render
from agentstate.errors import BudgetTooSmall, InvalidInput

Count = Callable[[str], int]
CountMany = Callable[[list[str]], list[int]]


@dataclass
class Allocation:
    text: str
    tokens: int
    minimum: int  # tokens of the pinned and essential pack: the smallest budget accepted
    candidates: list[Candidate]
    classes: list[ClassAllocation]


def class_order(configured: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """The configured class order (names checked at load); `pinned` always first, every
    class present once."""
    order = ["pinned"] + [c for c in (configured or CLASSES) if c != "pinned"]
    order += [c for c in CLASSES if c not in order]
    return tuple(dict.fromkeys(order))


def priority_key(order: tuple[str, ...]) -> Callable[[Candidate], tuple[int, float, str, str]]:
    rank = {c: i for i, c in enumerate(order)}
    return lambda c: (rank[c.cls], -round(c.score, 9), c.ref, c.section)


def room_below(cls: str, candidates: list[Candidate], budget: int, order: tuple[str, ...],
               count_many: CountMany) -> int:
    """Tokens `cls` can be given at most: the budget less every fragment of the classes
    allocated before it, each whole. Allocation visits those first, so when they fit whole
    this is what is left, and when they do not they fill the budget and nothing is left.
    The evidence search is sized by it: candidates no budget could hold are not gathered."""
    rank = {c: i for i, c in enumerate(order)}
    above = [c for c in candidates if rank[c.cls] < rank[cls] and c.decision != "dropped"]
    forms = [form for c in above if (form := c.full or c.compressed or c.floor)]
    return max(0, budget - sum(count_many(forms)) - len(forms))


def allocate(
    candidates: list[Candidate],
    budget: int,
    count: Count,
    *,
    order: tuple[str, ...] = CLASSES,
    headers: dict[str, str] | None = None,
    index_reserve: int = 0,
    count_many: CountMany | None = None,
    what: str = "the pinned instructions, constraints and preferences",
) -> Allocation:
    """Decide every candidate's form within `budget` tokens; return the text and decisions.

    `index_reserve` tokens are kept back from the classes above the index, so the index of
    what did not fit (the way to fetch it just in time) is not always crowded out by a long
    trajectory; whatever the index does not use is simply left over. `count_many`, when
    given, counts the fragments' forms in one batch up front (much cheaper per text).
    `what` names the fixed content in a refusal.
    """
    if budget < 1:
        raise InvalidInput(f"the budget must be a positive number of tokens, got {budget}")
    headers = headers or {}
    count = _memoised(count)
    pinned = _fix_pinned(candidates)
    pinned_text = render(pinned, headers)
    if count_many is not None:
        count.prime([pinned_text, *_likely_counted(candidates, headers)], count_many)
    minimum = count(pinned_text)
    if minimum > budget:
        raise BudgetTooSmall(budget, minimum, what)

    hints, ranked = _visit_order(candidates, priority_key(order))
    packer = _Packer(count, headers, used=minimum,
                     limit=budget - max(0, min(index_reserve, budget - minimum)),
                     open_sections={c.section for c in pinned})
    waiting, upgraded = _place_ranked(packer, ranked)
    # Index class: the reserve is released; every token of the budget may now be used.
    packer.limit = budget
    _place_index(packer, hints, waiting)

    # Demotion order: the reverse of allocation — pointers last placed go first, then the
    # lowest-priority whole or compressed fragments.
    # Answer lines go back to their shorter lines before any item above the index is
    # demoted: they were only ever given room no item wanted.
    demotable = [*reversed(waiting), *reversed(hints), *reversed(ranked)]
    text, tokens = _demote_until_within(candidates, demotable, headers, count, budget,
                                        upgraded=upgraded[::-1])
    _settle(candidates, count)
    return Allocation(text, tokens, minimum, candidates, summarise(candidates, order))


def _fix_pinned(candidates: list[Candidate]) -> list[Candidate]:
    """Step 1: pinned fragments as they are, essentials in their short form (the full one
    replaces it later when the budget allows). Returns them: the fixed pack."""
    pinned = [c for c in candidates if c.cls == "pinned" or c.floor is not None]
    for cand in pinned:
        if cand.cls == "pinned":
            cand.decision, cand.reason, cand.form = "included", "pinned", cand.full
        elif cand.floor == cand.full:
            cand.decision, cand.reason, cand.form = "included", "essential", cand.floor
        else:  # the short form until the full one is given room
            cand.decision, cand.reason, cand.form = "compressed", "budget", cand.floor
    return pinned


def _visit_order(candidates: list[Candidate], key: Callable[[Candidate], tuple[Any, ...]]
                 ) -> tuple[list[Candidate], list[Candidate]]:
    """The candidates still to decide, in priority order: (index hints, the rest)."""
    # Candidates pre-dropped by a gate (permission, superseded, duplicate…) keep their reason.
    live = [c for c in candidates if c.cls != "pinned" and (
        not c.decision or (c.floor is not None and c.form != c.full))]
    live_ids = {id(c) for c in live}

    def visit_key(cand: Candidate) -> tuple[int | float | str, ...]:
        # A fragment that gives way to a twin is decided right after it.
        if cand.after is not None and id(cand.after) in live_ids:
            return (*key(cand.after), 1)
        return (*key(cand), 0)

    live.sort(key=visit_key)
    return [c for c in live if c.cls == "index"], [c for c in live if c.cls != "index"]


class _Packer:
    """The running cost of the text being built: tokens used, the limit they may reach, and
    which section headers and group lines are already paid for."""

    def __init__(self, count: _memoised, headers: dict[str, str], *, used: int, limit: int,
                 open_sections: set[str]) -> None:
        self.count = count
        self.headers = headers
        self.used = used
        self.limit = limit
        self.open_sections = open_sections
        # Group header lines, and (group, label tail) pairs shown.
        self.open_groups: set[str | tuple[str, str]] = set()
        self.numbered: set[str] = set()  # sections whose title's `#N` note is paid for

    def _title_cost(self, section: str, numbered: bool) -> int:
        """What placing an item costs in title: the section's title where it opens the
        section, the `#N` note where it is the section's first `#N` line (rendering)."""
        title = section_title(section, numbered, self.headers)
        if section not in self.open_sections:
            return self.count(title + "\n\n")
        if not numbered or section in self.numbered:
            return 0
        return self.count(title + "\n\n") \
            - self.count(section_title(section, False, self.headers) + "\n\n")

    def fits_extra(self, extra: int) -> bool:
        """Take `extra` tokens if they fit (an essential's full form over its short one)."""
        if self.used + extra > self.limit:
            return False
        self.used += extra
        return True

    def place(self, cand: Candidate, form: str, section: str) -> bool:
        """Place `cand` as `form` in `section` if its cost (with any header it opens) fits."""
        count = self.count
        group = cand.group if section == cand.section else ""
        if group and cand.tail and (group, cand.tail) in self.open_groups:
            # The group prints a repeated label part once (see rendering): an item whose
            # kind and date another item of its group already shows is costed without it.
            # Costed exactly so, with no token of margin: a margin on every such line left
            # packs short of their budget by as many tokens as they had lines (~3.6% at
            # 8,000 tokens, 290 tokens, room for ~15 lines), and the measure of the
            # rendered text (step 3) keeps the budget whatever a line costs in place.
            form_cost = form.replace(f"{cand.label_ref}{cand.tail}]", f"{cand.label_ref}]", 1)
        else:
            form_cost = form
        numbered = bool(cand.shown) and section == cand.section
        cost = count(form_cost + "\n") + self._title_cost(section, numbered)
        if group and group not in self.open_groups:
            cost += count(group + "\n")
        if self.used + cost > self.limit:
            return False
        self.used += cost
        self.open_sections.add(section)
        if numbered:
            self.numbered.add(section)
        if group:
            self.open_groups.update((group, (group, cand.tail)))
        cand.form = form
        return True


def _place_ranked(packer: _Packer, ranked: list[Candidate]
                  ) -> tuple[list[Candidate], list[Candidate]]:
    """Step 2 above the index: each candidate whole, else compressed (its shorter line
    first, see `_Upgrades`); returns those that got neither (pointer candidates), in order,
    and those given their answer line."""
    waiting: list[Candidate] = []
    upgrades = _Upgrades(packer)
    for cand in ranked:
        upgrades.before(cand)
        if cand.floor is not None:  # an essential: its full form, if that fits
            assert cand.full is not None
            if packer.fits_extra(packer.count(cand.full + "\n")
                                 - packer.count(cand.floor + "\n")):
                cand.decision, cand.reason, cand.form = "included", "essential", cand.full
            continue
        if _drop_if_twin_placed(cand):
            continue
        compress_only = cand.full is None  # policy: older trajectory events are one line
        if cand.full is not None and packer.place(cand, cand.full, cand.section):
            cand.decision, cand.reason = "included", "fits"
        elif cand.compressed and cand.compressed != cand.full and (
            (cand.answer_first and packer.place(cand, cand.compressed, cand.section))
            or packer.place(cand, cand.short or cand.compressed, cand.section)
        ):
            cand.decision = "compressed"
            # One line by policy: an older trajectory event, or an evidence hit past the
            # strongest few (or a neighbour); otherwise for want of room.
            cand.reason = ("older" if cand.cls == "trajectory" else "one line") \
                if compress_only else "budget"
            upgrades.offer(cand)
        else:
            waiting.append(cand)
    upgrades.before(None)
    return waiting, upgrades.done


# An item placed as its shorter line gets its answer line (the matched sentence and what
# completes it) as if that were a candidate of the item's class scored this share of the
# item's score: a strong hit's answer line comes before the weak tail of the ranking (the
# two-away neighbours, the last hits), never before an item scoring above this share of
# it. It was 0.5, the weight of a hit's next turn (event_items.NEIGHBOUR_WEIGHT: the words
# that complete a hit are worth what the turn after it is), while an answer line cost ~7
# tokens more than its shorter line; the wider answer lines (compression.ANSWER_WIDTH)
# cost ~15, and at 0.45 they already took room from items holding evidence (dev split,
# 1,000 tokens: recall 0.802 → 0.798); at 0.4 they come after the items that paid for them.
ANSWER_LINE_SHARE = 0.4


def _answer_share(cand: Candidate) -> float:
    """The share of `cand`'s score its answer line ranks at: its own where it has one (a
    small room's evidence, event_items.SMALL_ROOM_ANSWER_SHARE), else ANSWER_LINE_SHARE."""
    return ANSWER_LINE_SHARE if cand.answer_share is None else cand.answer_share


class _Upgrades:
    """Answer lines waiting for their turn in the priority order (see ANSWER_LINE_SHARE)."""

    def __init__(self, packer: _Packer) -> None:
        self.packer = packer
        self.queue: list[Candidate] = []   # in priority order: scores only fall
        self.done: list[Candidate] = []

    def offer(self, cand: Candidate) -> None:
        if cand.short is not None and cand.form == cand.short \
                and cand.compressed not in (None, cand.short):
            self.queue.append(cand)

    def before(self, nxt: Candidate | None) -> None:
        """Give the answer lines that rank above `nxt` (every one left at the end: None)
        their extra tokens, where those fit."""
        while self.queue and (nxt is None or self.queue[0].cls != nxt.cls
                              or _answer_share(self.queue[0]) * self.queue[0].score
                              >= nxt.score):
            cand = self.queue.pop(0)
            assert cand.compressed is not None and cand.short is not None
            extra = self.packer.count(cand.compressed + "\n") \
                - self.packer.count(cand.short + "\n")
            if cand.form == cand.short and self.packer.fits_extra(extra):
                cand.form = cand.compressed
                self.done.append(cand)


def _place_index(packer: _Packer, hints: list[Candidate], waiting: list[Candidate]) -> None:
    """The index class: generic fetch hints first (one line covers many items), then a
    pointer line for each waiting candidate, else it is dropped for budget."""
    for cand in hints:
        if cand.full and packer.place(cand, cand.full, "index"):
            cand.decision, cand.reason = "included", "fits"
        else:
            cand.drop("budget")
    for n, cand in enumerate(waiting):
        if _drop_if_twin_placed(cand):
            continue
        cand.decision = "pointer"  # placed_section is now `index`
        if cand.pointer and packer.place(cand, cand.pointer, "index"):
            cand.reason = "budget"
            cand.order = (1, n)
        else:
            cand.drop("budget")


def _demote_until_within(candidates: list[Candidate], demotable: list[Candidate],
                         headers: dict[str, str], count: Count, budget: int, *,
                         upgraded: Sequence[Candidate] = ()
                         ) -> tuple[str, int]:
    """Step 3: render and measure; while over budget, demote the lowest-priority placed
    fragment one step (an essential to its short form, never further). Answer lines given
    in step 2b (`upgraded`, lowest priority first) go back to their shorter lines once the
    index lines are gone and before any other item is demoted."""
    text = render(candidates, headers)
    tokens = count(text)
    # Each step shortens one fragment or drops it, and a fragment has at most three forms
    # to go through, so the loop is bounded; a step that changes nothing (an answer line
    # equal to its shorter line put "back" to it) once made it spin forever when the text
    # was far over what allocation had costed. Fail loudly instead.
    steps_left = 3 * len(candidates) + 1
    while tokens > budget:
        victim = next((c for c in demotable if c.form is not None
                       and c.decision != "dropped" and c.form != c.floor), None)
        if victim is None or not (victim.cls == "index" or victim.decision == "pointer"):
            victim = next((c for c in upgraded if c.form == c.compressed != c.short), victim)
        if victim is None:  # only the fixed part left: cannot happen, minimum <= budget
            raise BudgetTooSmall(budget, tokens)
        steps_left -= 1
        if steps_left < 0:
            raise RuntimeError(f"demotion does not converge: {tokens} tokens rendered "
                               f"for a budget of {budget}")
        if victim.floor is not None:
            victim.decision, victim.reason, victim.form = "compressed", "budget", victim.floor
        elif victim.short is not None and victim.form == victim.compressed != victim.short:
            victim.form = victim.short  # an answer line back to its shorter line
        elif victim.decision == "included" and victim.compressed and \
                victim.compressed != victim.form and victim.cls != "index":
            victim.decision, victim.reason, victim.form = "compressed", "budget", \
                victim.compressed
        else:
            victim.drop("budget")
        text = render(candidates, headers)
        tokens = count(text)
    return text, tokens


def _settle(candidates: list[Candidate], count: Count) -> None:
    """Step 4 and the manifest: duplicate reasons that no longer hold, positions, tokens."""
    for cand in candidates:
        # A twin demoted out of the text after its partner was dropped as its duplicate: the
        # partner was left out for want of room, not because the text already says it.
        if cand.reason.startswith("duplicate of ") and not any(
                _placed(t) for t in cand.twins):
            cand.reason = "budget"
    assign_positions(candidates)
    for cand in candidates:
        source = cand.form if cand.form is not None else (cand.full or cand.compressed or "")
        cand.tokens = count(source) if source else 0


def _placed(cand: Candidate) -> bool:
    return cand.form is not None and cand.decision != "dropped"


def _drop_if_twin_placed(cand: Candidate) -> bool:
    """Drop `cand` as a duplicate if a twin is already in the text (named in the reason)."""
    twin = next((t for t in cand.twins if _placed(t)), None)
    if twin is None:
        return False
    cand.drop(f"duplicate of {twin.ref}")
    return True


class _memoised:
    """`count`, remembered per string for one allocation (fragments and headers repeat)."""

    def __init__(self, count: Count) -> None:
        self._count = count
        self._seen: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        n = self._seen.get(text)
        if n is None:
            n = self._seen[text] = self._count(text)
        return n

    def prime(self, texts: list[str], count_many: CountMany) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._seen))
        self._seen.update(zip(todo, count_many(todo), strict=True))


def _likely_counted(candidates: list[Candidate], headers: dict[str, str]) -> list[str]:
    """The texts allocation may count: each form as placed (with its newline) and as
    reported in the manifest, and the section headers."""
    texts = [section_title(s, numbered, headers) + "\n\n"
             for s in SECTION_TITLES for numbered in (False, True)]
    for cand in candidates:
        for form in (cand.full, cand.compressed, cand.pointer, cand.short):
            if form:
                texts += (form, form + "\n")
    return texts


def summarise(candidates: list[Candidate], order: tuple[str, ...]) -> list[ClassAllocation]:
    """Per class: tokens placed and how many items went in, compressed, to pointers, out."""
    rows = []
    for cls in order:
        mine = [c for c in candidates if c.cls == cls]
        rows.append(ClassAllocation(
            cls=cls,
            tokens=sum(c.tokens for c in mine if c.decision != "dropped"),
            items_in=sum(c.decision == "included" for c in mine),
            items_compressed=sum(c.decision == "compressed" for c in mine),
            items_pointer=sum(c.decision == "pointer" for c in mine),
            items_out=sum(c.decision == "dropped" for c in mine),
        ))
    return rows
