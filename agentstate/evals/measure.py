"""`agentstate eval locomo`: evidence recall within a token budget, per arm and budget.

For every answerable question (categories 1-4 with evidence) and every arm and budget, the
arm builds a pack with the question as the query; the question's recall is the share of its
evidence turns whose events are in the pack (whole or compressed, read from the pack's
manifest, never by matching text). Each conversation is imported once, into one store that
every arm and budget reads.

Beside it, the *answer-visible* recall: the same share, but an evidence turn in the pack as
a one-line (compressed) item counts only when that line shows every content word of the
dataset's answer that the turn itself holds (a line that cut "croissants, muffins, and
tarts" out of the turn does not count). A turn in the pack whole always counts; so does a
line of a turn holding none of the answer's words (a date the label carries, say).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from agentstate.errors import AgentStateError
from agentstate.evals.arms import Arms, check_arms
from agentstate.evals.locomo import (
    CATEGORIES,
    Conversation,
    Question,
    imported,
    load_conversations,
)

DEFAULT_BUDGETS = (1000, 2000, 4000, 8000)


class _ArmAtBudget(Protocol):
    """What find_result needs of a result (LoCoMo's and the scenarios')."""

    @property
    def arm(self) -> str: ...
    @property
    def budget(self) -> int: ...


R = TypeVar("R", bound=_ArmAtBudget)


@dataclass
class ArmResult:
    """One arm at one budget."""

    arm: str
    budget: int
    recall: float | None                         # mean over the questions
    by_category: dict[str, float | None]         # category name → mean recall
    questions: int
    tokens_mean: float
    p50_ms: float
    errors: int = 0                              # packs that failed (counted as recall 0)
    # Recall counting a one-line item only where its line shows the answer's words.
    answer_visible: float | None = None
    # Evidence turns not in the pack, by why: "not retrieved" (never a candidate) or the
    # manifest's reason ("budget", "low relevance", "duplicate", "pointer", …).
    misses: dict[str, int] = field(default_factory=dict)


@dataclass
class LocomoReport:
    path: str
    conversations: list[str]
    turns: int
    questions: int                               # measured
    by_category: dict[str, int]                  # measured questions per category
    skipped_adversarial: int
    skipped_no_evidence: int
    unknown_evidence: int
    turns_rejected: int
    arms: list[str]
    budgets: list[int]
    results: list[ArmResult] = field(default_factory=list)
    seconds: float = 0.0

    def result(self, arm: str, budget: int) -> ArmResult:
        return find_result(self.results, arm, budget)


@dataclass
class _Tally:
    recalls: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in
                                                                      CATEGORIES.values()})
    visible: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    errors: int = 0
    misses: dict[str, int] = field(default_factory=dict)

    def merge(self, other: _Tally) -> None:
        for category, values in other.recalls.items():
            self.recalls[category].extend(values)
        self.tokens.extend(other.tokens)
        self.visible.extend(other.visible)
        self.seconds.extend(other.seconds)
        self.errors += other.errors
        for why, n in other.misses.items():
            self.misses[why] = self.misses.get(why, 0) + n


def question_recall(evidence: list[str], refs_by_turn: dict[str, set[str]],
                    in_pack: set[str]) -> float:
    """Share of the evidence turns with an event in the pack."""
    found = sum(1 for dia_id in evidence if refs_by_turn.get(dia_id, set()) & in_pack)
    return found / len(evidence)


def answer_terms(answer: str) -> tuple[str, ...]:
    """The answer's content words as index terms (stems), in order, without repeats."""
    from agentstate.memory.terms import STOP_WORDS, split_query, stem

    return tuple(dict.fromkeys(stem(w) for w in split_query(answer)[0] if w not in STOP_WORDS))


def _terms_in(text: str, terms: tuple[str, ...]) -> set[str]:
    """Which of `terms` (stems) start a word of `text` (folded): inflections count."""
    from agentstate.memory.terms import fold, stem_pattern

    return set(stem_pattern(terms).findall(fold(text))) if terms else set()


def answer_visible_recall(evidence: list[str], refs_by_turn: dict[str, set[str]],
                          in_pack: set[str], lines: dict[str, str],
                          turn_texts: dict[str, str], answer: str) -> float:
    """Share of the evidence turns in the pack whole, or as a line showing every answer
    word (by stem) that the turn's own text holds."""
    terms = answer_terms(answer)
    found = 0
    for dia_id in evidence:
        refs = refs_by_turn.get(dia_id, set()) & in_pack
        if not refs:
            continue
        if any(ref not in lines for ref in refs):  # the turn is there whole
            found += 1
            continue
        needed = _terms_in(turn_texts.get(dia_id, ""), terms)
        if any(needed <= _terms_in(lines[ref], tuple(needed)) for ref in refs):
            found += 1
    return found / len(evidence)


def plan(conversations: list[Conversation], limit: int | None) -> list[Conversation]:
    """The conversations with at most `limit` questions in all (in file order)."""
    if limit is None:
        return conversations
    left = limit
    out = []
    for conv in conversations:
        if left <= 0:
            break
        taken = conv.questions[:left]
        left -= len(taken)
        out.append(Conversation(conv.name, conv.turns, taken, conv.skipped_adversarial,
                                conv.skipped_no_evidence, conv.unknown_evidence, conv.speakers))
    return out


def run_locomo(
    path: Path,
    *,
    arms: list[str] | None = None,
    budgets: list[int] | tuple[int, ...] = DEFAULT_BUDGETS,
    limit_questions: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    jobs: int | None = None,
) -> LocomoReport:
    """Measure every arm at every budget on the LoCoMo conversations under `path`.

    `on_start(total)` is told how many packs will be built, `on_progress(n)` after each
    question (n packs done; per conversation when several run at once). Files are checked
    before anything is imported. `jobs`: conversations measured at once in worker
    processes (default: one per core, at most one per conversation; 1 = in this process).
    """
    started = time.perf_counter()
    chosen_arms = check_arms(arms)
    from agentstate.context.assemble import parse_budget

    budgets = sorted({parse_budget(b, 0) for b in budgets or DEFAULT_BUDGETS})
    every = load_conversations(path)
    conversations = plan(every, limit_questions)
    measured = [q for c in conversations for q in c.questions]
    report = LocomoReport(
        path=str(path), conversations=[c.name for c in every],
        turns=sum(len(c.turns) for c in every), questions=len(measured),
        by_category={name: sum(q.category_name == name for q in measured)
                     for name in CATEGORIES.values()},
        skipped_adversarial=sum(c.skipped_adversarial for c in every),
        skipped_no_evidence=sum(c.skipped_no_evidence for c in every),
        unknown_evidence=sum(c.unknown_evidence for c in every),
        turns_rejected=0, arms=list(chosen_arms), budgets=list(budgets),
    )
    if on_start:
        on_start(len(measured) * len(chosen_arms) * len(budgets))
    tallies = {(a, b): _Tally() for a in chosen_arms for b in budgets}
    work = [conv for conv in conversations if conv.questions]
    jobs = min(os.cpu_count() or 1, len(work)) if jobs is None else max(1, jobs)
    if jobs <= 1:
        for conv in work:
            report.turns_rejected += _measure_conversation(
                conv, chosen_arms, budgets, tallies,
                lambda: on_progress(len(chosen_arms) * len(budgets)) if on_progress else None)
    else:
        # Conversations are independent (each in its own temporary store): one process per
        # core. Every figure is a mean or a count over questions, so the merge is exact.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {pool.submit(_conversation_tallies, conv, chosen_arms, budgets): conv
                       for conv in work}
            for future in as_completed(futures):
                theirs, rejected = future.result()
                report.turns_rejected += rejected
                for key, tally in theirs.items():
                    tallies[key].merge(tally)
                if on_progress:
                    on_progress(len(futures[future].questions) * len(chosen_arms)
                                * len(budgets))
    report.results = [_summarise(a, b, tallies[(a, b)]) for a in chosen_arms for b in budgets]
    report.seconds = round(time.perf_counter() - started, 2)
    return report


def _measure_conversation(conv: Conversation, arms: Sequence[str], budgets: Sequence[int],
                          tallies: dict[tuple[str, int], _Tally],
                          after_question: Callable[[], None]) -> int:
    """Import one conversation into a temporary store and measure every question there;
    returns the number of turns the importer rejected."""
    texts = {t.dia_id: t.text for t in conv.turns}
    with imported(conv) as data:
        arms_here = Arms(data.store, data.events)
        try:
            for question in conv.questions:
                for arm in arms:
                    for budget in budgets:
                        _measure_one(arms_here, arm, budget, question, data.refs_by_turn,
                                     tallies[(arm, budget)], texts)
                after_question()
        finally:
            arms_here.close()
        return data.rejected


def _conversation_tallies(conv: Conversation, arms: Sequence[str], budgets: Sequence[int]
                          ) -> tuple[dict[tuple[str, int], _Tally], int]:
    """`_measure_conversation` in a worker process: its tallies go back to the parent."""
    tallies = {(a, b): _Tally() for a in arms for b in budgets}
    rejected = _measure_conversation(conv, arms, budgets, tallies, lambda: None)
    return tallies, rejected


def _measure_one(arms: Arms, arm: str, budget: int, question: Question,
                 refs_by_turn: dict[str, set[str]], tally: _Tally, texts: dict[str, str]) -> None:
    try:
        pack = arms.pack(arm, question.question, budget)
    except AgentStateError:
        # A pack that cannot be built holds no evidence; counted so it is not hidden.
        tally.errors += 1
        tally.recalls[question.category_name].append(0.0)
        tally.visible.append(0.0)
        return
    tally.recalls[question.category_name].append(
        question_recall(question.evidence, refs_by_turn, pack.refs))
    tally.visible.append(answer_visible_recall(question.evidence, refs_by_turn, pack.refs,
                                               pack.lines, texts, question.answer))
    for dia_id in question.evidence:
        refs = refs_by_turn.get(dia_id, set())
        if not refs & pack.refs:
            # A turn the importer refused (a secret in it) has no event to retrieve.
            why = min((pack.left_out.get(r, NOT_RETRIEVED) for r in refs), key=_severity) \
                if refs else "not imported"
            tally.misses[why] = tally.misses.get(why, 0) + 1
    tally.tokens.append(pack.tokens)
    tally.seconds.append(pack.seconds)


NOT_RETRIEVED = "not retrieved"


def _severity(reason: str) -> tuple[bool, str]:
    # A turn with several events is explained by the one that came closest to the pack.
    return reason == NOT_RETRIEVED, reason


def mean(values: list[float]) -> float | None:
    """The mean to 4 places; None (shown as —) when nothing was measured."""
    return round(sum(values) / len(values), 4) if values else None


def cost(tokens: list[int], seconds: list[float]) -> tuple[float, float]:
    """(mean tokens, median milliseconds) of an arm's packs. To the microsecond: a pack of
    a few remembered counts (`raw-history` on a short conversation) takes under 5 µs,
    which two decimals showed as 0 ms, the mark of an arm whose packs were all refused."""
    return (round(statistics.fmean(tokens), 1) if tokens else 0.0,
            round(statistics.median(seconds) * 1000, 3) if seconds else 0.0)


def find_result(results: Sequence[R], arm: str, budget: int) -> R:
    return next(r for r in results if r.arm == arm and r.budget == budget)


def _summarise(arm: str, budget: int, tally: _Tally) -> ArmResult:
    every = [r for values in tally.recalls.values() for r in values]
    tokens_mean, p50_ms = cost(tally.tokens, tally.seconds)
    return ArmResult(
        arm=arm, budget=budget, recall=mean(every),
        by_category={name: mean(values) for name, values in tally.recalls.items()},
        questions=len(every), tokens_mean=tokens_mean, p50_ms=p50_ms, errors=tally.errors,
        answer_visible=mean(tally.visible),
        misses=dict(sorted(tally.misses.items(), key=lambda kv: (-kv[1], kv[0]))),
    )
