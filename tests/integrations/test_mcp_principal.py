"""A principal on every read and write path (issue 22 item 2): the MCP server, the hooks and
`resume --as` show and write what *their* principal may, never what the shell's may.

The server runs in a shell whose principal is `owner` (AGENTSTATE_PRINCIPAL=owner): every
tool must still act as `agent`, so a tool that forgot to pass its principal down would read
or write as the owner and fail here."""

from __future__ import annotations

import json
from contextlib import contextmanager

import pytest

pytest.importorskip("mcp")

from tests.conftest import run_agentstate  # noqa: E402
from tests.integrations.test_mcp_server import _cli, _env, connect  # noqa: E402

PRIVATE = "answer me in haiku from now on"  # a `user`-scope preference: the owner's only
SHARED = "keep commit messages under 72 columns"  # a repo-scope preference


def _initialised_repo(tmp_path_factory, token_cache, name: str):
    """A git repository with one commit and an agentstate store, acting as the owner:
    (repo, env)."""
    import subprocess

    home = tmp_path_factory.mktemp(f"{name}-home")
    repo = tmp_path_factory.mktemp(name) / "repo"
    repo.mkdir()
    env = _env(home, token_cache, AGENTSTATE_PRINCIPAL="owner")
    (repo / "README.md").write_text("demo\n")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"],
                 ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    _cli(repo, env, "init")
    return repo, env


@pytest.fixture(scope="module")
def owner_repo(tmp_path_factory, token_cache):
    repo, env = _initialised_repo(tmp_path_factory, token_cache, "mcp-principal")
    run = _cli(repo, env, "run", "start", "tidy the parser", "-c", "no new dependencies")
    _cli(repo, env, "remember", PRIVATE, "--kind", "preference", "--scope", "user")
    _cli(repo, env, "remember", SHARED, "--kind", "preference")
    return repo, env, run["run"]["ref"]


@pytest.fixture(scope="module")
def agent(owner_repo):
    repo, env, _ = owner_repo
    yield from connect(repo, env)


def _preferences(data: dict) -> list[str]:
    return sorted(p["text"] for p in data["preferences"])


def test_the_cli_resume_shows_the_owner_everything_and_as_agent_no_user_scope(owner_repo):
    repo, env, _ = owner_repo
    owner = _cli(repo, env, "resume")
    assert _preferences(owner) == sorted([PRIVATE, SHARED])
    as_agent = _cli(repo, env, "resume", "--as", "agent")
    assert _preferences(as_agent) == [SHARED]
    assert PRIVATE not in as_agent["text"] and SHARED in as_agent["text"]


def test_mcp_resume_does_not_show_a_user_scope_preference(agent, owner_repo):
    repo, env, _ = owner_repo
    # The tool's result is the pack text alone (what the model is shown).
    result = agent.call("resume")
    assert not result.is_error
    text = result.content[0].text
    assert PRIVATE not in text and SHARED in text
    resource = agent.portal.call(lambda: agent.session.read_resource("agentstate://resume"))
    assert PRIVATE not in resource.contents[0].text
    # The same as the CLI for the same principal.
    as_agent = _cli(repo, env, "resume", "--as", "agent")
    assert _preferences(as_agent) == [SHARED]
    assert PRIVATE not in as_agent["text"] and SHARED in as_agent["text"]


def test_mcp_context_agrees_with_the_cli_for_the_agent(agent, owner_repo):
    repo, env, _ = owner_repo
    result = agent.call("context", budget=3000, query="haiku commit messages")
    assert not result.is_error
    text = result.content[0].text
    cli_text = _cli(repo, env, "context", "--as", "agent", "--budget", "3000", "--query",
                    "haiku commit messages")["text"]
    for pack in (text, cli_text):
        assert PRIVATE not in pack and SHARED in pack


def test_mcp_recall_does_not_read_user_scope(agent):
    data = agent.ok("recall", query="haiku")["data"]
    assert all(PRIVATE != h["text"] for h in data["hits"])


def test_mcp_remember_cannot_write_user_scope(agent, owner_repo):
    repo, env, _ = owner_repo
    error = agent.error("remember", text="always use tabs in this repo", kind="preference",
                        scope="user")
    assert error["code"] == "refused" and "may not write scope 'user'" in error["message"]
    stored = _cli(repo, env, "memory", "list", "--status", "all")
    assert not any("always use tabs" in (m["text"] or "") for m in stored)
    written = agent.ok("remember", text="the lexer lives in lex.py", kind="fact")["data"]
    assert written["memory"]["principal"] == "agent"
    assert written["memory"]["source"] == "model"


def test_mcp_log_event_writes_as_the_agent(agent):
    event = agent.ok("log_event", kind="note", text="looked at the lexer")["data"]
    assert event["source"] == "model"
    error = agent.error("log_event", kind="constraint", text="never run tests",
                        source="user")
    assert error["code"] == "refused"


def test_the_session_start_hook_pack_does_not_show_user_scope(owner_repo):
    repo, env, _ = owner_repo
    start = {"hook_event_name": "UserPromptSubmit", "session_id": "hook-1", "cwd": str(repo),
             "prompt": "carry on with the parser"}
    assert run_agentstate("hook", "claude-code", cwd=repo, input=json.dumps(start),
                          env=env).returncode == 0
    resume = {"hook_event_name": "SessionStart", "session_id": "hook-1", "cwd": str(repo),
              "source": "resume"}
    done = run_agentstate("hook", "claude-code", cwd=repo, input=json.dumps(resume), env=env)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "agentstate resume pack" in context
    assert PRIVATE not in context and SHARED in context


@pytest.fixture(scope="module")
def runs_closed_to_agent(tmp_path_factory, token_cache):
    """A repository whose `agent` principal may not write run scopes (write = ["repo"]): a
    skill load is recorded in the run, so the agent may not load into it; the owner may."""
    repo, env = _initialised_repo(tmp_path_factory, token_cache, "mcp-load")
    config = repo / ".agentstate" / "config.toml"
    text = config.read_text()
    assert text.count('write = ["run:*", "repo"]') == 1
    config.write_text(text.replace('write = ["run:*", "repo"]', 'write = ["repo"]'))
    run = _cli(repo, env, "run", "start", "tidy the parser")["run"]["ref"]
    return repo, env, run


def _loads(repo) -> int:
    import sqlite3

    with sqlite3.connect(repo / ".agentstate" / "state.db") as conn:
        return conn.execute("SELECT count(*) FROM skill_loads").fetchone()[0]


def test_mcp_skill_load_applies_the_clis_permission_agent_refused_owner_loads(
        runs_closed_to_agent):
    repo, env, run = runs_closed_to_agent
    # The CLI as the agent: refused (exit 3), nothing recorded.
    agent_env = {**env, "AGENTSTATE_PRINCIPAL": "agent"}
    refused = run_agentstate("skill", "load", "resume-task", "--json", cwd=repo, env=agent_env)
    assert refused.returncode == 3, refused.stderr
    cli_error = json.loads(refused.stdout)["error"]
    assert cli_error["code"] == "refused" and f"may not write scope '{run}'" in \
        cli_error["message"]
    assert _loads(repo) == 0
    # The MCP server as the agent (its default, the shell being the owner's): the same.
    with contextmanager(connect)(repo, env) as client:
        error = client.error("skill_load", target="resume-task")
        assert error["code"] == "refused" and error["message"] == cli_error["message"]
        assert client.ok("skill_list")["data"]  # the catalog is still readable
    assert _loads(repo) == 0
    # The owner, through the server and the CLI, loads it into the run.
    with contextmanager(connect)(repo, env, "--as", "owner") as client:
        loaded = client.ok("skill_load", target="resume-task")["data"]
        assert loaded["run"] == run and loaded["event"].startswith("evt:")
    assert _cli(repo, env, "skill", "load", "resume-task")["run"] == run
    assert _loads(repo) == 2
