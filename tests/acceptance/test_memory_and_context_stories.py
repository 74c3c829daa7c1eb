"""Acceptance findings for memory (issue 3) and context (issue 4), driven from the CLI."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

GH_TOKEN = "ghp_R4nd0mT0k3nV4lu3Abcdefghij0123456789"


def _packs(repo) -> int:
    db = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        return db.execute("SELECT count(*) FROM packs").fetchone()[0]
    finally:
        db.close()


def test_secret_in_system_file_is_refused_not_echoed(cli, initialised):
    cli.ok("run", "start", "goal", "--constraint", "keep the API")
    (initialised / "AGENTS.md").write_text(f"Push with the token {GH_TOKEN}\n")
    result = cli("context", "--system", "AGENTS.md", "--budget", "2000")
    assert result.exit_code == 3
    assert GH_TOKEN not in result.stdout and GH_TOKEN not in result.stderr
    assert "secret" in result.stderr
    assert _packs(initialised) == 0


def test_huge_budget_is_a_clear_error_not_a_traceback(cli, initialised):
    cli.ok("run", "start", "goal")
    result = cli("context", "--budget", "9" * 25, "--json")
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "invalid_input"
    assert "Traceback" not in result.stderr
    assert _packs(initialised) == 0


@pytest.mark.parametrize(
    "args",
    [
        ("remember", "x", "--kind", "fact", "--as", GH_TOKEN),
        ("remember", "x", "--kind", "fact", "--until", GH_TOKEN),
        ("remember", "x", "--kind", "fact", "--ttl", GH_TOKEN),
        ("remember", "x", "--kind", GH_TOKEN),
        ("recall", "foo", "--include", GH_TOKEN),
        ("memory", "show", f"mem:{GH_TOKEN}"),
        ("memory", "list", "--status", GH_TOKEN),
        ("trace", GH_TOKEN),
    ],
)
def test_error_messages_never_echo_a_secret(cli, initialised, args):
    result = cli(*args)
    assert result.exit_code in (1, 3)
    assert GH_TOKEN not in result.stderr and GH_TOKEN not in result.stdout
    as_json = cli(*args, "--json")
    assert GH_TOKEN not in as_json.stdout
    assert as_json.json()["ok"] is False


def test_keys_may_be_written_in_any_script(cli, initialised):
    first = cli.json("remember", "测试用 make test 运行", "--kind", "fact", "--key", "测试命令")
    assert first["memory"]["key"] == "测试命令"
    again = cli.json("remember", "测试用 tox 运行", "--kind", "fact", "--key", "测试命令")
    # A new value for the same key is a new version of the same chain (a user correction).
    assert again["ref"] == first["ref"].replace("@v1", "@v2")
    assert cli("forget", "--key", "测试命令", "--dry-run").exit_code == 0
    # Keys still reject punctuation and spaces.
    assert cli("remember", "x", "--kind", "fact", "--key", "two words").exit_code == 1


def test_purge_says_where_the_text_would_go_and_where_it_stays(cli, initialised):
    text = "the staging host is kestrel-42"
    cli.ok("remember", text, "--kind", "fact", "--key", "staging")
    other = cli.json("remember", f"remember that {text} behind the VPN", "--kind", "fact")
    cli.ok("run", "start", "purge test")
    cli.ok("log", "observation", f"note: {text} (from the wiki)")

    dry = cli.json("forget", "--key", "staging", "--purge", "--dry-run")
    # The dry run lists the collateral erasure (the event) without doing it …
    assert dry["scrubbed"] == {"events.text": 1}
    assert text in cli.ok("events").stdout
    # … and names the other memory that still holds the text, which a purge leaves alone.
    assert dry["still_in"] == [other["ref"]]
    human = cli.ok("forget", "--key", "staging", "--purge")
    assert "would" not in human.stdout
    assert other["ref"] in human.stdout + human.stderr
    db = (initialised / ".agentstate" / "state.db").read_bytes()
    assert db.count(text.encode()) >= 1  # only because the other memory keeps it
    cli.ok("forget", other["ref"].split("@")[0], "--purge")
    for name in ("state.db", "state.db-wal"):
        path = initialised / ".agentstate" / name
        if path.exists():
            assert text.encode() not in path.read_bytes()


def test_distill_proposes_one_command_per_key_so_a_second_accept_is_harmless(cli, initialised):
    (initialised / "Makefile").write_text("test:\n\t@echo 3 passed\ncheck:\n\t@echo ok\n")
    cli.ok("run", "start", "verify things")
    cli.ok("exec", "--", "make", "test")
    # not a test run (python3 of this environment, which has pytest: its directory first)
    config = initialised / ".agentstate" / "config.toml"
    venv = str(Path(sys.executable).parent)
    config.write_text(config.read_text().replace('path = ["', f'path = ["{venv}", "', 1))
    cli.ok("exec", "--", "python3", "-m", "pytest", "--version")
    cli.ok("exec", "--", "make", "test", "V=1")  # another value for the same key …
    cli.ok("exec", "--", "make", "test")  # … and the latest success wins
    cli.ok("run", "end", "--status", "done")
    run = cli.json("run", "list")
    ref = (run if isinstance(run, list) else run["runs"])[0]["ref"]
    proposals = cli.json("run", "distill", ref)["proposals"]
    commands = [p["text"] for p in proposals if p["key"] == "test-command"]
    assert commands == ["`make test` works in this repository (exit 0)"]
    first = cli.json("run", "distill", ref, "--accept")["accepted"]
    second = cli.json("run", "distill", ref, "--accept")["accepted"]
    assert [a["action"] for a in first] == ["stored"]
    assert [a["action"] for a in second] == ["deduplicated"]
    assert second[0]["ref"] == first[0]["ref"]


def test_correcting_with_the_current_value_adds_no_version(cli, initialised):
    first = cli.json("remember", "Tests run with tox", "--kind", "fact", "--key", "tests",
                     "--source", "model", "--evidence", "user")
    ref = first["ref"].split("@")[0]
    same = cli.json("memory", "correct", ref, "tests run with tox.")
    assert same["action"] == "deduplicated" and same["ref"] == first["ref"]
    assert len(cli.json("memory", "show", ref)["versions"]) == 1
    changed = cli.json("memory", "correct", ref, "Tests run with nox")
    assert changed["ref"] == f"{ref}@v2" and changed["action"] == "corrected"


@pytest.mark.parametrize(
    "text",
    [
        "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        "token: 4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a",
        "GITHUB_TOKEN=0123456789abcdef0123456789abcdef01234567",
    ],
)
def test_secret_assignments_are_refused(cli, initialised, text):
    result = cli("remember", text, "--kind", "fact")
    assert result.exit_code == 3
    assert "secret" in result.stderr


@pytest.mark.parametrize(
    "text",
    [
        "the csrf token is generated per request",
        "sort_key = name, then the primary key",
        "token: see the team vault",
    ],
)
def test_ordinary_words_about_keys_and_tokens_are_kept(cli, initialised, text):
    stored = cli.json("remember", text, "--kind", "fact")
    assert stored["status"] == "active"
    shown = cli.json("memory", "show", stored["ref"])
    assert shown["versions"][-1]["text"] == text


def test_trace_of_a_memory_chain_says_which_version_each_pack_considered(cli, initialised):
    cli.ok("remember", "Tests run with make test", "--kind", "fact", "--key", "tests")
    cli.ok("run", "start", "run the tests")
    cli.ok("log", "observation", "CI runs nox", "--source", "tool:ci")
    evt = cli.json("events")[-1]["ref"]
    contested = cli.json("remember", "Tests run with nox", "--kind", "fact", "--key", "tests",
                         "--source", "tool:ci", "--evidence", evt)
    assert contested["status"] == "contested"
    cli.ok("context", "--query", "how are the tests run", "--budget", "3000")
    chain = contested["ref"].split("@")[0]
    lines = [line for line in cli.ok("trace", chain).stdout.splitlines()
             if "considered in" in line]
    assert len(lines) == 2
    assert any(f"{chain}@v1" in line for line in lines)
    assert any(f"{chain}@v2" in line for line in lines)


def test_file_evidence_at_a_moving_ref_is_pinned_to_its_commit(cli, initialised):
    import subprocess

    (initialised / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "a.py"], cwd=initialised, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=initialised, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=initialised, check=True,
                          capture_output=True, text=True).stdout.strip()
    data = cli.json("remember", "a.py sets x", "--kind", "fact", "--evidence", "file:a.py@HEAD")
    refs = [e["ref"] for e in data["memory"]["evidence"]]
    assert f"file:a.py@{head}" in refs and "file:a.py@HEAD" not in refs
    by_source = cli.json("remember", "a.py is python", "--kind", "fact",
                         "--source", "file:a.py@HEAD")
    assert by_source["memory"]["source"] == f"file:a.py@{head}"


def test_path_scope_cannot_leave_the_repository(cli, initialised):
    result = cli("remember", "x", "--kind", "fact", "--scope", "path:../outside/*")
    assert result.exit_code == 1
    cli.ok("remember", "y", "--kind", "fact", "--scope", "path:src/..x/*")  # a name, not ..


@pytest.mark.parametrize(
    "args",
    [
        ("recall", "parser", "--scope", "nope"),
        ("recall", "parser", "--scope", "path:../x/a.py"),
        ("recall", "parser", "--run", "garbage"),
        ("recall", "parser", "--run", "run:zzzzzzzzzz"),
        ("memory", "list", "--scope", "nope"),
    ],
)
def test_unknown_scope_or_run_filters_are_errors_not_empty_answers(cli, initialised, args):
    cli.ok("remember", "The parser cache key must include the locale", "--kind", "fact")
    result = cli(*args, "--json")
    assert result.exit_code == 1, result.stdout
    assert result.json()["ok"] is False


def test_scope_filter_patterns_still_work(cli, initialised):
    cli.ok("remember", "feature parser rule", "--kind", "fact", "--scope", "branch:feature")
    hits = cli.json("recall", "parser", "--scope", "branch:*")["hits"]
    assert [h["scope"] for h in hits] == ["branch:feature"]
    assert cli.json("recall", "parser", "--scope", "repo")["hits"] == []
    assert cli.json("memory", "list", "--scope", "branch:feature")


@pytest.mark.parametrize("ttl", ["9999999d", "9999999w", "3000000d"])
def test_a_ttl_past_the_calendar_is_invalid_input_not_a_traceback(cli, initialised, ttl):
    result = cli("remember", "long lived", "--kind", "event", "--ttl", ttl, "--json")
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "invalid_input"
    assert "year 9999" in result.json()["error"]["message"]
    assert not cli.json("memory", "list")


@pytest.mark.parametrize("limit", ["0", "-1", "99999999999999999999999"])
def test_memory_list_limit_is_checked(cli, initialised, limit):
    cli.ok("remember", "one", "--kind", "event")
    cli.ok("remember", "two", "--kind", "event")
    result = cli("memory", "list", "--limit", limit, "--json")
    if limit.startswith("9"):
        assert result.exit_code == 0 and len(result.json()["data"]) == 2
    else:
        assert result.exit_code == 1
        assert result.json()["error"]["code"] == "invalid_input"


@pytest.mark.parametrize(
    "line, bad, args, setting",
    [
        ("default_budget = 8000", 'default_budget = "abc"', ("context",),
         "[context] default_budget"),
        ("default_budget = 8000", "default_budget = -5", ("context",), "[context] default_budget"),
        ("max_chars = 4000", 'max_chars = "big"', ("remember", "x", "--kind", "event"),
         "[memory] max_chars"),
        ("max_chars = 4000", "max_chars = 0", ("remember", "x", "--kind", "event"),
         "[memory] max_chars"),
        ("min_relevance = 0.2", 'min_relevance = "x"', ("recall", "parser"),
         "[memory] min_relevance"),
    ],
)
def test_bad_memory_and_context_settings_are_clear_errors(initialised, line, bad, args,
                                                         setting):
    from tests.conftest import run_agentstate

    run_agentstate("run", "start", "parser work", cwd=initialised)
    config = initialised / ".agentstate" / "config.toml"
    text = config.read_text()
    assert f"\n{line}\n" in text
    config.write_text(text.replace(f"\n{line}\n", f"\n{bad}\n"))
    proc = run_agentstate(*args, cwd=initialised)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and setting in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
