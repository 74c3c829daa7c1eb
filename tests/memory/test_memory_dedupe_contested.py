"""Repeating a contested value reports which current version it stands beside."""

from __future__ import annotations


def test_repeated_contested_value_names_the_current_version(cli, initialised):
    first = cli.json("remember", "tests run with make test", "--kind", "fact",
                     "--key", "test-command")
    contested = cli.json("remember", "tests run with pytest", "--kind", "fact",
                         "--key", "test-command", "--source", "model", "-e", "user")
    assert contested["status"] == "contested"
    again = cli.json("remember", "tests run with pytest", "--kind", "fact",
                     "--key", "test-command", "--source", "model", "-e", "user")
    assert again["action"] == "deduplicated"
    assert again["contests"] == first["ref"] == contested["contests"]
    human = cli("remember", "tests run with pytest", "--kind", "fact", "--key", "test-command",
                "--source", "model", "-e", "user")
    assert "beside None" not in human.stderr and first["ref"] in human.stderr
