"""The [tools] policy: prefix rules by program name, deny wins, no shell."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.config import ToolSettings, parse_settings
from agentstate.errors import InvalidInput
from agentstate.tools.policy import check_command, program_name


def cfg(allow, deny=()) -> ToolSettings:
    return parse_settings({"tools": {"allow": list(allow), "deny": list(deny)}}).tools


@pytest.mark.parametrize(
    "argv,allowed",
    [
        (["git", "status"], True),
        (["/usr/bin/git", "log"], True),  # matched by program name
        (["git", "push", "origin"], False),  # deny "git push" is a prefix
        (["git", "pushx"], True),  # words, not characters
        (["curl", "https://x"], False),
        (["/usr/local/bin/curl"], False),
        (["curly"], False),  # not in allow (and not denied by the "curl" rule)
        (["rm", "-rf", "/"], False),
        (["rm", "-rf", "build"], True),
        (["python3", "-c", "print(1); import os"], True),  # `;` is an argument, no shell
        (["bash", "-c", "ls"], False),
    ],
)
def test_rules(argv, allowed):
    config = cfg(["git", "rm", "python3", "curly-not"], ["git push", "curl", "rm -rf /"])
    decision = check_command(config, argv)
    assert decision.allowed is allowed, decision.reason


def test_star_allows_everything_but_deny_still_wins():
    config = cfg(["*"], ["ssh"])
    assert check_command(config, ["anything", "at", "all"]).allowed
    denied = check_command(config, ["ssh", "host"])
    assert not denied.allowed and denied.rule == "ssh" and "deny" in denied.reason


def test_multi_word_allow_is_a_prefix():
    config = cfg(["git status", "make test"])
    assert check_command(config, ["git", "status", "--short"]).allowed
    assert not check_command(config, ["git", "commit"]).allowed
    assert not check_command(config, ["make"]).allowed
    assert "not in [tools] allow" in check_command(config, ["ls"]).reason


def test_bad_rules_are_refused_at_load_and_an_empty_command_is_an_error():
    with pytest.raises(InvalidInput, match=r"\[tools\] allow must be a list of strings"):
        parse_settings({"tools": {"allow": "git"}})
    with pytest.raises(InvalidInput, match="does not split into words: No closing quotation"):
        cfg(["git 'unclosed"])
    with pytest.raises(InvalidInput, match="no command"):
        check_command(cfg(["*"]), [])


WORD = st.text(alphabet="abcdefgh-/.", min_size=1, max_size=8).filter(lambda w: w.strip("/"))


@settings(max_examples=40, deadline=None)
@given(argv=st.lists(WORD, min_size=1, max_size=4), deny=st.lists(WORD, min_size=1, max_size=3))
def test_a_denied_prefix_is_denied_whatever_follows(argv, deny):
    config = cfg(["*"], [" ".join(deny)])
    command = [deny[0], *deny[1:], *argv]
    assert not check_command(config, command).allowed
    # and the program's directory does not matter
    assert not check_command(config, ["/opt/bin/" + program_name(deny[0]), *deny[1:]]).allowed
