"""Stored control characters and escape sequences are shown visibly in human output (on a
terminal and piped); --json keeps the stored text exact."""

from __future__ import annotations

import pytest

from agentstate.output import visible

CLEAR = "\x1b[2J"
TITLE = "\x1b]0;title\x07"
NASTY = f"before {CLEAR} {TITLE} nul\x00 after"
RAW = ("\x1b", "\x00", "\x07")


def test_visible_writes_out_controls_and_keeps_layout():
    assert visible(NASTY) == "before \\x1b[2J \\x1b]0;title\\x07 nul\\x00 after"
    assert visible("a\nb\tc\r\nd") == "a\nb\tc\r\nd"
    assert visible("over\rwrite \u202eevil \x9b") == "over\\x0dwrite \\u202eevil \\x9b"
    assert visible("plain [bold] ünïcode") == "plain [bold] ünïcode"


def test_the_printable_shortcut_never_skips_a_character_that_must_be_written_out():
    """`visible` returns a text untouched when Python calls every character printable (bar
    newlines and tabs): no code point the pattern escapes may be printable, and each one
    alone, between words and beside a newline, is written out."""
    from agentstate.output import _INVISIBLE

    escaped = [chr(cp) for cp in range(0x110000) if _INVISIBLE.search(chr(cp))]
    assert len(escaped) > 2000 and not any(char.isprintable() for char in escaped)
    for char in escaped[:64] + escaped[-64:] + ["\u2028", "\u202e", "\x9b", "\x7f"]:
        for text in (char, f"word {char} word", f"line\n{char}\tend"):
            assert char not in visible(text), repr(text)


@pytest.fixture
def nasty(cli, initialised):
    cli.ok("run", "start", f"goal {NASTY}")
    event = cli.json("log", "observation", NASTY)["ref"]
    memory = cli.json("remember", f"prefer {NASTY}", "-k", "preference")["ref"]
    return {"event": event, "memory": memory}


def _commands(refs: dict) -> list[tuple[str, ...]]:
    return [("events",), ("resume",), ("recall", "prefer"), ("context",),
            ("memory", "list"), ("memory", "show", refs["memory"]), ("trace", refs["event"]),
            ("run", "show")]


@pytest.mark.parametrize("terminal", [False, True], ids=["piped", "tty"])
def test_human_output_shows_stored_escapes_visibly(cli, nasty, terminal):
    # FORCE_COLOR makes rich treat the stream as a terminal (its own styling may then use
    # ESC, so on a terminal the check is for the stored sequences themselves).
    env = {"FORCE_COLOR": "1", "NO_COLOR": None, "TTY_COMPATIBLE": "1"} if terminal else {}
    for args in _commands(nasty):
        result = cli.ok(*args, env=env)
        shown = result.stdout + result.stderr
        assert "\\x1b[2J" in shown or args == ("recall", "prefer") and "\\x1b" in shown, args
        for raw in (CLEAR, TITLE, "\x00", "\x07") if terminal else RAW:
            assert raw not in shown, (args, raw, shown)


def test_json_keeps_the_stored_text_exact(cli, nasty):
    [event] = [e for e in cli.json("events") if e["kind"] == "observation"]
    assert event["text"] == NASTY
    assert cli.json("memory", "show", nasty["memory"])["current"]["text"] == f"prefer {NASTY}"
