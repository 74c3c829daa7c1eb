"""One CLI: global options on either side of the command, meaningful help placeholders, a
read-only store still builds context, read commands after `run end`, an announced change of
the current run, and labels that read as English."""

from __future__ import annotations

import json

import pytest

from agentstate import __version__
from agentstate.cli import ALL_MODULES, app, load_commands
from tests.cli.test_bad_input import _without_privileges


def test_global_options_before_or_after_the_command(cli, initialised):
    cli.ok("run", "start", "goal")
    before = cli("--json", "log", "note", "x")
    assert before.exit_code == 0 and before.json()["data"]["text"] == "x"
    version = cli("--version", "--json")
    assert version.exit_code == 0 and version.json()["data"]["version"] == __version__
    assert cli.ok("events", "--version").stdout == f"agentstate {__version__}\n"
    elsewhere = initialised.parent / "elsewhere"
    elsewhere.mkdir()
    after = cli("log", "note", "y", "--dir", str(initialised), "--json")
    assert after.exit_code == 0 and after.json()["data"]["text"] == "y"
    # `--json` after `--` is the child's, not agentstate's.
    assert cli.ok("exec", "--", "echo", "--json").stdout == "--json\n"



@pytest.mark.parametrize("args", [
    ["run", "--json", "start", "between"],          # between a group and its subcommand
    ["--json", "run", "start", "before"],
    ["run", "start", "--json", "after"],
    ["run", "--dir", ".", "--json", "start", "with --dir"],
])
def test_json_between_a_group_and_its_subcommand(cli, initialised, args):
    result = cli(*args)
    assert result.exit_code == 0, result.stdout
    envelope = result.json()
    assert envelope["command"] == "run start" and envelope["data"]["run"]["goal"] == args[-1]


def test_json_between_groups_reaches_every_leaf(cli, initialised):
    assert cli("memory", "--json", "list").json()["command"] == "memory list"
    assert cli("skill", "--json", "list").json()["command"] == "skill list"
    # A value that happens to read `--json` stays a value (it follows an option).
    cli.ok("run", "start", "goal")
    noted = cli("log", "--json", "note", "x", "--source", "tool:--json")
    assert noted.json()["data"]["source"] == "tool:--json"

def _all_help(cli) -> dict[str, str]:
    import typer

    load_commands(ALL_MODULES)
    helps = {}

    def walk(command, path):
        helps[" ".join(path)] = cli(*path, "--help").stdout
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return helps


def test_help_shows_meaningful_placeholders(cli, repo):
    helps = _all_help(cli)
    assert "Usage: agentstate log [OPTIONS] KIND TEXT" in helps["log"]
    assert "--run RUN" in helps["log"] and "--meta KEY=VALUE" in helps["log"]
    assert "--budget TOKENS" in helps["resume"] and "[REF]" in helps["resume"]
    for path, text in helps.items():
        assert "<str>" not in text and "<int>" not in text, path
        assert not any(f"{{{w}}}" in text for w in ("text", "kind", "ref", "name")), path


def test_context_on_a_read_only_store_prints_the_pack(cli, initialised):
    cli.ok("run", "start", "read only goal")
    db = initialised / ".agentstate" / "state.db"
    mode = db.stat().st_mode
    db.chmod(mode & ~0o222)
    try:
        proc = _without_privileges(["context", "--budget", "3000"], initialised)
        resume = _without_privileges(["resume"], initialised)
    finally:
        db.chmod(mode)
    assert proc.returncode == 0, proc.stderr
    assert "read only goal" in proc.stdout
    assert "read-only: the pack is printed but not recorded" in proc.stderr
    assert resume.returncode == 0


def test_read_commands_after_run_end_show_the_last_run(cli, initialised):
    run = cli.json("run", "start", "finished work")["run"]["ref"]
    cli.ok("log", "note", "last words")
    cli.ok("run", "end")
    events = cli.ok("events")
    assert "last words" in events.stdout
    assert f"no active run; showing the most recent, {run} (done" in events.stderr
    shown = cli.ok("run", "show")
    assert "finished work" in shown.stdout and run in shown.stderr
    checkpoint = cli("checkpoint")
    assert checkpoint.exit_code == 1 and f"the most recent, {run}, is done" in checkpoint.stderr


def test_a_command_that_changes_the_current_run_says_so(cli, initialised):
    run = cli.json("run", "start", "mine")["run"]["ref"]
    path = initialised / "other.jsonl"
    path.write_text(json.dumps({"kind": "note", "text": "imported"}) + "\n")
    result = cli.ok("import", "jsonl", str(path))
    imported = result.stdout.split()[0]
    assert f"the current run is now {imported}, was {run}" in result.stderr
    assert "current run" not in cli.ok("log", "note", "x").stderr  # unchanged: nothing said


def test_write_labels_read_as_english(cli, initialised):
    cli.ok("run", "start", "goal")
    first = cli.json("remember", "use pytest", "-k", "fact", "--key", "test-cmd", "-e", "user")
    replaced = cli.ok("remember", "use tox", "-k", "fact", "--key", "test-cmd", "-e", "user")
    assert "stored as the current value (active)" in replaced.stdout
    assert "superseded (active)" not in replaced.stdout
    contested = cli.ok("remember", "use nose", "-k", "fact", "--key", "test-cmd",
                       "--source", "model", "-e", "user")
    assert "contested (contested)" not in contested.stdout
    assert "stored as contested" in contested.stdout
    assert first["ref"]
    answer = cli("log", "answer", "x")
    assert "an answer event needs --resolves" in answer.stderr
    wrong = cli("log", "note", "x", "--run", "evt:abc")
    assert "is an evt ref" in wrong.stderr


def test_a_hypothesis_is_marked_unconfirmed_wherever_the_pack_shows_it(cli, initialised):
    cli.ok("run", "start", "goal")
    ref = cli.json("log", "hypothesis", "maybe the locale")["ref"]
    for n in range(3):  # a trajectory, so the hypothesis could be shown there or in task state
        cli.ok("log", "note", f"looked at module {n}")
    text = cli.ok("context", "--budget", "4000").stdout
    lines = [ln for ln in text.splitlines() if ref in ln]
    assert lines and all("UNCONFIRMED" in ln for ln in lines)


@pytest.mark.parametrize("args", [("resume", "--budget", "abc"),
                                  ("exec", "--timeout", "abc", "--", "true")])
def test_bad_values_are_one_line_usage_errors(cli, initialised, args):
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
