"""The one bounded excerpt of a tool's output: what a model needs to see of a failure.

`exec` and the transcript importers both keep an excerpt instead of the whole output. Head and
tail alone lose what matters in a long run (a pytest failure sits between pages of dots and
the summary), so the excerpt is chosen line by line, within EXCERPT_CHARS:

1. the last lines (the summary: `1 failed, 3 passed`, the exit message);
2. error lines anywhere: `error`/`failed`/`FAILED`, pytest's `E   assert …` lines, assertion
   messages, and an exception line with the two lines before it (a traceback's last frame);
3. the first lines (what was run), while room is left.

Lines are kept in their original order; each gap is marked with how many lines it hides.
Secrets are redacted in the whole text before lines are chosen; if something secret-shaped
survives, the excerpt is withheld entirely.
"""

from __future__ import annotations

import re

from agentstate.safety import find_secrets, redact_secrets

EXCERPT_CHARS = 3000
MAX_LINE_CHARS = 300  # one minified or base64 line must not eat the whole excerpt
TAIL_LINES = 12
HEAD_LINES = 3
MASK = "***"  # short on purpose: "[REDACTED]" after "password=" would itself look like one
WITHHELD = "(withheld: contains what looks like a secret)"

_ERROR_LINE = re.compile(
    r"\b(?:error|errors|failed|failure|fatal|panic|exception|traceback)\b|\bFAIL(?:ED)?\b"
    r"|^E\s{2,}|^\s*assert\b|AssertionError|Exit code [1-9]",
    re.IGNORECASE,
)
# `ValueError: bad`, `pkg.errors.Boom`, `AssertionError` alone: a raised exception's line.
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b:?")


def is_error_line(line: str) -> bool:
    """Does this line look like part of a failure (what an excerpt keeps first)?"""
    return bool(_ERROR_LINE.search(line) or _EXCEPTION_LINE.match(line))


def redact(text: str) -> str:
    """Redact secrets; if a pattern still matches afterwards, withhold the text entirely."""
    cleaned = redact_secrets(text, mask=MASK)
    if find_secrets(cleaned):
        return WITHHELD
    return cleaned


def _clip(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[: MAX_LINE_CHARS - 1] + "…"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A redacted excerpt of `text` of at most about `limit` characters (see the module doc)."""
    text = (text or "").strip("\n")
    if not text.strip():
        return ""
    if len(text) <= limit:
        return redact(text)
    # Redact the whole output before choosing lines: a private key's body lines, chosen
    # without their BEGIN line, would no longer be recognisable as part of a key.
    text = redact_secrets(text, mask=MASK)
    lines = [_clip(line.rstrip()) for line in text.split("\n")]
    total = len(lines)
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> bool:
        nonlocal used
        if index in chosen or not 0 <= index < total:
            return True
        cost = len(lines[index]) + 1
        if used + cost > limit - 200:  # room for the gap markers
            return False
        chosen.add(index)
        used += cost
        return True

    # 1. The last lines, newest first.
    for index in range(total - 1, max(total - 1 - TAIL_LINES, -1), -1):
        if not take(index):
            break
    # 2. Error lines, the latest first (the last failure is the one still open).
    for index in range(total - 1, -1, -1):
        line = lines[index]
        if _EXCEPTION_LINE.match(line.strip()) and line[:1] not in (" ", "\t"):
            for context in (index - 2, index - 1, index):
                take(context)
        elif _ERROR_LINE.search(line):
            take(index)
    # 3. The first lines, while room is left.
    for index in range(min(HEAD_LINES, total)):
        if not take(index):
            break
    out: list[str] = []
    previous = -1
    for index in sorted(chosen):
        if index > previous + 1:
            out.append(f"[… {index - previous - 1} line(s) omitted …]")
        out.append(lines[index])
        previous = index
    if previous < total - 1:
        out.append(f"[… {total - 1 - previous} line(s) omitted …]")
    return redact("\n".join(out))


def output_excerpt(stdout: str, stderr: str = "", limit: int = EXCERPT_CHARS) -> str:
    """The excerpt of a command's two streams, stderr after stdout under a `[stderr]` mark."""
    text = stdout or ""
    if (stderr or "").strip():
        text = (text + "\n" if text.strip() else "") + "[stderr]\n" + stderr
    return excerpt(text, limit)


FAILURE_LINE_CHARS = 160
# Lines that name the failure itself rank above wrapper lines ("make: *** Error 2"), which
# rank above summaries ("1 failed, 3 passed").
_HINTS = (re.compile(r"^E\s+\S"),  # pytest's own line for the exception: the shortest form
          re.compile(r"(FAILED|FAIL:|AssertionError|panicked|Traceback)"),
          re.compile(r"(ERROR|Error\b|Error:|Exception|fatal:)"),
          re.compile(r"(fail|error)", re.IGNORECASE))
EXIT_IN_TEXT = re.compile(r"[Ee]xit (?:code|status)[: ]+(\d+)")


def telling_line(excerpt: str) -> str:
    """The most telling line of a failing command's output: the last line of the best hint
    tier that has one, else the last non-empty line."""
    lines = [line.strip() for line in excerpt.splitlines()
             if line.strip() and line.strip() not in ("[stderr]", "[...]")
             and not EXIT_IN_TEXT.fullmatch(line.strip())]
    chosen = next(([line for line in lines if hint.search(line)][-1] for hint in _HINTS
                   if any(hint.search(line) for line in lines)), lines[-1] if lines else "")
    chosen = re.sub(r"^E\s+", "", chosen)
    return chosen if len(chosen) <= FAILURE_LINE_CHARS else chosen[: FAILURE_LINE_CHARS - 1] + "…"
