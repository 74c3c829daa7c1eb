"""`agentstate mcp` end to end: the SDK's own stdio client against a real server subprocess.

One server serves the whole module (starting one costs about a second); the tests share its
store, so each one writes text of its own and looks only for that.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from anyio.from_thread import start_blocking_portal  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from agentstate.tokens import raw_counts  # noqa: E402
from tests.conftest import git, run_agentstate  # noqa: E402

TOOLS = {"resume", "context", "recall", "remember", "log_event", "checkpoint", "skill_list",
         "skill_load", "trace"}


def _env(home: Path, cache: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1",
           "AGENTSTATE_CACHE_DIR": str(cache), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Test User",
           "GIT_COMMITTER_NAME": "Test User", "GIT_AUTHOR_EMAIL": "test@example.com",
           "GIT_COMMITTER_EMAIL": "test@example.com"}
    env.update(extra)
    return env


def _cli(repo: Path, env: dict, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "agentstate", *args, "--json"], cwd=repo,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["data"]


class Client:
    """A blocking face on an MCP ClientSession running in a portal's event loop."""

    def __init__(self, portal, session: ClientSession) -> None:
        self.portal, self.session = portal, session

    def call(self, name: str, **arguments):
        return self.portal.call(lambda: self.session.call_tool(name, arguments))

    def ok(self, name: str, **arguments) -> dict:
        result = self.call(name, **arguments)
        assert not result.is_error, result.structured_content
        envelope = result.structured_content
        assert envelope["ok"] is True and envelope["command"] == name
        return envelope

    def error(self, name: str, **arguments) -> dict:
        result = self.call(name, **arguments)
        assert result.is_error
        envelope = result.structured_content
        assert envelope["ok"] is False
        assert json.loads(result.content[0].text) == envelope  # the model sees the same
        return envelope["error"]


def connect(repo: Path, env: dict, *args: str):
    """Start `agentstate mcp ARGS` in `repo` and yield a Client (a generator for fixtures)."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "agentstate", "mcp", *args],
                                   env=env, cwd=str(repo))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_client(params)) as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                portal.call(session.initialize)
                yield Client(portal, session)


@pytest.fixture(scope="module")
def server_repo(tmp_path_factory, token_cache):
    home = tmp_path_factory.mktemp("mcp-home")
    repo = tmp_path_factory.mktemp("mcp") / "repo"
    repo.mkdir()
    # The shell's principal is owner: the server must still act as `agent`.
    env = _env(home, token_cache, AGENTSTATE_PRINCIPAL="owner")
    for args in (["init", "-q", "-b", "main"], ["add", "README.md"],
                 ["commit", "-q", "-m", "initial"]):
        if args[0] == "add":
            (repo / "README.md").write_text("demo\n")
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
    _cli(repo, env, "init")
    run = _cli(repo, env, "run", "start", "make the parser accept tabs",
               "-c", "keep the public API unchanged")["run"]
    return repo, env, run["ref"]


@pytest.fixture(scope="module")
def client(server_repo):
    repo, env, _ = server_repo
    yield from connect(repo, env)


def test_the_warm_up_pack_is_not_stored(client, server_repo):
    repo, _, _ = server_repo
    client.ok("skill_list")  # calls run in order on one thread: the warm-up has finished
    with sqlite3.connect(repo / ".agentstate" / "state.db") as conn:
        assert conn.execute("SELECT count(*) FROM packs").fetchone()[0] == 0


def test_lists_every_tool_with_a_description_and_the_resume_resource(client):
    tools = client.portal.call(client.session.list_tools).tools
    assert {t.name for t in tools} == TOOLS
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object"
    read_only = {t.name for t in tools if t.annotations.read_only_hint}
    assert read_only == {"resume", "recall", "skill_list", "trace"}
    recall = next(t for t in tools if t.name == "recall")
    assert recall.input_schema["required"] == ["query"]
    resources = client.portal.call(client.session.list_resources).resources
    assert [str(r.uri) for r in resources] == ["agentstate://resume"]


def test_resume_tool_and_resource_give_the_current_runs_pack(client, server_repo):
    _, _, run_ref = server_repo
    result = client.call("resume")
    # The pack text is the whole result: nothing else for the model to pay for.
    assert not result.is_error and result.structured_content is None
    assert len(result.content) == 1
    text = result.content[0].text
    assert text.startswith(f"# Resume {run_ref}") and "keep the public API unchanged" in text
    read = client.portal.call(lambda: client.session.read_resource("agentstate://resume"))
    assert read.contents[0].text.startswith(f"# Resume {run_ref}")


def test_log_event_acts_as_agent_and_its_ref_traces(client, server_repo):
    _, _, run_ref = server_repo
    event = client.ok("log_event", kind="diagnosis", text="the lexer splits on spaces only",
                      meta={"file": "lexer.py"})["data"]
    assert event["ref"].startswith("evt:") and event["run"] == run_ref
    # AGENTSTATE_PRINCIPAL=owner in the server's environment is ignored: agent writes as model.
    assert event["source"] == "model" and event["meta"] == {"file": "lexer.py"}
    traced = client.ok("trace", ref=event["ref"])["data"]
    assert traced["ref"] == event["ref"] and "lexer splits" in traced["summary"]
    error = client.error("log_event", kind="note", text="claimed by the user", source="user")
    assert error["code"] == "refused" and "may not claim" in error["message"]
    secret = "ghp_" + "Xy7" * 12
    error = client.error("log_event", kind="note", text=f"pushed with {secret}")
    assert error["code"] == "refused" and secret not in json.dumps(error)
    assert "pushed with" not in client.call("resume").content[0].text


def test_a_secret_in_remember_is_refused_and_nothing_is_stored(client, server_repo):
    repo, env, _ = server_repo
    secret = "ghp_" + "Zq8" * 12
    error = client.error("remember", text=f"the deploy token is {secret}", kind="fact")
    assert error["code"] == "refused" and "secret" in error["message"]
    assert secret not in json.dumps(error)
    stored = _cli(repo, env, "memory", "list", "--status", "all")
    assert not any("deploy token" in (m["text"] or "") for m in stored)


def test_remember_gates_a_models_claim_and_recall_reports_what_it_withheld(client,
                                                                           server_repo):
    bare = client.ok("remember", text="the tokenizer lives in quokka.py", kind="fact")
    assert bare["data"]["status"] == "candidate" and bare["data"]["memory"]["source"] == "model"
    assert "candidate" in bare["note"]
    # A miss is said outright, with the count of what the read gate held back.
    miss = client.ok("recall", query="quokka")
    assert miss["data"]["hits"] == [] and miss["data"]["withheld"] == {"candidate": 1}
    assert "no memory matched" in miss["note"] and "1 candidate" in miss["note"]
    nothing = client.ok("recall", query="zebra giraffe")
    assert nothing["data"]["matched_nothing"] is True and nothing["data"]["hits"] == []
    assert nothing["note"] == "no memory matched 'zebra giraffe'"
    # The model's own event is not evidence from outside it: still a candidate …
    event = client.ok("log_event", kind="observation", text="wombat.py holds the grammar")
    backed = client.ok("remember", text="the grammar lives in wombat.py", kind="fact",
                       evidence=[event["data"]["ref"]])["data"]
    assert backed["status"] == "candidate" and event["data"]["ref"] in backed["evidence_added"]
    # … until the owner, at a terminal, vouches for it.
    repo, env, _ = server_repo
    assert _cli(repo, env, "memory", "confirm", backed["ref"], "--evidence", "user")[
        "status"] == "active"
    hits = client.ok("recall", query="wombat", limit=5)["data"]["hits"]
    assert [h["ref"] for h in hits] == [backed["ref"]]
    assert client.ok("trace", ref=backed["ref"])["data"]["ref"].startswith(backed["ref"][:14])


def test_each_call_sees_what_other_processes_wrote(client, server_repo):
    repo, env, _ = server_repo
    _cli(repo, env, "remember", "releases are cut from the platypus branch", "--kind", "fact")
    hits = client.ok("recall", query="platypus")["data"]["hits"]
    assert len(hits) == 1 and hits[0]["source"] == "user"
    _cli(repo, env, "log", "question", "does the echidna parser need tabs?")
    assert "echidna" in client.call("resume").content[0].text


def test_context_keeps_its_budget_and_refuses_one_below_the_pinned_minimum(client):
    error = client.error("context", budget=5)
    assert error["code"] == "budget_too_small" and error["details"]["minimum"] > 5
    result = client.call("context", budget=400, query="parser tabs")
    assert not result.is_error
    # What the model pays for is the pack alone: no structured content (clients show the
    # model that instead of the text), the text within the budget, its ref in a trailer.
    assert result.structured_content is None
    text, trailer = result.content[0].text, result.content[1].text
    assert raw_counts("cl100k_base", [text])[0] <= 400
    found = re.search(r"pack:[a-z0-9]+", trailer)
    assert found and "/400 tokens" in trailer
    traced = client.ok("trace", ref=found.group(0))["data"]
    assert traced["ref"] == found.group(0) and traced["children"]


def test_checkpoint_then_resume_shows_it(client):
    cp = client.ok("checkpoint", note="lexer fix drafted, tests next")["data"]
    assert cp["ref"].startswith("evt:") and cp["note"] == "lexer fix drafted, tests next"
    assert "lexer fix drafted" in client.call("resume").content[0].text


def test_skills_list_load_and_a_miss(client, server_repo):
    _, _, run_ref = server_repo
    names = {s["name"] for s in client.ok("skill_list")["data"]}
    assert "resume-task" in names
    loaded = client.ok("skill_load", target="resume-task")["data"]
    assert loaded["ref"].startswith("skill:resume-task@v") and loaded["body"].strip()
    assert loaded["run"] == run_ref and loaded["event"].startswith("evt:")
    assert client.error("skill_load", target="no-such-skill")["code"] == "not_found"
    assert client.error("trace", ref="evt:doesnotexist")["code"] == "not_found"
    assert client.error("recall", query="x", limit=0)["code"] == "invalid_input"
    # Arguments of the wrong type are rejected by the SDK itself, still as an error result.
    assert client.call("recall", query="x", limit="many").is_error


def test_resume_resource_without_a_run_is_an_explicit_error(client, server_repo):
    repo, env, run_ref = server_repo
    _cli(repo, env, "run", "end", run_ref)
    try:
        with pytest.raises(MCPError, match="no unfinished run"):
            client.portal.call(lambda: client.session.read_resource("agentstate://resume"))
        assert client.error("resume")["code"] == "not_found"
    finally:
        _cli(repo, env, "run", "start", "a later run")


def test_as_chooses_the_principal_and_agentstate_dir_the_store(server_repo, tmp_path):
    repo, env, _ = server_repo
    env = {k: v for k, v in env.items() if k != "AGENTSTATE_PRINCIPAL"}
    env["AGENTSTATE_DIR"] = str(repo)  # started elsewhere, as a client with a global config
    for owner in connect(tmp_path, env, "--as", "owner"):
        written = owner.ok("remember", text="the owner prefers tabs", kind="preference")
        assert written["data"]["status"] == "active"
        assert written["data"]["memory"]["source"] == "user"


def test_no_store_is_one_line_and_exit_1(tmp_path, token_cache):
    env = _env(tmp_path, token_cache)
    git(tmp_path, "init", "-q")
    proc = subprocess.run([sys.executable, "-m", "agentstate", "mcp"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "agentstate init" in proc.stderr


def test_an_undeclared_principal_is_one_line_and_exit_1(initialised):
    proc = run_agentstate("mcp", "--as", "nobody", cwd=initialised, input="")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "error: principal 'nobody' is not declared in config.toml [principals] "
        "(declared: agent, owner)"]


def test_other_commands_never_import_the_sdk(initialised):
    for argv in (["--help"], ["mcp", "--help"], ["events"]):
        code = (f"import sys; sys.argv = ['agentstate', *{argv!r}]\n"
                "from agentstate.cli import main\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                "print('SDK', 'mcp' in sys.modules or 'pydantic' in sys.modules)")
        proc = subprocess.run([sys.executable, "-c", code], cwd=initialised,
                              capture_output=True, text=True, timeout=60)
        assert proc.stdout.strip().splitlines()[-1] == "SDK False", (argv, proc.stderr[-300:])


def test_counts_learned_by_the_worker_thread_are_saved_after_each_call(store, tmp_path,
                                                                       monkeypatch):
    """The memo's own exit hook runs on the main thread, which cannot use the worker's
    connection: without a save after each call, the server would never keep a count."""
    from agentstate.integrations.mcp_server import Done, StoreService
    from agentstate.tokens import TokenCounter, count_memo_path

    # A cache of its own: this process's memo for the shared cache was opened on the main
    # thread by earlier tests, which the server's worker thread never has to share.
    monkeypatch.setenv("AGENTSTATE_CACHE_DIR", str(tmp_path / "cache"))

    text = "an unusual sentence about marsupials counted only by this test " * 3
    service = StoreService(str(store.root), "agent")
    try:
        service.run_sync(lambda: service.envelope("count", lambda s: Done(
            TokenCounter().count(text))))
        with sqlite3.connect(count_memo_path()) as conn:
            from agentstate.tokens.memo import digest, well_formed

            row = conn.execute("SELECT tokens FROM counts WHERE digest = ?",
                               (digest(well_formed(text)),)).fetchone()
        assert row is not None and row[0] > 10
    finally:
        service.shutdown()


def test_an_unexpected_failure_is_an_internal_error_without_the_secret(store, capsys):
    from agentstate.integrations.mcp_server import StoreService

    secret = "ghp_" + "Q5w" * 12

    def crash(_store):
        raise RuntimeError(f"boom near {secret}")

    service = StoreService(str(store.root), "agent")
    try:
        envelope, done = service.run_sync(lambda: service.envelope("recall", crash))
    finally:
        service.shutdown()
    assert done is None and envelope["ok"] is False
    assert envelope["error"]["code"] == "internal" and "boom near" in envelope["error"]["message"]
    assert secret not in json.dumps(envelope)
    # The traceback goes to the crash log every entry point shares, redacted; not to stderr.
    assert "Traceback" not in capsys.readouterr().err
    log = Path(envelope["error"]["details"]["crash_log"])
    assert "RuntimeError: boom near" in log.read_text() and secret not in log.read_text()
