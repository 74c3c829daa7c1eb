"""Patterns compiled on first use (agentstate/lazy_re.py), and the secret scanner compiling
only the rules its text reaches (a hook pays for what it scans, not for every rule)."""

from __future__ import annotations

import re
import subprocess
import sys

from agentstate.lazy_re import LazyPattern


def test_a_lazy_pattern_compiles_once_on_first_use_and_answers_like_re():
    lazy = LazyPattern(r"(?P<word>[a-z]+)=(\d+)", re.IGNORECASE)
    assert lazy._pattern is None  # nothing compiled at definition
    text = "A=1 bb=22 c=x DD=4"
    real = re.compile(lazy.source, lazy.flags)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    compiled = lazy._pattern
    assert compiled is not None
    assert lazy.search(text, 3).group("word") == "bb"
    assert lazy.match(text).group(2) == "1" and lazy.match(text, 1) is None
    assert lazy.fullmatch("ab=3") and not lazy.fullmatch("ab=3 ")
    assert lazy.findall(text) == real.findall(text)
    assert lazy.sub("#", text) == real.sub("#", text)
    assert lazy.sub(lambda m: m.group(1).upper(), text, 1) == "A bb=22 c=x DD=4"
    assert lazy.split(text, 1) == real.split(text, 1)
    assert lazy._pattern is compiled  # compiled once
    raw = LazyPattern(rb"[\x20-\x7e]{4,}")
    assert raw.findall(b"\x00abcd\x01ef\x02ghijk") == [b"abcd", b"ghijk"]


PROBE = """
import sys
from agentstate import secret_formats as f, secret_scan as s
rules = {"assignment": s._ASSIGNMENT, "prose": s._PROSE, "url": s._URL_TOKEN,
         "private key": f._PRIVATE_KEY, "invisible": s._INVISIBLE}
text = sys.stdin.read()
print(s.redact_secrets(text))
print("COMPILED", sorted(name for name, rule in rules.items() if rule._pattern is not None))
"""


def _scan(text: str) -> tuple[str, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE], input=text, text=True,
                          capture_output=True, check=True, timeout=60)
    redacted, _, compiled = proc.stdout.rpartition("COMPILED ")
    return redacted, compiled.strip()


def test_the_secret_scanner_compiles_only_the_rules_its_text_reaches():
    plain = "README.md  agentstate  docs  tests\nOn branch main, nothing to commit\n"
    redacted, compiled = _scan(plain)
    assert redacted.strip() == plain.strip() and compiled == "[]"
    # Each rule still catches what it is for once its words are there.
    secret = "Tr0ub4dor&3x"
    redacted, compiled = _scan(f"the prod DB password is {secret}\n")
    assert secret not in redacted and "[REDACTED]" in redacted
    assert compiled == "['assignment', 'prose']"
    redacted, compiled = _scan(f"DB_PASSWORD={secret}\n")
    assert secret not in redacted and "assignment" in compiled
    # Look-alike letters are folded before the words are looked for: a Cyrillic `А` and a
    # long s in the name still reach the assignment rule.
    redacted, compiled = _scan(f"DB_P\u0410\u017fSWORD={secret}\n")
    assert secret not in redacted and "assignment" in compiled and "invisible" in compiled
