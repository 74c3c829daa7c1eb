"""`make demo`: a scripted story in a temporary git repository, printed like a terminal session.

It runs the real `agentstate` console script (the one installed next to this interpreter) as
a subprocess for every step, exactly as a user would type it.

The story is a list of chapters, each a list of steps, so later chapters (memory, context,
skills) can be appended: add a `Chapter(...)` to CHAPTERS. A step is either an `agentstate`
command (`Cmd`), a shell command (`Sh`), a file edit (`Edit`) or a narration line (`Say`).
`Cmd(..., save="name")` keeps the first ref (`evt:…`, `run:…`, `mem:…`, `pack:…`,
`skill:…`) its output prints, and later steps can write `{name}` in their arguments.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

REF = re.compile(r"\b(?:run|evt|mem|pack):[0-9a-z]{4,32}(?:@v\d+)?|\bskill:[a-z0-9-]+@v\d+")
AGENTSTATE = str(Path(sys.executable).with_name("agentstate"))


@dataclass
class Cmd:
    """`agentstate ARGS…`; `expect` is the exit code the story expects."""

    args: list[str]
    save: str | None = None
    expect: int = 0


@dataclass
class Sh:
    args: list[str]


@dataclass
class Edit:
    path: str
    text: str
    append: bool = False


@dataclass
class Say:
    text: str


@dataclass
class Chapter:
    title: str
    steps: list = field(default_factory=list)


PARSER = '''\
"""A tiny date parser with a cache."""
_cache = {}


def parse_date(text, locale="C"):
    key = text  # BUG: the locale is not part of the key
    if key not in _cache:
        _cache[key] = _parse(text, locale)
    return _cache[key]


def _parse(text, locale):
    day, month, year = text.split(".") if locale == "de_DE" else text.split("/")[::-1]
    return int(year), int(month), int(day)
'''

CHAPTERS: list[Chapter] = [
    Chapter("Yesterday: an agent starts fixing a flaky test", [
        Edit("parser.py", PARSER),
        Sh(["git", "add", "parser.py"]),
        Sh(["git", "commit", "-q", "-m", "parser: initial version"]),
        Cmd(["init"]),
        Cmd(["init"]),
        Cmd(["run", "start", "Fix the flaky test_parse_date test",
             "--constraint", "Do not change the public signature of parse_date",
             "--constraint", "Stay compatible with Python 3.11"], save="run"),
        Cmd(["log", "observation", "test_parse_date fails about 1 run in 5",
             "--source", "tool:pytest", "--meta", "exit_code=1"]),
        Cmd(["log", "hypothesis", "A race between threads filling the parser cache"],
            save="hyp_race"),
        Cmd(["log", "hypothesis", "The timezone data on CI is stale"]),
        Cmd(["log", "diagnosis", "The cache key ignores the locale, so a de_DE parse can "
             "return a cached C-locale result", "--resolves", "{hyp_race}"]),
        Cmd(["log", "decision", "Key the cache by (text, locale) instead of text"]),
        Cmd(["log", "question", "Does CI run the tests under a different locale than "
             "laptops?"], save="q_locale"),
        Cmd(["log", "verify", "Run test_parse_date 50 times under LANG=de_DE.UTF-8"],
            save="v_50"),
        Edit("parser.py", PARSER.replace("key = text  # BUG: the locale is not part of the key",
                                         "key = (text, locale)")),
        Cmd(["checkpoint", "--note", "Fix written in parser.py (cache keyed by locale); "
             "not yet verified"]),
        Say("*** the session dies: context compacted, terminal closed ***"),
    ]),
    Chapter("Overnight: the work tree moves on", [
        Sh(["git", "commit", "-q", "-am", "parser: key the cache by locale"]),
        Edit("NOTES.md", "CI uses LANG=C.UTF-8 (checked in the workflow file)\n"),
    ]),
    Chapter("Today: a new session picks the task up", [
        Cmd(["resume"]),
        Say("The same pack within 300 tokens: the pinned parts stay, the rest is dropped "
            "lowest priority first and listed by ref:"),
        Cmd(["resume", "--budget", "300"]),
        Say("Too small a budget is refused (exit 3) with the minimum it needs:"),
        Cmd(["resume", "--budget", "40"], expect=3),
        Cmd(["log", "answer", "Yes: CI uses LANG=C.UTF-8, laptops de_DE", "--resolves",
             "{q_locale}"]),
        Cmd(["log", "verified", "50 of 50 passed under de_DE.UTF-8",
             "--source", "tool:pytest", "--resolves", "{v_50}"]),
        Cmd(["run", "show"]),
        Cmd(["events", "--limit", "4"]),
        Cmd(["run", "end", "{run}", "--status", "done"]),
        Cmd(["run", "end", "{run}", "--status", "done"], expect=1),
        Cmd(["run", "list"]),
    ]),
    Chapter("Importing another agent's log, and checking the store", [
        Edit("session.jsonl", textwrap.dedent("""\
            {"kind": "observation", "text": "lint passes", "source": "tool:ruff"}
            {"kind": "question", "text": "Should the cache be bounded?", "id": "q1"}
            {"kind": "answer", "text": "Yes, LRU of 1024 entries", "resolves": "q1"}
            this line is not JSON
            """)),
        Cmd(["import", "jsonl", "session.jsonl", "--goal", "Review yesterday's session"]),
        Cmd(["import", "jsonl", "session.jsonl", "--run", "{last_run}"]),
        Cmd(["doctor"]),
    ]),
]


def _show(prompt: str, output: str) -> None:
    print(f"$ {prompt}")
    if output:
        print(output.rstrip("\n"))
    print()


def play(chapters: list[Chapter], workdir: Path) -> int:
    refs: dict[str, str] = {}
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", GIT_AUTHOR_NAME="Dev",
               GIT_AUTHOR_EMAIL="dev@example.com", GIT_COMMITTER_NAME="Dev",
               GIT_COMMITTER_EMAIL="dev@example.com")
    env.pop("AGENTSTATE_DIR", None)
    for number, chapter in enumerate(chapters, start=1):
        print(f"\n## {number}. {chapter.title}\n")
        for step in chapter.steps:
            if isinstance(step, Say):
                print(f"# {step.text}\n")
            elif isinstance(step, Edit):
                target = workdir / step.path
                with target.open("a" if step.append else "w", encoding="utf-8") as handle:
                    handle.write(step.text)
                print(f"# (edit {step.path})\n")
            elif isinstance(step, Sh):
                proc = subprocess.run(step.args, cwd=workdir, env=env, capture_output=True,
                                      text=True)
                _show(" ".join(step.args), proc.stdout + proc.stderr)
                if proc.returncode != 0:
                    print(f"demo: step failed with exit {proc.returncode}", file=sys.stderr)
                    return 1
            else:
                args = [a.format(**refs) for a in step.args]
                proc = subprocess.run([AGENTSTATE, *args], cwd=workdir, env=env,
                                      capture_output=True, text=True)
                shown = " ".join(a if re.fullmatch(r"[\w:.@/=-]+", a) else repr(a)
                                 for a in ["agentstate", *args])
                tail = f"[exit {proc.returncode}]" if proc.returncode else ""
                _show(shown, proc.stdout + proc.stderr + tail)
                if proc.returncode != step.expect:
                    print(f"demo: expected exit {step.expect}, got {proc.returncode}",
                          file=sys.stderr)
                    return 1
                found = REF.findall(proc.stdout)
                if step.save and found:
                    refs[step.save] = found[0]
                runs = [r for r in found if r.startswith("run:")]
                if runs:
                    refs["last_run"] = runs[0]
    return 0


def main() -> int:
    if not Path(AGENTSTATE).exists():
        print(f"demo: {AGENTSTATE} not found; run `make demo`", file=sys.stderr)
        return 1
    workdir = Path(tempfile.mkdtemp(prefix="agentstate-demo-"))
    try:
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=workdir, check=True)
        print(f"# a fresh git repository in {workdir}")
        return play(CHAPTERS, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
