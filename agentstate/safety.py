"""Content checks shared by every write path: secrets (refuse) and injected instructions.

Secrets are refused before anything is stored: callers must check text *before* it reaches a
table, a history row or a log line. Messages name the kind of secret, never its value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from agentstate.errors import Refused


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


_SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("GitHub token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b")),
    ("OpenAI-style API key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("PyPI token", re.compile(r"\bpypi-AgE[A-Za-z0-9_\-]{40,}")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("Stripe key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}\b")),
    ("JSON web token",
     re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{20,}")),
    ("credential in URL", re.compile(r"[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@")),
    (
        "password assignment",
        re.compile(
            # (?<=_) too: DB_PASSWORD=… and MY_API_KEY=… have no word boundary before the name.
            r"(?i)(?:\b|(?<=_))(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token"
            r"|auth[_-]?token"
            r"|client[_-]?secret|private[_-]?key|secret[_-]?access[_-]?key)\b\s*[:=]\s*['\"]?"
            r"[^\s'\"]{4,}"
        ),
    ),
    # A bare `token` name is common in prose ("the csrf token = per request"), so only a
    # token-shaped value (16+ characters without spaces) counts.
    ("token assignment",
     re.compile(r"(?i)(?:\b|(?<=_))token\b\s*[:=]\s*['\"]?[A-Za-z0-9_\-./+=]{16,}")),
]

_CANDIDATE = re.compile(r"[A-Za-z0-9+/_=\-]{24,}")


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _looks_random(token: str) -> bool:
    """High-entropy strings that mix character classes, like generated keys.

    Hex digests (commit ids, sha256) are common and harmless in agent logs, so pure hex is
    never flagged; neither are paths or words joined by dashes/underscores.
    """
    if re.fullmatch(r"[0-9a-fA-F]+", token):
        return False
    if "/" in token and token.count("/") >= 2:
        return False
    classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    if classes < 3:
        return False
    return shannon_entropy(token) >= 4.2


def find_secrets(text: str) -> list[Finding]:
    findings = [
        Finding(kind, m.start(), m.end())
        for kind, pattern in _SECRET_PATTERNS
        for m in pattern.finditer(text)
    ]
    covered = [(f.start, f.end) for f in findings]
    for m in _CANDIDATE.finditer(text):
        if any(s <= m.start() < e for s, e in covered):
            continue
        if _looks_random(m.group(0)):
            findings.append(Finding("high-entropy string", m.start(), m.end()))
    return sorted(findings, key=lambda f: f.start)


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
