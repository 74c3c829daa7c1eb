"""The one bounded excerpt of a tool's output: what a model needs to see of a failure.

`exec` and the transcript importers both keep an excerpt instead of the whole output. Head and
tail alone lose what matters in a long run (a pytest failure sits between pages of dots and
the summary), so the excerpt is chosen line by line, within EXCERPT_CHARS:

1. the last lines (the summary: `1 failed, 3 passed`, the exit message);
2. error lines anywhere: `error`/`failed`/`FAILED`, pytest's `E   assert …` lines, assertion
   messages, and an exception line with the two lines before it (a traceback's last frame);
3. the first lines (what was run), while room is left.

Lines are kept in their original order; each gap is marked with how many lines it hides.
Only what is kept is scanned for secrets: lines are chosen first (from a bounded head and
tail of a huge output), then the chosen text is redacted, so the scanner's cost follows the
excerpt, not the output. Private key blocks are the exception: their body lines do not look
secret without their BEGIN line, so key blocks are masked before lines are chosen (a plain
substring test decides whether there is one). If something secret-shaped survives
redaction, the excerpt is withheld entirely.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from agentstate.lazy_re import LazyPattern
from agentstate.safety import Scanned, find_secrets, redact_secrets

EXCERPT_CHARS = 3000
# A huge output is read from its head and its tail only: the command line and the summary
# are there, and a 1 GB output costs what a 4 MB one does (line choice only: the secret
# scan runs on the chosen ~3 KB).
BOUND_HEAD_CHARS = 1024 * 1024
BOUND_TAIL_CHARS = 3 * 1024 * 1024
MAX_LINE_CHARS = 300  # one minified or base64 line must not eat the whole excerpt
TAIL_LINES = 12
HEAD_LINES = 3
MASK = "***"  # short on purpose: "[REDACTED]" after "password=" would itself look like one
WITHHELD = "(withheld: contains what looks like a secret)"

_ERROR_LINE = LazyPattern(
    r"\b(?:error|errors|failed|failure|fatal|panic|exception|traceback)\b|\bFAIL(?:ED)?\b"
    r"|^E\s{2,}|^\s*assert\b|AssertionError|Exit code [1-9]",
    re.IGNORECASE,
)
# `ValueError: bad`, `pkg.errors.Boom`, `AssertionError` alone: a raised exception's line.
_EXCEPTION_LINE = LazyPattern(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b:?")


def is_error_line(line: str) -> bool:
    """Does this line look like part of a failure (what an excerpt keeps first)?"""
    return bool(_ERROR_LINE.search(line) or _EXCEPTION_LINE.match(line))


def redact(text: str) -> str:
    """Redact secrets; if a pattern still matches afterwards, withhold the text entirely.
    What comes back is marked scanned: a meta holding it is not scanned for it again."""
    cleaned = redact_secrets(text, mask=MASK)
    if cleaned == text:
        # redact_secrets found nothing in it: scanning it again would find nothing
        return Scanned(text)
    if find_secrets(cleaned):
        return Scanned(WITHHELD)
    return Scanned(cleaned)


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
    text, cut_note = _bounded(text)
    text = _mask_key_blocks(text)
    # Each line is redacted as it is chosen (below), before it is clipped: a token cut
    # in half by the clip would no longer be recognised.
    lines = [line.rstrip() for line in text.split("\n")]
    total = len(lines)
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> bool:
        nonlocal used
        if index in chosen or not 0 <= index < total:
            return True
        if used + 2 > limit - 200:
            return False  # full: no line fits, so none is scanned
        lines[index] = _clip(redact_secrets(lines[index][: 4 * MAX_LINE_CHARS], mask=MASK))
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
    # 2. Error lines, the latest first (the last failure is the one still open), until one
    # does not fit: each candidate is scanned for secrets before it is measured, and an output
    # of thousands of failures must not cost a scan of each.
    for group in _error_groups(lines):
        if not all([take(index) for index in group]):
            break
    # 3. The first lines, while room is left.
    for index in range(min(HEAD_LINES, total)):
        if not take(index):
            break
    if cut_note is not None and cut_note in lines:
        take(lines.index(cut_note))  # the reader must know a part was never looked at
    return redact(_with_gaps(lines, chosen))


def _error_groups(lines: list[str]) -> Iterator[tuple[int, ...]]:
    """The error lines' indexes, the latest first: an exception line with the two lines
    before it (where it was raised), any other error line alone."""
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index][: 4 * MAX_LINE_CHARS]
        if _EXCEPTION_LINE.match(line.strip()) and line[:1] not in (" ", "\t"):
            yield (index - 2, index - 1, index)
        elif _ERROR_LINE.search(line):
            yield (index,)


def _bounded(text: str) -> tuple[str, str | None]:
    """A very long text cut to its head and tail before anything is scanned, with the note
    saying so where the cut is; and the note (None when nothing was cut)."""
    if len(text) <= BOUND_HEAD_CHARS + BOUND_TAIL_CHARS:
        return text, None
    hidden = len(text) - BOUND_HEAD_CHARS - BOUND_TAIL_CHARS
    head, tail = text[:BOUND_HEAD_CHARS], text[-BOUND_TAIL_CHARS:]
    cut_note = f"[… {hidden} characters omitted …]"
    return head.rsplit("\n", 1)[0] + "\n" + cut_note + "\n" + tail.split("\n", 1)[-1], cut_note


def _with_gaps(lines: list[str], chosen: set[int]) -> str:
    """The chosen lines in order, each run of lines left out shown as a count."""
    out: list[str] = []
    previous = -1
    for index in sorted(chosen):
        if index > previous + 1:
            out.append(f"[… {index - previous - 1} line(s) omitted …]")
        out.append(lines[index])
        previous = index
    if previous < len(lines) - 1:
        out.append(f"[… {len(lines) - 1 - previous} line(s) omitted …]")
    return "\n".join(out)


def _mask_key_blocks(text: str) -> str:
    """Mask private key blocks whole (their body lines alone do not look secret)."""
    if "PRIVATE KEY" not in text and "PuTTY-User-Key-File" not in text:
        return text
    from agentstate.secret_scan import mask_key_blocks

    return mask_key_blocks(text, MASK)


def output_excerpt(stdout: str, stderr: str = "", limit: int = EXCERPT_CHARS) -> str:
    """The excerpt of a command's two streams, stderr after stdout under a `[stderr]` mark."""
    text = stdout or ""
    if (stderr or "").strip():
        text = (text + "\n" if text.strip() else "") + "[stderr]\n" + stderr
    return excerpt(text, limit)


FAILURE_LINE_CHARS = 160
# Lines that name the failure itself rank above wrapper lines ("make: *** Error 2"), which
# rank above summaries ("1 failed, 3 passed").
_HINTS = (LazyPattern(r"^E\s+\S"),  # pytest's own line for the exception: the shortest form
          LazyPattern(r"(FAILED|FAIL:|AssertionError|panicked|Traceback)"),
          LazyPattern(r"(ERROR|Error\b|Error:|Exception|fatal:)"),
          LazyPattern(r"(fail|error)", re.IGNORECASE))
EXIT_IN_TEXT = LazyPattern(r"[Ee]xit (?:code|status)[: ]+(\d+)")


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
