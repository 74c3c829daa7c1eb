"""Event hits as a pack's evidence: which hits are shown whole, which are complete items
(their answer line placed first), which go as one line and how long it is; the turns beside
a hit (its neighbours); and the candidate of each, labelled and gated.

Every rule here is what the room can afford: how many hits are whole or complete depends on
the room the budget leaves for evidence, and what a line shows on how strong its hit is
(docs/evaluation.md, issue 23's rounds, gives the measurement behind each constant).
"""

from __future__ import annotations

from typing import Any

from agentstate.context.candidates import Candidate
from agentstate.context.compression import (
    DEFAULT_CHARS,
    anchorless,
    compress_line,
    evidence_line,
    focus_line,
    opens_with_chatter,
    short_past_chatter,
)
from agentstate.context.locality import beside_anchors
from agentstate.context.sources import flagged, indented, normalise, pointer_line, text_trust
from agentstate.lazy_re import LazyPattern

UNMARKED_KIND = "note"
EVENT_WEIGHT = 0.8  # a raw event ranks a little below a gated, curated memory
# A neighbour (a turn just before or after a hit, in the same run) ranks at this share of
# the hit's score per turn away: the answer to what a hit asks is often the next turn, the
# question a hit answers the one before, and in a conversation the speaker's own next turn
# (two away) often goes on with what the hit said.
NEIGHBOUR_WEIGHT = 0.5
NEIGHBOUR_REACH = 2  # turns on each side
# ... except right next to a hit: the turn after a hit that ends with a question is its
# reply, at REPLY_WEIGHT; any other turn one away ranks at NEXT_WEIGHT. On the dev split at
# 1,000 tokens the turn after a hit ending with a question was evidence in 3.7% of the
# packs that held it, any other turn one away in 0.4-0.5%, a turn two away in 1.3-2.5%
# (the speaker's own next turn): the flat 0.5 spent room on the wrong neighbours. A turn
# one away at 0.25 lost the second corpus a fact told just before a hit (4,000 tokens);
# 0.375 keeps it (docs/evaluation.md, thirteenth round).
REPLY_WEIGHT = 0.75
NEXT_WEIGHT = 0.375
# The strongest hits are shown whole (this many where the room is not known); the rest, and
# every neighbour, as one line (the part of the sentence that matched the query, or a
# neighbour's first sentence) with the ref to fetch the whole: at a small budget many
# relevant lines serve better than a few long texts.
WHOLE_HITS = 3
# ... and none below this many tokens of room: a whole turn costs three or four one-line
# items, and where the room holds thirty lines in all, those lines find more of what the
# query asks for (the ref still fetches the whole).
ROOM_PER_WHOLE = 1_000
# From ROOM_PER_WHOLE tokens of room, one whole hit per this many (budgets of 2,000 /
# 4,000 / 8,000 tokens leave ~1,800 / 3,800 / 7,800 of room: 3 / 7 / 15; it was 3 at most
# at any room). A one-line item shows its answer's words only where its line holds them;
# a whole turn always does. A large room holds more lines than a question's evidence
# needs, and the strongest hits whole cost the weak tail of the ranking, not evidence
# (docs/evaluation.md, eighth round).
WHOLE_PER = 500
# The strongest hits, one per this many tokens of room, are complete items: placed as
# their answer line (the matched sentence and what completes it), the shorter line only
# where that does not fit. Below them, items are placed as their shorter lines and
# lengthened only in room left over (budgeter.ANSWER_LINE_SHARE): the best bets shown with
# their answer, breadth below them. Each costs ~19 tokens over its shorter line (dev split,
# 1,000 tokens), so fewer items fit: one per 100 tokens cost dev recall 0.007–0.010, one
# per 150 bought half the answer-visible gain (eighth round, one per 125 kept). Since
# labels are `#N` (~7 tokens less a line) a pack holds more items, and one per 50 spends
# part of that on answers: dev split recall still 0.009–0.017 above one per 125 with
# `evt:` labels at every budget, answer-visible 0.024–0.051 above it; one per 35 cost
# 8,000 tokens 0.013 of recall; measured, not derived (ninth round).
COMPLETE_PER = 50
# Where no hit is shown whole (a small room), one-line forms are cut shorter — a hit to
# the words around the words that matched, a neighbour to its opening words: the label and
# ref of an item cost the same whatever its length, so in a small room shorter lines mean
# more items. 60 characters while labels were `evt:ID` (100 cost recall then); with `#N`
# labels 100 keeps dev recall at 1,000 tokens within 0.001 and shows 0.019 more answers
# (120 and 140 no more; the only room it applies to, ninth round).
SHORT_LINE_CHARS = 100
# A turn of at most this many characters (about 35 tokens: 30% of the turns LoCoMo's packs
# compress) is its own one-line form: cut to a window, it loses the words the question did
# not use — often the answer.
WHOLE_TURN_CHARS = 160


# Where the ranking is confident, more of the top is complete: every hit scoring at least
# this share of the best one (up to one per CONFIDENT_CAP_PER tokens of room) is complete
# too, beyond the count per room. On the second corpus a question's paraphrased evidence
# scores close to the best hit, and at 1,000 tokens this showed 0.663 against 0.632 of
# its answers (0.805 against 0.795 at 2,000) at no cost to recall; on the dev split the
# count already covers every such hit (nothing moved). Instead of the count (tenth
# round), the share alone cost the dev split answers (0.6: 0.690 → 0.667 at 1,000),
# giving room to more items, not answers.
CONFIDENT_SHARE = 0.5
CONFIDENT_CAP_PER = 25
# ... but a hit found by meaning alone (sharing no word with the question past its
# speaker label: compression.anchorless) scoring below this share of the best is not a
# complete item, whatever its rank: its answer line would be placed before the items
# below it, and such lines rarely carry an answer. On the dev split at 8,000 tokens the
# complete items were ~98 such hits a pack below half the best; those below a quarter (31
# a pack) held 19 evidence turns in ~23,700 lines, and their answer lines first cost ~400
# tokens a pack for 7 more answers shown — the room pays for the filled lines of the
# stronger ones (`event_evidence`). 0.2 cost recall, 0.3 bought fewer answers
# (docs/evaluation.md, fourteenth round). One at the share or above has its answer line
# filled to its width, past an opening that is chatter (compression.past_opening): no
# matched sentence says where its answer is; the opening and the next sentence showed it
# for 59 of 78 such evidence turns below half the best, the filled line past the chatter
# for 76. Only in the widened pool (`event_evidence`, `widened`): below it such hits are
# few, and at 4,000 tokens the rule moved the dev split by −0.002 in recall and answers.
BLIND_COMPLETE_SHARE = 0.25
# ... and a hit that does share a word with the question, past the complete count, is a
# complete item too where it lies a few turns from one of the strongest matched hits
# (context/locality.py, as the blind hits there): its answer line, the matched sentence
# and its completion, is placed before the items below it. On the dev split at 8,000
# tokens such hits were 5.3 a pack (124 tokens of shorter lines) and held 42 evidence
# turns, 7 of them with an answer their shorter line did not show ("Joanna: Thanks
# Nate! …", the answer in the sentence after); the other matched hits past the count, 79
# a pack, held 34. Complete, they showed 0.926 → 0.931 of the answers at the same recall
# (0.977; docs/evaluation.md, sixteenth round). Only in the widened pool, like every
# local hit (`_complete_or_local`).


def complete_items(hits: list[Any], room: int) -> int:
    """How many of the strongest hits are complete items: one per COMPLETE_PER tokens of
    `room`, or every hit scoring CONFIDENT_SHARE of the best where that is more (at most
    one per CONFIDENT_CAP_PER tokens)."""
    scores = [h.score for h in hits[:room // CONFIDENT_CAP_PER]]
    confident = sum(s >= CONFIDENT_SHARE * scores[0] for s in scores) \
        if scores and scores[0] > 0 else 0
    return max(room // COMPLETE_PER, confident)


def fills_complete_lines(whole: int) -> bool:
    """Whether complete items' answer lines fill their width: only where no hit is shown
    whole (a small room, every item one line). There the answer of a complete item that
    its completion misses sits further on in the turn, and nothing else shows it; on the
    dev split at 1,000 tokens filled lines showed the answer's words in 445 of 485 such
    items against 411, for ~4.5 tokens a line. Where hits are whole, filling cost recall
    (eleventh round: −0.015 at 2,000 tokens) for answers the whole hits already show."""
    return whole == 0


# Where no hit is whole, a complete item scoring below this share of the best has its
# answer line completed, not filled to its width (`fills_complete_line`): on the dev split
# at 1,000 tokens the complete items at 0.15–0.3 of the best were ~4 a pack, 2% of them
# evidence, and filling their lines cost ~75 characters a pack (~18 tokens) for 2 answers
# of the whole split (40 of 43 shown filled, 38 completed) — the room goes to the items
# below, and to weak hits' lines past their chatter (`_shorter_line`). 0.4 cost answers
# (docs/evaluation.md, sixteenth round).
COMPLETE_FILL_SHARE = 0.3


def fills_complete_line(whole: int, relative: float) -> bool:
    """Whether a complete item scoring `relative` of the best fills its answer line: where
    complete lines are filled at all (`fills_complete_lines`) and from COMPLETE_FILL_SHARE."""
    return fills_complete_lines(whole) and relative >= COMPLETE_FILL_SHARE


# Where no hit is whole, the room a pack spends on complete items goes to the strongest:
# a hit scoring below COMPLETE_FLOOR of the best is not complete (its shorter line first,
# like any item below the count), and a complete item scoring at least FULL_LINE_SHARE of
# it fills its answer line both ways — the sentences after its completion, then those
# before the matched sentence (compression.evidence_line, `around`). On the dev split at
# 1,000 tokens, of 72 evidence lines not showing their answer 21 were complete items'
# whose answer came before the matched sentence ("John: We made pizza!") and 6 whose line
# was completed by the sentence before and stopped short of its width. Filling every
# complete line both ways cost 0.014 of recall for 0.010 of answers; from 0.6 of the best
# 0.005 for 0.014, and the floor gives that recall back (0.804 / 0.732 → 0.804 / 0.738;
# docs/evaluation.md, fourteenth round). Measured, not derived: 0.5 / 0.7 gave 0.803 /
# 0.736 and 0.805 / 0.735 with the floor.
COMPLETE_FLOOR = 0.15
FULL_LINE_SHARE = 0.6


def completes(whole: int, relative: float) -> bool:
    """Whether a hit within the complete count, scoring `relative` of the best, is a
    complete item: where hits are whole (`whole` > 0) always, else from COMPLETE_FLOOR."""
    return bool(whole) or relative >= COMPLETE_FLOOR


def fills_around(whole: int, relative: float) -> bool:
    """Whether a complete item's answer line fills its width both ways: only where
    complete lines are filled at all and the item scores FULL_LINE_SHARE of the best."""
    return fills_complete_lines(whole) and relative >= FULL_LINE_SHARE


# Where no hit is whole, the pack's weakest one-line items are cut shorter and their room
# goes to answer lines: a neighbour's shorter line that is not a reply shows its first
# NEIGHBOUR_CHARS characters, and a hit's scoring below COMPLETE_FLOOR of the best its
# first WEAK_HIT_CHARS (`_shorter_line`), for answer lines placed at SMALL_ROOM_ANSWER_SHARE
# of their item's score (budgeter.ANSWER_LINE_SHARE elsewhere). On the dev split at 1,000
# tokens such neighbours' shorter lines showed the answer of 4 of 4,065 lines (19 evidence
# turns holding answer words), the weak hits' 4 of 3,394; their answer lines, given room,
# show most answers. Cutting alone bought recall (+0.002 at 40 characters for neighbours),
# the share alone answers (+0.009), together with the chatter skip (SHORT_LINE_CHATTER)
# 0.804 / 0.738 → 0.805 / 0.751. Measured, not derived: neighbours at 30 and weak hits at
# 50 characters showed fewer answers, the share at 0.55 cost recall (−0.003), and cutting
# the other hits' lines lost the second corpus an answer (docs/evaluation.md, fifteenth
# round). A weak hit sharing a word with the question past its speaker label whose turn
# opens with chatter (compression.opens_with_chatter) chose that opening only where the
# label matched (a question naming the speaker): it shows the sentence chosen past the
# label, cut at WEAK_HIT_CHARS — on the dev split 1.2 lines a pack, 6 more answers shown;
# every weak hit's line chosen past the label cost more recall for fewer answers
# (sixteenth round).
NEIGHBOUR_CHARS = 40
WEAK_HIT_CHARS = 60
SMALL_ROOM_ANSWER_SHARE = 0.5


def _shorter_line(label: str, hit: Any, stems: tuple[str, ...], chars: int, whole: int,
                  relative: float, strong: bool) -> str:
    """The line an evidence item is placed as first: the matched sentence (`focus_line`),
    a neighbour's first one. Where no hit is whole, a reply or a weak hit whose line would
    show chatter shows the sentence after it (compression.short_past_chatter), and other
    neighbours and weak hits are cut shorter (NEIGHBOUR_CHARS, WEAK_HIT_CHARS); a weak hit
    that shares a word with the question past its speaker label and opens with chatter
    shows the sentence sharing most of them past the label (`skip_lead`)."""
    near = getattr(hit, "near", None)
    small = not whole
    if near:
        if small and getattr(hit, "weight", None) == REPLY_WEIGHT:
            return short_past_chatter(label, hit.text, stems, chars) \
                or compress_line(label, hit.text, chars)
        return compress_line(label, hit.text, NEIGHBOUR_CHARS if small else chars)
    if not small or relative >= COMPLETE_FLOOR:
        return focus_line(label, hit.text, stems, chars, anchorless=strong)
    if anchorless(hit.text, stems):
        skipped = short_past_chatter(label, hit.text, stems, chars)
        if skipped:
            return skipped
    elif opens_with_chatter(hit.text, stems):
        # The opening ("Melanie: Thanks, Caroline!") matched only by its speaker label,
        # which selects the speaker, not what is said: the sentence chosen past the label.
        return focus_line(label, hit.text, stems, WEAK_HIT_CHARS, skip_lead=True)
    return focus_line(label, hit.text, stems, WEAK_HIT_CHARS, anchorless=strong)


def one_line_forms(room: int | None) -> tuple[int, int]:
    """(hits shown whole, characters of a one-line form) for evidence with `room` tokens
    (None: not known, the defaults)."""
    if room is None:
        return WHOLE_HITS, DEFAULT_CHARS
    whole = room // WHOLE_PER if room >= ROOM_PER_WHOLE else 0
    return whole, DEFAULT_CHARS if whole else SHORT_LINE_CHARS


# An event of these kinds that a later event resolved is stale as evidence: the question
# was answered, the verification ran, the hypothesis was settled — the resolving event says
# what holds now.
STALE_WHEN_RESOLVED = ("question", "verify", "hypothesis")


def neighbour_hits(store: Any, hits: list[Any]) -> list[Any]:
    """The events up to NEIGHBOUR_REACH turns before and after each hit in its run that
    are not hits themselves, each scored `neighbour_weight` × the hit's score (the best
    such hit), with `near` naming that hit and `weight` the factor."""
    from agentstate.memory.search import EventHit
    from agentstate.runs.lookups import event_positions, events_at

    ids = [h.ref.removeprefix("evt:") for h in hits]
    where = event_positions(store, ids)
    best: dict[tuple[str, int], tuple[float, str, float]] = {}
    taken = set(ids)
    for hit in hits:
        spot = where.get(hit.ref.removeprefix("evt:"))
        if spot is None:
            continue
        asks = ends_asking(hit.text)
        for step in range(1, NEIGHBOUR_REACH + 1):
            for seq in (spot[1] - step, spot[1] + step):
                weight = neighbour_weight(step, seq > spot[1], asks)
                key = (spot[0], seq)
                if key not in best or best[key][0] < weight * hit.score:
                    best[key] = (weight * hit.score, hit.ref, weight)
    out: list[Any] = []
    for eid, run, seq, kind, text, source, ts in events_at(store, list(best)):
        if eid in taken:
            continue
        score, near, weight = best[(run, seq)]
        hit = EventHit(ref=f"evt:{eid}", run=f"run:{run}", kind=kind, text=text,
                       source=source, ts=ts, score=round(score, 4))
        hit.near = near  # type: ignore[attr-defined]
        hit.weight = weight  # type: ignore[attr-defined]
        out.append(hit)
    return out


# A turn's last sentence is a question; a bracketed part after it (an attached image's
# caption, `[image: …]`) is not a sentence of the turn.
_ENDS_ASKING = LazyPattern(r"\?\s*(\[[^\]]*\]\s*)?$")


def ends_asking(text: str) -> bool:
    """Whether a turn ends with a question — it hands the floor over: the next turn replies
    to it. A question inside a turn that goes on is often answered by the speaker or
    rhetorical (counting any `?` made the second corpus's chatter "replies": −0.011 at
    1,000 tokens)."""
    return bool(_ENDS_ASKING.search(text.strip()))


def neighbour_weight(step: int, after: bool, asks: bool) -> float:
    """The share of a hit's score a turn `step` turns away from it ranks at: the turn
    `after` a hit that `asks` (ends with a question) is its reply (REPLY_WEIGHT); any other
    turn one away NEXT_WEIGHT, two away NEIGHBOUR_WEIGHT ** 2."""
    if step == 1:
        return REPLY_WEIGHT if after and asks else NEXT_WEIGHT
    return NEIGHBOUR_WEIGHT ** step


def event_group(run: str, source: str, text: str = "") -> str:
    """The header evidence events are grouped under: one per run and source (text that
    reads like instructions gets a flagged group of its own)."""
    return f"### {run} · {text_trust(source, text)}"


def event_evidence(hits: list[Any], neighbours: list[Any] | None = None, *,
                   superseded: set[str], resolved: set[str] | None = None,
                   lapsed: dict[str, str] | None = None, gate: bool = True,
                   stems: tuple[str, ...] = (), room: int | None = None,
                   answer_lines: bool = True,
                   seqs: dict[str, int] | None = None, asks: str = "",
                   widened: bool = False) -> list[Candidate]:
    """Event search hits (and their neighbours) → evidence candidates, grouped by run and
    source, each labelled with its short ref, kind and date. Hits are not cut by relative
    relevance: they are ranked, and the budget decides how far down the ranking the pack
    goes (a weak hit only fills room nothing stronger wanted). `lapsed` (event ref → why):
    the sources of memories that expired, were superseded or forgotten, dropped as stale like
    a resolved question. Without the `gate` (an ablation), superseded and stale hits are kept
    too. `answer_lines` (the default): a one-line form carries what completes the matched
    sentence, and a short turn is its own line (compression.evidence_line) — placed only
    in room left once every item that fits has its shorter line (`short`: the matched
    sentence or a neighbour's first one); off (an ablation), that shorter line alone.
    The strongest hits (`complete_items`: one per COMPLETE_PER tokens of `room`, more
    where the ranking is confident) are complete items: their answer line is placed first
    (`answer_first`). `seqs` (event ref → its seq in its run):
    an event there is labelled `#N` under its run's group header, not `evt:ID`. `asks`:
    what the question asks for (compression.question_kind), which picks an answer line's
    completion. `widened`: the search asked for the widened pool (context/assemble.py,
    WIDE_FROM_ROOM), where hundreds of hits are found by meaning alone
    (BLIND_COMPLETE_SHARE)."""
    best = max((h.score for h in hits), default=0.0) or 1.0
    whole, chars = one_line_forms(room)
    complete = complete_items(hits, room) if room is not None else 0
    short = WHOLE_TURN_CHARS if answer_lines else 0
    local = beside_anchors(hits, seqs or {}, stems) if widened else frozenset()
    out = []
    for rank, hit in enumerate([*hits, *(neighbours or [])]):
        relative = hit.score / best
        score = round(EVENT_WEIGHT * relative, 4)
        near = getattr(hit, "near", None)
        flags = ["unconfirmed"] if hit.kind == "hypothesis" else []
        if flagged(hit.source, hit.text):
            flags.append("untrusted")
        kind = "hypothesis (UNCONFIRMED)" if hit.kind == "hypothesis" else hit.kind
        # `note` is the log's unmarked kind (imported turns, plain remarks): naming it says
        # nothing and costs tokens on every date; every other kind is named.
        tail = f" · {hit.ts[:10]}" if kind == UNMARKED_KIND else f" · {kind} · {hit.ts[:10]}"
        # `#N` (its place in the run the group header names: `run:ID#N`) where it is known:
        # ~5 tokens against ~12 for `evt:ID`, paid on every line of the pack.
        seq = (seqs or {}).get(hit.ref)
        shown = "" if seq is None else f"#{seq}"
        label = f"{shown or hit.ref}{tail}"
        # A hit scoring at least CONFIDENT_SHARE of the best and sharing no word with the
        # question (found by meaning) has a shorter line showing its longest sentence, not
        # its opening chatter (compression.focus_line): on the second corpus at 4,000
        # tokens 0.910 → 0.932 of answers visible, the dev split unmoved. Not below the
        # share, where most of a large room's hundreds of such hits are and their longer
        # lines cost items (with every such hit, dev recall 0.978 → 0.969 at 8,000
        # tokens), nor in answer lines (those of the complete items grew: dev recall
        # −0.001 to −0.002 at 2,000–8,000; docs/evaluation.md, thirteenth round).
        strong = not near and relative >= CONFIDENT_SHARE
        # The matched sentence alone (a neighbour's first one): the line placed first; the
        # answer line replaces it where the budget has room left (budgeter).
        matched = _shorter_line(label, hit, stems, chars, whole, relative, strong)
        # Hits come first, in rank order: `rank` counts hits before any neighbour.
        blind = widened and not near and anchorless(hit.text, stems)
        complete_here, local_here = _complete_or_local(
            not near and rank < complete and completes(whole, relative), relative, blind,
            hit.ref in local)
        # A complete item's answer line is placed before other items and costs them room:
        # one sentence completes it where hits are whole; where none is, it fills its width
        # from COMPLETE_FILL_SHARE, both ways for the strongest (`fills_around`). Any
        # other's is given only in room left over and fills its width (eleventh round), a
        # blind complete item's too, past its chatter (BLIND_COMPLETE_SHARE).
        fill = not local_here and (
            not complete_here or fills_complete_line(whole, relative) or blind)
        around = complete_here and fills_around(whole, relative)
        answer = evidence_line(label, hit.text, () if near else stems, chars, short, asks,
                               fill, around, complete_here and blind) if answer_lines \
            else matched
        cand = Candidate(
            ref=hit.ref, cls="evidence", section="evidence", score=score,
            full=None if near or rank >= whole else f"- [{label}] {indented(hit.text)}",
            compressed=answer,
            short=matched if answer_lines else None,
            answer_first=complete_here and answer != matched,
            answer_share=None if whole else SMALL_ROOM_ANSWER_SHARE,
            pointer=pointer_line(hit.ref, f"{hit.kind} event, {hit.run}"),
            order=(-score, hit.ref), kind=hit.kind, flags=flags, norm=normalise(hit.text),
            group=event_group(hit.run, hit.source, hit.text), tail=tail, shown=shown,
            # Day, then kind, then time: items sharing a label tail sit together, so the
            # tail is printed exactly once per (group, tail) — what the budgeter costs. Then
            # the run's order, so a session's `#N` read forward.
            chrono=(hit.ts[:10], kind, hit.ts, -1 if seq is None else seq, hit.ref),
            note=f"next to {near} (neighbour, {getattr(hit, 'weight', NEIGHBOUR_WEIGHT):g} × "
                 "its score)" if near
            else f"search rank, {round(relative, 3)} of the best",
        )
        if gate:
            _gate_event(cand, hit, superseded, resolved or set(), lapsed or {})
        out.append(cand)
    return out


def _complete_or_local(by_rank: bool, relative: float, blind: bool, local: bool
                       ) -> tuple[bool, bool]:
    """(whether a hit is a complete item, whether it is one for being local): complete by
    its rank (`by_rank`) unless it is blind and below BLIND_COMPLETE_SHARE of the best;
    else, a hit a few turns from a strong matched one (`local`: context/locality.py) is
    complete at any rank or share — a blind one with its line past its chatter (fifteenth
    round), a matched one with its matched sentence and completion (sixteenth round);
    neither filled."""
    by_rank = by_rank and (not blind or relative >= BLIND_COMPLETE_SHARE)
    local_here = not by_rank and local
    return by_rank or local_here, local_here


def _gate_event(cand: Candidate, hit: Any, superseded: set[str], resolved: set[str],
                lapsed: dict[str, str]) -> None:
    """The read gate on an event hit: superseded, or stale (a question since resolved, the
    source of a memory that lapsed), it is dropped with its reason."""
    if hit.ref in superseded:
        cand.drop("superseded")
    elif hit.kind in STALE_WHEN_RESOLVED and hit.ref in resolved:
        cand.drop("stale")
    elif hit.ref in lapsed:
        cand.drop("stale")
        cand.note = f"{lapsed[hit.ref]}; {cand.note}"
