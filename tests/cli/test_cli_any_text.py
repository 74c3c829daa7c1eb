"""Property: every command, given any text (surrogates from undecodable bytes, control
characters, escape sequences, brackets rich could read as markup, very long or empty), ends
with a documented exit code and never a traceback; under --json stdout is one strict JSON
document. In-process through main() (the same boundary as the installed command)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import crash_logs

T = "\0TEXT\0"  # where the generated text goes
TEMPLATES = [
    ("log", "note", T), ("log", T, "x"), ("log", "note", "x", "--meta", T),
    ("log", "note", "x", "--meta", f"k={T}"), ("log", "note", "x", "--source", T),
    ("log", "answer", "x", "--resolves", T), ("checkpoint", "--note", T), ("run", "start", T),
    ("run", "show", T), ("remember", T, "-k", "fact"), ("remember", "x", "-k", T),
    ("remember", "x", "-k", "fact", "--key", T), ("remember", "x", "-k", "fact", "--scope", T),
    ("remember", "x", "-k", "fact", "--ttl", T), ("recall", T), ("forget", "--key", T),
    ("forget", T), ("context", "--query", T, "--budget", "2000"), ("context", "--budget", T),
    ("resume", T), ("resume", "--budget", T), ("events", "--kind", T), ("events", "--limit", T),
    ("trace", T), ("memory", "show", T), ("memory", "list", "--status", T),
    ("skill", "new", T), ("skill", "new", "ok-name", "--description", T),
    ("exec", "--timeout", T, "--", "true"), ("import", "jsonl", T), (T,), ("run", T),
    ("run", "distill", T), ("run", "end", T), ("memory", "history", T),
    ("memory", "correct", T, "x"), ("memory", "confirm", T), ("skill", "load", T),
    ("skill", "test", T), ("skill", "validate", T), ("skill", "publish", T),
    ("hooks", "status", "--agent", T), ("doctor", T), ("log", "note", "x", "--as", T),
    ("events", "--run", T), ("checkpoint", "--run", T),
]
DOCUMENTED = {0, 1, 2, 3}

# Text a fuzzer would send: any code point (lone surrogates included), weighted towards
# controls, escape sequences and markup.
NASTY = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=("Cc", "Cs", "Zl", "Zp", "Cf")), max_size=12),
    st.sampled_from(["", "-", "--", " ", "\x1b[2J", "\x1b]0;t\x07", "[bold]x[/]", "\x00",
                     "\udcff", "ok \udcff", "\ud800", "evt:", "mem:x@v0", "k=\x00", "9" * 30,
                     "NaN", "-1", "x" * 3000]),
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(template=st.sampled_from(TEMPLATES), text=NASTY, as_json=st.booleans())
def test_any_text_in_any_command(cli, initialised, template, text, as_json):
    if not getattr(cli, "_started", False):
        cli.ok("run", "start", "fuzzed goal")
        cli._started = True
    args = [a.replace(T, text) if T in a else a for a in template]
    if as_json:
        args.insert(0, "--json")  # global options go before or after the command
    before = len(crash_logs())
    result = cli(*args)
    shown = result.stdout + result.stderr
    assert result.exit_code in DOCUMENTED, (args, result.exit_code, shown[-500:], crash_logs())
    assert "Traceback" not in shown and len(crash_logs()) == before, args
    if as_json and result.stdout:
        json.loads(result.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    if result.exit_code and not as_json:
        # The error is the last line (a note such as "showing the most recent run" may come
        # before it).
        last = (result.stderr.splitlines() or [""])[-1]
        assert last.startswith("error: ") or "Usage:" in result.stdout, args


def test_a_usage_error_quoting_undecodable_bytes_is_still_one_json_document(cli, initialised):
    # click quotes the unexpected argument; a byte that is not UTF-8 reaches it as a lone
    # surrogate, which the envelope could not encode.
    result = cli("--json", "doctor", "\udc80")
    assert result.exit_code == 2
    error = result.json()["error"]
    assert error["code"] == "usage" and "\\x80" in error["message"]
