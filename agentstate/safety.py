"""Content checks shared by every write path: secrets (refuse) and injected instructions.

Secrets are refused before anything is stored: callers must check text *before* it reaches a
table, a history row or a log line. Messages name the kind of secret, never its value.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agentstate.errors import Refused
from agentstate.secret_scan import Finding, find_secrets, shannon_entropy

__all__ = ["Finding", "find_injection", "find_secrets", "redact_secrets", "refuse_secrets",
           "shannon_entropy"]


def refuse_secrets(text: str, what: str = "text") -> None:
    """Raise Refused (exit 3) naming the kinds of secret found; never echo the value."""
    findings = find_secrets(text)
    if findings:
        kinds = sorted({f.kind for f in findings})
        raise Refused(
            f"{what} looks like it contains a secret ({', '.join(kinds)}); nothing was stored",
            details={"secret_kinds": kinds},
        )


def redact_secrets(text: str, mask: str = "[REDACTED]") -> str:
    """Replace every secret span (for tool output excerpts, which must be kept but not leak)."""
    findings = find_secrets(text)
    if not findings:
        return text
    out, last = [], 0
    for f in findings:
        if f.start < last:
            last = max(last, f.end)
            continue
        out.append(text[last:f.start])
        out.append(mask)
        last = f.end
    out.append(text[last:])
    return "".join(out)


# Compiled on first use: most commands (context, recall, trace) never check for injection.
_INJECTION_SOURCES = (
    r"\bignore (?:all |any |the )?(?:previous|prior|above|earlier) "
    r"(?:instructions|prompts?|rules)",
    r"\bdisregard (?:all |any |the )?(?:previous|prior|above|earlier|your) ",
    r"\byou are now\b",
    r"\bnew instructions?\s*:",
    r"\bsystem prompt\b",
    r"\b(?:run|execute)\s+(?:this|the following)\b",
    r"\b(?:send|post|upload|exfiltrate|forward)\b.{0,60}\b(?:to|at)\s+(?:https?://|\S+@\S+|"
    r"this (?:url|address|server))",
    r"\bcurl\s+[^\n]*\|\s*(?:ba)?sh\b",
    r"\b(?:publish|approve|install)\s+(?:this|the following|a new)\s+skill\b",
    r"\bas an ai (?:agent|assistant),? you must\b",
    r"\bdo not (?:tell|inform) the user\b",
    r"\b(?:forget|override|bypass) (?:all |any |your |the )?(?:previous |prior )?"
    r"(?:instructions|rules|guidelines|safety)\b",
    # Chinese and Japanese forms of "ignore the previous instructions" / "you are now".
    r"(?:忽略|无视|忽視|無視)(?:掉)?(?:之前|以上|上面|前面|先前|所有|全部)?的?(?:所有|全部)?"
    r"(?:指令|指示|提示|规则|規則)",
    r"(?:以前|前)の(?:指示|命令)を(?:無視|忘れ)",
    r"你现在是|你現在是",
)


@lru_cache(maxsize=1)
def _injection_patterns() -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in _INJECTION_SOURCES)


def find_injection(text: str) -> list[str]:
    """Phrases that read as instructions aimed at the agent (for non-user content)."""
    return [m.group(0) for p in _injection_patterns() for m in [p.search(text)] if m]
