"""A second corpus in LoCoMo's format, made differently from the dev split and from
`eval scenarios`: seeded, multi-speaker chats whose questions are paraphrased.

Why it exists: retrieval tuned on one corpus flatters itself there. This generator makes
conversations of three or four people over several sessions, where

- every fact is stated in words the question does not use ("we brought home a kitten …
  her name is Miso" is asked as "What did Dana call the new cat?"), so a ranking that only
  matches words misses some of them;
- the answer sits in the second sentence of a longer turn, after a lead-in, so a one-line
  form that keeps only the sentence matching the question drops it;
- the other speakers name the fact's owner all the time ("Hey Dana, …", "Ha, Dana!"),
  so a question about one person matches the others' turns by name;
- multi-hop questions need two turns of different sessions, temporal ones the session's
  date (the answer is the date; the turn says "yesterday" or nothing at all).

Nothing here was tuned against the retrieval: templates were written once, from the failure
classes issue 23 describes, before any measurement. Write a corpus with
`python -m agentstate.evals.chatgen OUT_DIR [--seed N] [--conversations N]`, then
`agentstate eval locomo OUT_DIR`.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

NAMES = ("Aiko", "Bruno", "Chidi", "Dana", "Elif", "Farid", "Greta", "Hugo", "Ines", "Joon",
         "Kofi", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Rosa", "Sven", "Tara", "Yusuf")

# (key, statement templates, question templates, slot values). In a statement `{lead}`
# opens the turn; every slot value is (answer, *details used only in the statement).
FACTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]], ...] = (
    ("pet",
     ("{lead} We finally brought home a {d0} on Saturday. Her name is {a}, and she already "
      "rules the whole flat.",
      "Guess who has a new roommate? A tiny {d0}! We went with {a} as a name after a long "
      "debate."),
     ("What did {who} call the new {d1}?", "What is the name of {who}'s {d1}?"),
     (("Miso", "kitten", "cat"), ("Biscuit", "puppy", "dog"), ("Pebble", "tortoise", "pet"),
      ("Juniper", "rabbit", "bunny"))),
    ("hobby",
     ("{lead} Honestly, the thing that keeps me sane lately is {a}. Two evenings a week, "
      "no phone.",
      "Work has been brutal. {a_cap} on weekends is the only reason I still smile."),
     ("Which pastime helps {who} unwind?", "How does {who} relax after a stressful week?"),
     (("pottery",), ("bouldering",), ("birdwatching",), ("woodcarving",), ("salsa dancing",))),
    ("bake",
     ("{lead} I baked for the whole street yesterday. {a_cap}, all from scratch, and the "
      "kitchen still looks like a flour bomb went off.",
      "The neighbours' party was fun! I brought a tray of {a}; nothing came back."),
     ("Which treats did {who} make for the neighbours?",
      "What did {who} bring to the street gathering?"),
     (("croissants, muffins and tarts",), ("scones and lemon bars",),
      ("cinnamon rolls and brownies",), ("macarons and eclairs",))),
    ("job",
     ("{lead} Big news, I accepted the offer. Starting next month I'm a {a} at a small "
      "firm downtown.",
      "So the interviews paid off: they want me as a {a}. Still can't believe it."),
     ("What new position is {who} taking?", "Which role did {who} get hired for?"),
     (("landscape architect",), ("sound engineer",), ("pastry chef",),
      ("data journalist",))),
    ("instrument",
     ("{lead} I signed up for lessons at the community centre. The {a} is so much harder "
      "than it looks on video.",
      "My teacher says my {a} scales are improving, which is generous of her."),
     ("What is {who} learning to play?", "Which instrument is {who} practising?"),
     (("cello",), ("banjo",), ("saxophone",), ("harp",))),
    ("sibling",
     ("{lead} My sister called last night. She is packing up everything and moving to {a} "
      "for a research post.",
      "Family update: my sister got the post she wanted, so she relocates to {a} in June."),
     ("Where is {who}'s sister relocating?", "To which city is {who}'s sister moving?"),
     (("Lisbon",), ("Montreal",), ("Nairobi",), ("Osaka",))),
)
TRIPS = (("Reykjavik", "fermented shark"), ("Oaxaca", "mole negro"),
         ("Tbilisi", "khachapuri"), ("Hanoi", "bun cha"))
LEADS = ("Oh, before I forget —", "So, funny story.", "Okay, update time!", "Guess what?",
         "You'll laugh at this.", "Quick thing:")
CHATTER = (
    "Hey {other}, how was your week?", "That's lovely, {other}!", "Ha, {other}, you always "
    "say that.", "I hear you, {other}. Same here, honestly.", "Did you sleep at all, {other}?",
    "Traffic was awful this morning.", "I still haven't replied to half my emails.",
    "The weather can't decide what it wants.", "We should all meet up soon.",
    "I've been meaning to call my parents more.", "Anyone watched anything good lately?",
    "My plants are dying again, {other}. Any tips?", "Coffee first, opinions later.",
    "I'm so tired of meetings that could have been emails.",
    "{other}, you would have loved the market on Sunday.",
    "Not much new here, just the usual routine.", "Thanks for asking, {other}!",
)
ECHOES = {  # the others' replies that share the fact's topic words, not its answer
    "pet": "I could never keep a pet alive, {who}.",
    "hobby": "You and your hobbies, {who}! I just nap.",
    "bake": "I only bake when the shop is closed, {who}.",
    "job": "Congrats on the job news, {who}! Interviews terrify me.",
    "instrument": "Lessons sound fun, {who}. I gave up piano at ten.",
    "sibling": "My sister never calls me, {who}, lucky you.",
}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"


def _date_answer(when: datetime) -> str:
    return f"{when.day} {when.strftime('%B %Y')}"


def conversation(seed: int) -> dict[str, Any]:
    """One conversation (LoCoMo's one-file shape) for `seed`."""
    rng = random.Random(seed)
    people = rng.sample(NAMES, rng.choice((3, 4)))
    sessions = rng.randint(8, 11)
    start = datetime(2024, 1, 8, 10, 0) + timedelta(days=rng.randint(0, 300))
    dates = [start + timedelta(days=9 * n + rng.randint(0, 5), hours=rng.randint(0, 9))
             for n in range(sessions)]
    # Each person gets three facts; each fact is stated once, in a random session.
    plans: list[tuple[int, str, dict[str, Any]]] = []
    qa: list[dict[str, Any]] = []
    for who in people:
        for key, statements, questions, values in rng.sample(FACTS, 3):
            answer, *details = rng.choice(values)
            slots = {"a": answer, "a_cap": answer[0].upper() + answer[1:],
                     **{f"d{n}": d for n, d in enumerate(details)}}
            text = rng.choice(statements).format(lead=rng.choice(LEADS), **slots)
            question = rng.choice(questions).format(who=who, **slots)
            fact: dict[str, Any] = {"key": key, "text": text, "question": question,
                                    "answer": answer}
            plans.append((rng.randrange(sessions), who, fact))
        trip, dish = rng.choice(TRIPS)
        first, later = sorted(rng.sample(range(sessions), 2))
        plans.append((first, who, {"key": "trip", "text": f"{rng.choice(LEADS)} I just got "
                                   f"back from {trip} — jet lag is real.",
                                   "question": f"When did {who} come home from {trip}?",
                                   "answer": "", "temporal": True}))
        plans.append((later, who, {"key": "dish", "text": f"Still dreaming about the "
                                   f"{dish} from that trip. Nothing here comes close.",
                                   "question": "", "answer": dish, "trip": trip}))
    body: dict[str, Any] = {"speaker_a": people[0], "speaker_b": people[1]}
    for n in range(sessions):
        turns: list[dict[str, Any]] = []
        here = [p for p in plans if p[0] == n]
        rng.shuffle(here)
        for _, who, fact in here:
            for _ in range(rng.randint(1, 3)):
                turns.append(_chatter(rng, people, who))
            fact["turn"] = {"speaker": who, "text": fact["text"]}
            fact["session"] = n
            turns.append(fact["turn"])
            other = rng.choice([p for p in people if p != who])
            if fact["key"] in ECHOES and rng.random() < 0.7:
                turns.append({"speaker": other, "text": ECHOES[fact["key"]].format(who=who)})
        # Mostly chatter, as real chats are: ~60 turns a session, a few of them facts.
        for _ in range(rng.randint(45, 60)):
            turns.insert(rng.randrange(len(turns) + 1), _chatter(rng, people, None))
        # Numbered once the chatter is in; a fact keeps its turn (the same object).
        for m, turn in enumerate(turns, 1):
            turn["dia_id"] = f"D{n + 1}:{m}"
        for _, _, fact in here:
            fact["dia_id"] = fact["turn"]["dia_id"]
        body[f"session_{n + 1}_date_time"] = dates[n].strftime(DATE_FORMAT).lstrip("0")
        body[f"session_{n + 1}"] = turns
    for _, who, fact in plans:
        if fact["key"] == "dish":
            went = next(f for _, w, f in plans if w == who and f["key"] == "trip")
            qa.append({"question": f"What food did {who} miss after the journey home from "
                                   f"{fact['trip']}?",
                       "answer": fact["answer"], "evidence": [went["dia_id"], fact["dia_id"]],
                       "category": 1})
        elif fact.get("temporal"):
            qa.append({"question": fact["question"],
                       "answer": _date_answer(dates[fact["session"]]),
                       "evidence": [fact["dia_id"]], "category": 2})
        else:
            qa.append({"question": fact["question"], "answer": fact["answer"],
                       "evidence": [fact["dia_id"]], "category": 4})
    return {**body, "qa": qa}


def _chatter(rng: random.Random, people: list[str], about: str | None) -> dict[str, Any]:
    speaker = rng.choice([p for p in people if p != about] or people)
    other = about or rng.choice([p for p in people if p != speaker])
    # One or two remarks a turn: real turns run to a sentence or three.
    remarks = rng.sample(CHATTER, rng.choice((1, 2, 2)))
    return {"speaker": speaker, "text": " ".join(r.format(other=other) for r in remarks)}


def write_corpus(out: Path, seed: int = 1, conversations: int = 3) -> list[Path]:
    """Write `conversations` files (seeds seed … seed+n-1) into `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for n in range(seed, seed + conversations):
        path = out / f"chat-{n}.json"
        path.write_text(json.dumps(conversation(n), indent=1), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m agentstate.evals.chatgen",
                                     description="Write a seeded multi-speaker corpus in "
                                                 "LoCoMo's format.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--conversations", type=int, default=3)
    args = parser.parse_args(argv)
    if args.conversations < 1:
        parser.error("--conversations must be at least 1")
    for path in write_corpus(args.out, args.seed, args.conversations):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
