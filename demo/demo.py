"""`make demo`: a scripted story in a temporary git repository, printed like a terminal session.

It runs the real `agentstate` console script (the one installed next to this interpreter) as
a subprocess for every step, exactly as a user would type it.

The story is a list of chapters, each a list of steps, so later chapters (memory, context,
skills) can be appended: add a `Chapter(...)` to CHAPTERS. A step is either an `agentstate`
command (`Cmd`), a shell command (`Sh`), a file edit (`Edit`) or a narration line (`Say`).
`Cmd(..., save="name")` keeps the first ref (`evt:…`, `run:…`, `mem:…`, `pack:…`,
`skill:…`) its output prints, and later steps can write `{name}` in their arguments
(`{name_chain}` is the same ref without its `@vN`).

It doubles as a smoke test: every step states the exit code it expects (`expect`, 0 by
default) and `Cmd(..., shows=[...])` lists text its output must contain; any mismatch stops
the demo with a non-zero exit.
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
    save_kind: str | None = None  # save the first ref of this kind (stdout, then stderr)
    expect: int = 0
    shows: list[str] = field(default_factory=list)
    # Print only the output from the first line matching this regex on, after checking the
    # pack text is byte-identical (same sha256) to the previous `context` step's.
    skip_repeat: str | None = None


@dataclass
class Sh:
    args: list[str]
    expect: int = 0


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

TEST_PARSER = '''\
import unittest

from parser import parse_date


class ParseDate(unittest.TestCase):
    def test_locales_do_not_share_the_cache(self):
        self.assertEqual(parse_date("01.02.2026", "de_DE"), (2026, 2, 1))
        self.assertEqual(parse_date("2026/02/01"), (2026, 2, 1))
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
        Cmd(["log", "observation",
             "test_parse_date fails about 1 run in 5 when CI runs the tests (LANG?)",
             "--source", "tool:pytest", "--meta", "exit_code=1"], save="obs_flaky"),
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
             "{q_locale}"], save="a_locale"),
        Cmd(["log", "verified", "50 of 50 passed under de_DE.UTF-8",
             "--source", "tool:pytest", "--resolves", "{v_50}"]),
        Cmd(["run", "show"]),
        Cmd(["events", "--limit", "4"]),
        Say("The task is done. Ending it a second time is an error (exit 1), not a "
            "silent success:"),
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
        Say("Another agent's session, one JSON object per line (the last line is broken). "
            "Bad lines are skipped and reported; importing again adds nothing:"),
        Cmd(["import", "jsonl", "session.jsonl", "--goal", "Review yesterday's session"],
            shows=["imported 3"]),
        Cmd(["import", "jsonl", "session.jsonl", "--run", "{last_run}"],
            shows=["duplicates 3"]),
        Cmd(["doctor"], shows=["healthy"]),
    ]),
    Chapter("Memory: what should outlive the run", [
        Say("The run log is per task. What the next task must know goes to memory, through a "
            "write gate. First, what the finished run offers (nothing is stored without "
            "--accept):"),
        Cmd(["run", "distill", "{run}"], shows=["answered question"]),
        Say("Remember one fact, with the answer event as its source and evidence, under a "
            "key so later values for it become versions of the same memory:"),
        Cmd(["remember", "CI runs the tests with LANG=C.UTF-8", "--kind", "fact",
             "--key", "ci-locale", "--source", "{a_locale}"],
            save="mem_v1", shows=["stored (active)"]),
        Say("A model guesses otherwise, citing the flaky-test observation. A model's word "
            "does not outrank an event, so its version is stored as contested, not current:"),
        Cmd(["remember", "CI runs the tests with LANG=en_US.UTF-8", "--kind", "fact",
             "--key", "ci-locale", "--source", "model", "--evidence", "{obs_flaky}"],
            save="mem_guess", shows=["contested"]),
        Say("A guess with no evidence at all is only a candidate, outside default reads:"),
        Cmd(["remember", "The CI locale is probably set in tox.ini", "--kind", "fact",
             "--source", "model"], shows=["candidate"]),
        Say("recall goes through the read gate: the current fact, the contested version "
            "flagged beside it, and what was withheld counted by reason (never shown):"),
        Cmd(["recall", "which locale does CI run the tests with"],
            shows=["{mem_guess}", "contested", "withheld: 1 candidate"]),
        Say("The user settles it. A statement from the user always becomes current; both "
            "older versions are superseded:"),
        Cmd(["remember", "CI runs the tests with LANG=C.UTF-8 and TZ=UTC", "--kind", "fact",
             "--key", "ci-locale", "--evidence", "{a_locale}"],
            save="mem_current", shows=["superseded"]),
        Say("A secret is refused before anything is stored (exit 3); the value is never "
            "echoed:"),
        Cmd(["remember", "The CI deploy token is ghp_abcdefghijklmnopqrstuvwxyz0123456789",
             "--kind", "fact"], expect=3, shows=["secret"]),
        Cmd(["recall", "which locale does CI run the tests with"],
            shows=["{mem_current}", "withheld: 1 candidate, 2 superseded"]),
        Say("The wrong guess should not linger even as history. --purge erases its text from "
            "the database file; the audit trail keeps only a hash:"),
        Cmd(["forget", "{mem_guess}", "--purge", "--reason", "a wrong guess"],
            shows=["purged 1 version(s)"]),
        Cmd(["memory", "history", "{mem_current_chain}"], shows=["purge"]),
        Say("The purged words are gone from the database file itself (grep counts 0 and "
            "exits 1):"),
        Sh(["grep", "-c", "en_US", ".agentstate/state.db"], expect=1),
    ]),
    Chapter("Context: what the model sees on the next turn", [
        Say("A follow-up task. The tests and the policy file are committed (state.db and the "
            "skills registry stay out of git by .agentstate/.gitignore):"),
        Edit("Makefile", "test:\n\tpython3 -m unittest -q\n"),
        Edit("test_parser.py", TEST_PARSER),
        Sh(["git", "add", "Makefile", "test_parser.py", ".agentstate"]),
        Sh(["git", "commit", "-q", "-m", "tests, and the agentstate policy"]),
        Cmd(["run", "start", "Run the parser tests in CI under de_DE.UTF-8 as well as the "
             "CI locale", "--constraint", "Keep the existing CI job unchanged"], save="run2"),
        Cmd(["log", "question", "Which CI workflow file sets the locale?"]),
        Say("A pack within 2,000 tokens. The goal and constraints first, then evidence (the "
            "current memory with its source and trust, past events of every run grouped by "
            "run and source), the skill catalog, pointers to what was left out, this run's "
            "trajectory, and the task state, open questions and drift last, where a model "
            "reads best. The pack ref goes to stderr:"),
        Cmd(["context", "--budget", "2000"], save="pack", save_kind="pack",
            shows=["## Constraints", "{mem_current}", "skill:verify-tests@v1",
                   "## Task state", "## Open questions", "## Work-tree drift"]),
        Say("--explain adds the allocation per class and every candidate left out, with "
            "the reason (stale: resolved since; duplicate: already shown; low relevance):"),
        Cmd(["context", "--budget", "2000", "--explain"], skip_repeat=r"^pack:\S+ allocation",
            shows=["allocation", "stale"]),
        Say("trace follows the refs back: pack → fragment → memory version → its evidence "
            "event (and on to the run it came from):"),
        Cmd(["trace", "{pack}"], shows=["{mem_current}", "{a_locale}"]),
    ]),
    Chapter("Skills and the tool layer", [
        Cmd(["skill", "list"], shows=["skill:verify-tests@v1"]),
        Cmd(["skill", "match", "run the parser tests"], shows=["skill:verify-tests@v1"]),
        Say("Loading prints the body marked with its ref and trust, and records the load "
            "against the exact version:"),
        Cmd(["skill", "load", "verify-tests"], shows=["load recorded"]),
        Say("Following it: log what is being verified, run the repository's own test entry "
            "through the tool layer (policy check, no shell, logged), record the verdict:"),
        Cmd(["log", "verify", "The parser tests pass under make test"], save="v_make"),
        Cmd(["exec", "--", "make", "test"]),
        Cmd(["log", "verified", "make test passed", "--source", "tool:make",
             "--resolves", "{v_make}"]),
        Cmd(["exec", "--", "git", "status", "--short"]),
        Say("A command the [tools] policy denies is not run, but the attempt is logged "
            "(exit 3):"),
        Cmd(["exec", "--", "curl", "-s", "https://example.com"], expect=3,
            shows=["denied"]),
        Cmd(["events", "--kind", "tool"], shows=["make test", "denied"]),
        Cmd(["run", "end", "{run2}", "--status", "done"]),
        Say("A finished run's successful tool calls can become a skill candidate: steps in "
            "order, the test call as acceptance, the denied call left out. It is only a "
            "candidate: publishing needs passing acceptance (and approval when its sources "
            "are untrusted):"),
        Cmd(["skill", "propose", "--from-run", "{run2}", "--name", "parser-tests-ci"],
            shows=["candidate", "make test"]),
        Say("Which runs used verify-tests v1, and which context packs listed it:"),
        Cmd(["trace", "skill:verify-tests@v1"], shows=["loaded by: {run2}", "{pack}"]),
    ]),
]


def _show(prompt: str, output: str) -> None:
    print(f"$ {prompt}")
    if output:
        print(output.rstrip("\n"))
    print()


def _shell(args: list[str]) -> str:
    """The command line as one would type it (quoted only where a shell needs it)."""
    return " ".join(a if re.fullmatch(r"[\w:.@/=+-]+", a) else repr(a) for a in args)


def _combined(stdout: str, stderr: str) -> str:
    """stdout then stderr, as a terminal shows them when stdout does not end a line."""
    if stdout and stderr and not stdout.endswith("\n"):
        stdout += "\n"
    return stdout + stderr


def _fail(message: str) -> int:
    print(f"demo: FAILED: {message}", file=sys.stderr)
    return 1


PACK_SHA = re.compile(r"^pack:\S+: .*\(sha256 ([0-9a-f]+)\)", re.M)


def _elide_repeat(stdout: str, stderr: str, start: str, previous_sha: str | None) -> str:
    """Drop the pack text an `--explain` step repeats, if it is byte-identical (same sha256
    as the previous pack); otherwise show everything."""
    sha = PACK_SHA.search(stderr)
    lines = stdout.splitlines(keepends=True)
    cut = next((i for i, line in enumerate(lines) if re.match(start, line)), None)
    if cut is None or sha is None or sha.group(1) != previous_sha:
        return stdout
    return (f"(… the same {cut} lines of pack text as above, sha256 {previous_sha}, "
            "not repeated here …)\n" + "".join(lines[cut:]))


def play(chapters: list[Chapter], workdir: Path) -> int:
    refs: dict[str, str] = {}
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", GIT_AUTHOR_NAME="Dev",
               GIT_AUTHOR_EMAIL="dev@example.com", GIT_COMMITTER_NAME="Dev",
               GIT_COMMITTER_EMAIL="dev@example.com")
    # The venv first on PATH for the demo's own shell steps. Commands the tool layer runs
    # (make test, skill steps) find programs on `[tools] path` instead, and `agentstate`
    # beside this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # Nothing from the caller's environment may steer the story: another store, another
    # principal, or `make`'s own variables (which would make the inner `make test` chatty).
    for name in ("AGENTSTATE_DIR", "AGENTSTATE_PRINCIPAL", "AGENTSTATE_NOW",
                 "AGENTSTATE_ID_SEED", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
        env.pop(name, None)
    last_sha: str | None = None
    for number, chapter in enumerate(chapters, start=1):
        print(f"\n## {number}. {chapter.title}\n")
        for step in chapter.steps:
            if isinstance(step, Say):
                print(textwrap.fill(step.text, width=96, initial_indent="# ",
                                    subsequent_indent="# ") + "\n")
            elif isinstance(step, Edit):
                target = workdir / step.path
                with target.open("a" if step.append else "w", encoding="utf-8") as handle:
                    handle.write(step.text)
                print(f"# (edit {step.path})\n")
            elif isinstance(step, Sh):
                proc = subprocess.run(step.args, cwd=workdir, env=env, capture_output=True,
                                      text=True)
                tail = f"[exit {proc.returncode}]" if proc.returncode else ""
                _show(_shell(step.args), _combined(proc.stdout, proc.stderr) + tail)
                if proc.returncode != step.expect:
                    return _fail(f"`{_shell(step.args)}` exited {proc.returncode}, "
                                 f"expected {step.expect}")
            else:
                args = [a.format(**refs) for a in step.args]
                proc = subprocess.run([AGENTSTATE, *args], cwd=workdir, env=env,
                                      capture_output=True, text=True)
                shown = _shell(["agentstate", *args])
                tail = f"[exit {proc.returncode}]" if proc.returncode else ""
                stdout = proc.stdout
                if step.skip_repeat:
                    stdout = _elide_repeat(stdout, proc.stderr, step.skip_repeat, last_sha)
                _show(shown, _combined(stdout, proc.stderr) + tail)
                if proc.returncode != step.expect:
                    return _fail(f"`{shown}` exited {proc.returncode}, expected {step.expect}")
                output = proc.stdout + proc.stderr
                missing = [w.format(**refs) for w in step.shows
                           if w.format(**refs) not in output]
                if missing:
                    return _fail(f"`{shown}` did not print {missing}")
                sha = PACK_SHA.search(proc.stderr)
                if sha:
                    last_sha = sha.group(1)
                found = REF.findall(proc.stdout)
                if step.save:
                    pool = found if step.save_kind is None else [
                        r for r in REF.findall(proc.stdout + "\n" + proc.stderr)
                        if r.startswith(step.save_kind + ":")]
                    if not pool:
                        return _fail(f"`{shown}` printed no ref to keep as {{{step.save}}}")
                    refs[step.save] = pool[0]
                    # `{name_chain}`: a memory's ref without its version names the chain.
                    refs[f"{step.save}_chain"] = pool[0].split("@")[0]
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
        status = play(CHAPTERS, workdir)
        if status == 0:
            print("# demo finished: every step exited as expected (the temporary repository "
                  "is removed)")
        return status
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
