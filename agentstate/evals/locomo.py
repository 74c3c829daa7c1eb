"""LoCoMo conversations: reading the files, and importing one conversation into a store.

A LoCoMo file holds one conversation (`speaker_a`, `speaker_b`, `session_N_date_time`,
`session_N` = a list of turns `{speaker, dia_id, text[, blip_caption]}`) and its questions
(`qa`: `{question, answer, evidence: [dia_id…], category}`). The published bundle is a list
of such samples with the conversation nested under `conversation`; both shapes are read.

Each turn becomes one event ("SPEAKER: TEXT", plus " [image: CAPTION]" when an image was
shared), dated with its session's date, its `dia_id` kept in the event's meta. The store is
a fresh one in a temporary directory, removed afterwards: the user's store is never touched.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentstate.errors import InvalidInput, NotFound
from agentstate.store.clock import format_ts
from agentstate.store.db import Store

# Categories 1-4 are answerable; 5 is adversarial (no answer) and left out of recall.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
SHAPE = ("expected a LoCoMo conversation: an object with speaker_a, speaker_b, "
         "session_N_date_time, session_N (turns) and qa (questions)")


@dataclass
class Turn:
    dia_id: str
    text: str      # "SPEAKER: TEXT [image: CAPTION]", as imported
    ts: str        # the session's date, as a stored timestamp


@dataclass
class Question:
    question: str
    category: int
    evidence: list[str]  # dia_ids of the turns that hold the answer
    answer: str = ""     # the dataset's answer (answer-visible recall reads its words)

    @property
    def category_name(self) -> str:
        return CATEGORIES[self.category]


@dataclass
class Conversation:
    name: str              # the file name (plus #N for a sample of a bundle)
    turns: list[Turn]
    questions: list[Question]  # answerable (categories 1-4) with evidence
    skipped_adversarial: int = 0
    skipped_no_evidence: int = 0
    unknown_evidence: int = 0  # evidence ids that name no turn (left out of the measure)
    speakers: tuple[str, str] = ("", "")

    @property
    def now(self) -> datetime:
        """The moment after the conversation: the store's clock while it is measured."""
        last = max((t.ts for t in self.turns), default="2000-01-01T00:00:00.000000Z")
        return datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(days=1)


# ---------------------------------------------------------------- reading


def load_conversations(path: Path) -> list[Conversation]:
    """Every conversation under `path` (a LoCoMo JSON file, or a folder of them).

    Everything is read and checked before anything is measured, so a bad file fails the run
    at once with one line naming it.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise NotFound(f"no such file or folder: {path}")
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        if not files:
            raise InvalidInput(f"no conversation files (*.json) in {path}")
    else:
        files = [path]
    conversations = []
    for file in files:
        conversations += _read_file(file)
    return conversations


def _read_file(file: Path) -> list[Conversation]:
    try:
        data = json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{file.name}: not UTF-8 text (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{file.name}: not valid JSON ({exc.msg} at line {exc.lineno} "
                           f"column {exc.colno})") from exc
    if isinstance(data, list):
        if not data:
            raise InvalidInput(f"{file.name}: an empty list; {SHAPE}")
        return [_conversation(f"{file.name}#{n}", item) for n, item in enumerate(data, 1)]
    return [_conversation(file.name, data)]


def _conversation(name: str, sample: Any) -> Conversation:
    if not isinstance(sample, dict):
        raise InvalidInput(f"{name}: {SHAPE}")
    body = sample.get("conversation", sample)
    qa = sample.get("qa")
    if not isinstance(body, dict) or not isinstance(qa, list):
        raise InvalidInput(f"{name}: {SHAPE}")
    numbered = sorted((int(m.group(1)), key) for key in body
                      if (m := _SESSION.fullmatch(key)) and isinstance(body[key], list))
    sessions = [key for _, key in numbered]
    if not sessions:
        raise InvalidInput(f"{name}: no session_N list of turns; {SHAPE}")
    turns: list[Turn] = []
    for key in sessions:
        when = body.get(f"{key}_date_time")
        try:
            ts = format_ts(datetime.strptime(str(when).strip(), DATE_FORMAT).replace(tzinfo=UTC))
        except ValueError as exc:
            raise InvalidInput(f"{name}: {key}_date_time {when!r} is not a date like "
                               f"'1:56 pm on 8 May, 2023'") from exc
        for position, turn in enumerate(body[key], 1):
            turns.append(_turn(name, f"{key} turn {position}", turn, ts))
    known = {t.dia_id for t in turns}
    conversation = Conversation(name=name, turns=turns, questions=[],
                                speakers=(str(body.get("speaker_a", "")),
                                          str(body.get("speaker_b", ""))))
    for position, item in enumerate(qa, 1):
        _question(conversation, f"{name}: qa item {position}", item, known)
    return conversation


def _turn(name: str, where: str, turn: Any, ts: str) -> Turn:
    if not isinstance(turn, dict):
        raise InvalidInput(f"{name}: {where} is not an object; {SHAPE}")
    speaker, dia_id, text = turn.get("speaker"), turn.get("dia_id"), turn.get("text", "")
    caption = turn.get("blip_caption")
    if not isinstance(speaker, str) or not isinstance(dia_id, str) or not isinstance(text, str):
        raise InvalidInput(f"{name}: {where} needs string speaker, dia_id and text")
    line = f"{speaker}: {text}"
    if isinstance(caption, str) and caption.strip():
        line += f" [image: {caption.strip()}]"
    return Turn(dia_id=dia_id, text=line, ts=ts)


def _question(conversation: Conversation, where: str, item: Any, known: set[str]) -> None:
    if not isinstance(item, dict) or not isinstance(item.get("question"), str):
        raise InvalidInput(f"{where} is not a question object; {SHAPE}")
    category = item.get("category")
    if isinstance(category, bool) or category not in (*CATEGORIES, ADVERSARIAL):
        raise InvalidInput(f"{where}: category must be 1 to 5, got {category!r}")
    if category == ADVERSARIAL:
        conversation.skipped_adversarial += 1
        return
    raw = item.get("evidence") or []
    if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
        raise InvalidInput(f"{where}: evidence must be a list of dia_ids")
    # The published data has a few joined ids ("D8:6; D9:17"): split them.
    ids = [part for e in raw for part in _EVIDENCE_SPLIT.split(e) if part]
    evidence = list(dict.fromkeys(i for i in ids if i in known))
    conversation.unknown_evidence += len({i for i in ids if i not in known})
    if not evidence:
        conversation.skipped_no_evidence += 1
        return
    answer = item.get("answer")
    conversation.questions.append(Question(item["question"], category, evidence,
                                           "" if answer is None else str(answer)))


# ---------------------------------------------------------------- importing


@dataclass
class ImportedConversation:
    """One conversation imported into a throw-away store, ready to be measured."""

    conversation: Conversation
    store: Store
    run: str
    events: list[Any]                    # runs.log.Event, oldest first
    refs_by_turn: dict[str, set[str]] = field(default_factory=dict)  # dia_id → evt refs
    rejected: int = 0                    # turns the importer refused (secrets, empty text)


@contextmanager
def imported(conversation: Conversation, root: Path | None = None
             ) -> Iterator[ImportedConversation]:
    """Import `conversation` into a fresh store under `root` (default: a new temporary
    directory, removed on exit) through the run log's one import path."""
    from agentstate.maintenance.init import init_store
    from agentstate.runs.importer import import_events
    from agentstate.runs.log import list_events
    from agentstate.store.clock import Clock, IdSource
    from agentstate.store.db import open_store

    own = root is None
    base = Path(tempfile.mkdtemp(prefix="agentstate-eval-")) if root is None else Path(root)
    try:
        init_store(target=base)
        # A fixed clock and seeded ids: the same data gives the same packs on every run.
        store = open_store(base / ".agentstate", clock=Clock(conversation.now),
                           ids=IdSource(seed=1))
        try:
            records = [{"kind": "note", "text": t.text, "ts": t.ts, "source": "user",
                        "meta": {"dia_id": t.dia_id}} for t in conversation.turns]
            speakers = " and ".join(s for s in conversation.speakers if s) or "two people"
            result = import_events(store, records, goal=f"conversation between {speakers}",
                                   origin=f"locomo:{conversation.name}")
            events = list_events(store, result.run) if result.run else []
            by_turn: dict[str, set[str]] = {}
            for event in events:
                by_turn.setdefault(str(event.meta.get("dia_id")), set()).add(event.ref)
            yield ImportedConversation(conversation, store, result.run or "", events, by_turn,
                                       rejected=result.malformed + result.refused)
        finally:
            store.close()
    finally:
        if own:
            shutil.rmtree(base, ignore_errors=True)
