"""How a tool call ended, from whatever the agent client sent about it.

Clients do not agree on how a command's result reaches a hook or a transcript. Claude Code
sends a failed command as `PostToolUseFailure` with `Exit code N` as the first line of its
`error` text; Codex sends the text the model saw — a header (`Chunk ID`, `Wall time`,
`Process exited with code N`, …) and then `Output:` — with no exit code field at all. A
result without an exit code therefore gets one from the client's own text where it wrote
one, otherwise a verdict from the well-known summaries of test runners and compilers, and
otherwise it is *unknown*: never `ok` by default, because a failing test recorded as a
success hides exactly what the next session needs to see.

Only bounded parts of the output are examined (the header, and the last SIGNATURE_CHARS of
the text), so a huge output costs no more than a small one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentstate.lazy_re import LazyPattern

# How an outcome was known (meta `outcome`): the order is the order of trust.
EXIT_CODE = "exit code"  # a field of the payload or record
CLIENT_TEXT = "client text"  # the client's own words: "Process exited with code 1"
CLIENT_EVENT = "client event"  # the client reported success or failure, without a code
SIGNATURE = "signature"  # a test runner's or compiler's summary in the output
UNKNOWN = "unknown"

SIGNATURE_CHARS = 64 * 1024  # the summary of a run sits at its end
HEADER_LINES = 12  # Codex's header is a handful of lines before `Output:`

# Codex's header before the command's output ("Chunk ID: …", "Wall time: 0.5 seconds",
# "Process exited with code 1", "Original token count: 12", "Exit code: 1", then "Output:").
_HEADER_LINE = LazyPattern(
    r"^(?:Chunk ID:|Wall time:|Process exited with code -?\d+|Process running with session"
    r"|Original token count:|Total output lines:|Exit code:? -?\d+)")
_CLIENT_EXIT = LazyPattern(r"^(?:Process exited with code|Exit code:?) (-?\d+)\s*$")
# Claude Code's failed command: "Exit code 1" (then the output) at the start of `error`.
_CLAUDE_EXIT = LazyPattern(r"\AExit code (-?\d+)[ \t]*(?:\r?\n|\Z)")

# Failure signatures: each names a run that failed, whatever the exit code was.
_FAILED = LazyPattern(
    r"^=+ .*\b\d+ (?:failed|errors?)\b.* in [\d.]+s"  # pytest's closing line
    r"|^\d+ failed(?:, \d+ \w+)* in [\d.]+s"  # pytest -q
    r"|^(?:FAILED|ERROR) \S+::"  # pytest's short summary
    r"|^FAILED \((?:failures|errors)=\d+"  # unittest
    r"|^Tests:\s+(?:.*, )?\d+ failed"  # jest
    r"|^Test Suites:\s+\d+ failed"  # jest
    r"|^--- FAIL: |^FAIL\s+\S+\s+[\d.]+s$|^FAIL$"  # go test
    r"|^test result: FAILED\."  # cargo test
    r"|^error(?:\[E\d+\])?: "  # rustc / cargo
    r"|^\S+:\d+(?::\d+)?: (?:fatal )?error: "  # gcc, clang, go vet
    r"|^\S+\(\d+,\d+\): error TS\d+:|^\S+:\d+:\d+ - error TS\d+:"  # tsc
    r"|^make(?:\[\d+\])?: \*\*\* .*Error \d+"  # make
    r"|^npm ERR! |^npm error ",  # npm
    re.MULTILINE)
# Weaker: a traceback can be printed by a command that then succeeds (a logged exception),
# so it decides only when the client said nothing.
_FAILED_WEAK = LazyPattern(r"^Traceback \(most recent call last\):", re.MULTILINE)
# Success signatures: a runner's summary saying everything passed.
_PASSED = LazyPattern(
    r"^=+ (?:\d+ (?:passed|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+ in [\d.]+s"
    r"|^\d+ passed(?:, \d+ (?:skipped|xfailed|xpassed|deselected|warnings?))* in [\d.]+s"
    r"|^Ran \d+ tests? in [\d.]+s\s*\n\s*\nOK(?: \(.*\))?$"  # unittest
    r"|^Tests:\s+(?:\d+ (?:passed|skipped|todo), )*\d+ passed, \d+ total"  # jest
    r"|^ok\s+\S+\s+[\d.]+s|^PASS$"  # go test
    r"|^test result: ok\.",  # cargo test
    re.MULTILINE)


@dataclass(frozen=True)
class Outcome:
    """How a call ended: `failed` is None when nothing said (unknown)."""

    exit_code: int | None
    failed: bool | None
    how: str
    output: str  # the output without the client's wrapper

    @property
    def status(self) -> str:
        """The word a headline shows: `exit N`, `failed`, `ok` or `outcome unknown`."""
        if self.exit_code is not None:
            return f"exit {self.exit_code}"
        if self.failed is None:
            return "outcome unknown"
        return "failed" if self.failed else "ok"


def strip_client_wrapper(text: str) -> tuple[str, int | None]:
    """(the command's output, the exit code the header states) of a Codex-style result;
    the text itself and None when it has no such header."""
    head = text[:4096]
    lines = head.split("\n", HEADER_LINES + 1)
    code: int | None = None
    for index, line in enumerate(lines[:HEADER_LINES + 1]):
        line = line.rstrip("\r")
        if line.strip() == "Output:" and index > 0:
            body_start = sum(len(x) + 1 for x in lines[:index + 1])
            return text[body_start:], code
        if not _HEADER_LINE.match(line):
            break
        found = _CLIENT_EXIT.match(line)
        if found:
            code = int(found.group(1))
    return text, None


def strip_claude_exit(text: str) -> tuple[str, int | None]:
    """(the output, the exit code) of Claude Code's `Exit code N\\n…` error text."""
    found = _CLAUDE_EXIT.match(text)
    if not found:
        return text, None
    return text[found.end():], int(found.group(1))


def signature_verdict(text: str, *, strong_only: bool = False) -> bool | None:
    """True (a failure's signature), False (a passing summary and no failure), None.
    With `strong_only`, a traceback alone is no verdict."""
    tail = text[-SIGNATURE_CHARS:]
    if _FAILED.search(tail):
        return True
    if _PASSED.search(tail):
        return False
    if not strong_only and _FAILED_WEAK.search(tail):
        return True
    return None


def judge(output: str, *, exit_code: int | None = None, client_failed: bool | None = None,
          how: str | None = None) -> Outcome:
    """The outcome of one call from its output and what the client said.

    `exit_code` is a code the payload carried as a field (`how` = EXIT_CODE), else one is
    looked for in the client's wrapper; `client_failed` is the client's own word (a failure
    event, an error flag: True; a success report it makes only for calls that succeeded:
    False). A failure signature in the output overrides a client's success word, never an
    exit code."""
    body, code = strip_client_wrapper(output)
    if code is None:
        body, code = strip_claude_exit(body)
    if exit_code is not None:
        return Outcome(exit_code, exit_code != 0 or bool(client_failed), how or EXIT_CODE, body)
    if code is not None:
        return Outcome(code, code != 0 or bool(client_failed), CLIENT_TEXT, body)
    if client_failed:
        return Outcome(None, True, CLIENT_EVENT, body)
    verdict = signature_verdict(body, strong_only=client_failed is False)
    if verdict is True:
        return Outcome(None, True, SIGNATURE, body)
    if client_failed is False:
        return Outcome(None, False, CLIENT_EVENT, body)
    if verdict is False:
        return Outcome(None, False, SIGNATURE, body)
    return Outcome(None, None, UNKNOWN, body)
