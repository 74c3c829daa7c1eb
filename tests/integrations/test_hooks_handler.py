"""`agentstate hook claude-code|codex`: recorded payloads through the real command, stdin in."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, git, run_agentstate

HOOK_FIXTURES = FIXTURES / "hooks"
CLAUDE_ORDER = ["session_start_startup", "user_prompt_submit", "post_tool_use_bash",
                "post_tool_use_edit", "post_tool_use_failure_bash", "pre_compact",
                "session_start_compact", "stop", "session_start_resume", "session_start_clear",
                "session_end"]
CODEX_ORDER = ["session_start_startup", "user_prompt_submit", "post_tool_use_bash",
               "post_tool_use_apply_patch", "pre_compact", "stop", "session_start_resume"]


def payload(agent: str, name: str, cwd: Path, **override) -> dict:
    text = (HOOK_FIXTURES / agent / f"{name}.json").read_text()
    text = text.replace("__CWD__", str(cwd))
    data = json.loads(text)
    data["transcript_path"] = str(cwd / "no-such-transcript.jsonl")
    data.update(override)
    return data


def hook(agent: str, data: dict | str, cwd: Path, env: dict | None = None):
    raw = data if isinstance(data, str) else json.dumps(data)
    return run_agentstate("hook", agent, cwd=cwd, input=raw, env=env)


def events(cli) -> list[dict]:
    return cli.json("events", "--all")


def context_of(proc) -> str:
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("agent,order", [("claude-code", CLAUDE_ORDER), ("codex", CODEX_ORDER)])
def test_every_recorded_payload_is_handled(initialised, cli, agent, order):
    kinds = []
    for name in order:
        proc = hook(agent, payload(agent, name, initialised), initialised)
        assert proc.returncode == 0 and proc.stderr == "", (name, proc.stderr)
        if name.startswith("session_start"):
            context_of(proc)  # one JSON object, nothing else on stdout
        else:
            assert proc.stdout == "", name
    found = events(cli)
    kinds = [e["kind"] for e in found]
    assert kinds.count("observation") == 1
    assert kinds.count("tool") == (3 if agent == "claude-code" else 2)
    assert "checkpoint" in kinds
    prompt = next(e for e in found if e["kind"] == "observation")
    # Relayed by the client's hook: the user's words, unverified (an agent can pipe the same).
    assert prompt["source"] == f"prompt:{agent}" and prompt["meta"]["agent"] == agent
    for tool in (e for e in found if e["kind"] == "tool"):
        assert tool["source"].startswith("tool:")
    assert all(e["source"] == "model" for e in found if e["kind"] == "checkpoint")
    runs = cli.json("run", "list")
    assert len(runs) == 1
    first_line = payload(agent, "user_prompt_submit", initialised)["prompt"].splitlines()[0]
    assert runs[0]["goal"] == first_line


def test_codex_failing_exit_code_is_kept(initialised, cli):
    for name in ("user_prompt_submit", "post_tool_use_bash"):
        assert hook("codex", payload("codex", name, initialised), initialised).returncode == 0
    tool = next(e for e in events(cli) if e["kind"] == "tool")
    assert tool["meta"]["exit_code"] == 2 and tool["meta"]["failed"] is True
    assert tool["text"].splitlines()[0] == (
        "Bash exit 2: FAILED tests/test_import.py::test_big - AssertionError: took 4.1s "
        "($ make test)")


def test_scripted_session_then_resume_shows_goal_failure_and_drift(initialised, cli):
    first = payload("claude-code", "session_start_startup", initialised)
    context = context_of(hook("claude-code", first, initialised))
    assert "no active run" in context
    for name in ("user_prompt_submit", "post_tool_use_failure_bash", "pre_compact", "stop"):
        proc = hook("claude-code", payload("claude-code", name, initialised), initialised)
        assert proc.returncode == 0 and proc.stderr == "", (name, proc.stderr)
    failing = next(e for e in events(cli) if e["kind"] == "tool")
    assert failing["meta"]["exit_code"] == 1
    # Between sessions someone commits.
    (initialised / "dates.py").write_text("WEEK = True\n")
    git(initialised, "add", "dates.py")
    git(initialised, "commit", "-q", "-m", "Parse ISO week dates")
    second = payload("claude-code", "session_start_startup", initialised,
                     session_id="a-brand-new-session")
    context = context_of(hook("claude-code", second, initialised))
    resumed = run_agentstate("resume", cwd=initialised)
    assert resumed.returncode == 0
    for text in (context, resumed.stdout):
        assert "] Make the date parser accept ISO week dates" in text
        failure = next(line for line in text.splitlines() if failing["ref"] in line)
        assert "ValueError: unknown date format '2026-W03-2'" in failure
        # The output excerpt is shown once, under the headline (not repeated in the text).
        assert text.count("FAILED tests/test_dates.py::test_iso_week") == 1, text
        assert "Parse ISO week dates" in text  # the drift, as a named commit
    # The new session continues the same run.
    assert len(cli.json("run", "list")) == 1


def test_stop_without_new_events_adds_no_checkpoint(initialised, cli):
    for name in ("user_prompt_submit", "stop", "stop", "session_end"):
        hook("claude-code", payload("claude-code", name, initialised), initialised)
    assert [e["kind"] for e in events(cli)] == ["observation", "checkpoint"]


def test_writes_use_the_agent_principal(initialised, cli):
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace(
        'sources = ["model", "tool:*", "file:*", "evt:*"]', 'sources = ["model"]'))
    hook("claude-code", payload("claude-code", "user_prompt_submit", initialised), initialised)
    proc = hook("claude-code", payload("claude-code", "post_tool_use_bash", initialised),
                initialised)
    assert proc.returncode == 0
    assert "may not claim source 'tool:Bash'" in proc.stderr
    assert [e["kind"] for e in events(cli)] == ["observation"]  # the user's prompt still is


def test_prompt_secret_is_redacted_and_output_bounded(initialised, cli):
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    hook("claude-code", payload("claude-code", "user_prompt_submit", initialised,
                                prompt=f"use token {token} for the API"), initialised)
    big = payload("claude-code", "post_tool_use_bash", initialised,
                  tool_response={"stdout": "x" * 1_000_000 + "\nlast line", "stderr": ""})
    assert hook("claude-code", big, initialised).returncode == 0
    raw = (initialised / ".agentstate" / "state.db").read_bytes()
    assert token.encode() not in raw
    tool = next(e for e in events(cli) if e["kind"] == "tool")
    assert len(tool["meta"]["excerpt"]) < 3200 and tool["meta"]["excerpt"].endswith("last line")


@pytest.mark.parametrize("stdin,why", [
    ("not json at all", "not JSON"),
    ('{"hook_event_name": "Stop"}', "no session_id"),
    ('["a list"]', "not a JSON object"),
])
def test_bad_input_exits_0_with_one_line_and_a_log_entry(initialised, cli, stdin, why):
    proc = hook("claude-code", stdin, initialised)
    assert proc.returncode == 0 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and why in proc.stderr
    doctor = run_agentstate("doctor", "--json", cwd=initialised)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["data"]["checks"]}
    assert checks["hooks"]["status"] == "warn" and why in checks["hooks"]["detail"]


def test_no_store_logs_to_the_cache_dir(tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cache = tmp_path / "cache"  # not the session's shared cache: other tests read its log
    proc = hook("claude-code", payload("claude-code", "stop", outside), outside,
                env={"AGENTSTATE_CACHE_DIR": str(cache)})
    assert proc.returncode == 0 and "no .agentstate store" in proc.stderr
    log = cache / "hook-errors.log"
    assert "no .agentstate store" in log.read_text().splitlines()[-1]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_store_never_breaks_the_agent(initialised, tmp_path):
    hook("claude-code", payload("claude-code", "user_prompt_submit", initialised), initialised)
    root = initialised / ".agentstate"
    modes = {p: p.stat().st_mode for p in (root, root / "state.db")}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    try:
        proc = hook("claude-code", payload("claude-code", "post_tool_use_bash", initialised),
                    initialised, env={"AGENTSTATE_CACHE_DIR": str(tmp_path / "cache")})
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert proc.returncode == 0 and "read-only" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_locked_store_gives_up_quickly(initialised):
    hook("claude-code", payload("claude-code", "user_prompt_submit", initialised), initialised)
    holder = sqlite3.connect(initialised / ".agentstate" / "state.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc = hook("claude-code", payload("claude-code", "post_tool_use_bash", initialised),
                    initialised)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0 and "busy" in proc.stderr


# What a hook call must not load. The libraries: the CLI framework and its printer, the
# config writer, GitPython, the tokenizer, sqlite_utils. Then what cost every hook before the
# hook path was trimmed (docs/development.md, "Hook cost"): `secrets` (hmac and hashlib, for
# ids that os.urandom gives), the domains' table modules (only a store with a migration
# pending needs them) and `subprocess` (git runs only when a run starts or a checkpoint
# snapshots the work tree, not for a tool call into an existing run), and the tool runner
# with its policy (a prompt's redaction once came through it).
HEAVY = ("typer", "click", "rich", "tomlkit", "git", "tiktoken", "sqlite_utils", "secrets",
         "agentstate.memory.memory_tables", "agentstate.memory.event_index_tables",
         "agentstate.skills.skill_tables", "agentstate.cli", "agentstate.tools.runner",
         "agentstate.tools.policy")
HOOK_PROBE = ("import sys; names = sys.argv[2].split(',')\n"
              "sys.argv = ['agentstate', 'hook', sys.argv[1]]\n"
              "from agentstate.entry import main\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "print('LOADED', sorted(m for m in names if m in sys.modules))")


def _loaded_by_hook(agent: str, data: dict, cwd: Path, modules: tuple[str, ...]) -> list[str]:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", HOOK_PROBE, agent, ",".join(modules)],
                          cwd=cwd, text=True, input=json.dumps(data), capture_output=True,
                          timeout=60)
    assert proc.stderr == "", proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("LOADED ")
    return json.loads(last.removeprefix("LOADED ").replace("'", '"'))


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_hooks_import_nothing_heavy(initialised, cli, agent):
    """Hooks run on every prompt and tool call, each a whole process the agent waits for:
    none of HEAVY on that path. The first prompt starts the run, so starting a run is on it
    too; PreToolUse (not installed, but a client may send it) is answered the same way."""
    prompt = payload(agent, "user_prompt_submit", initialised)
    tool = payload(agent, "post_tool_use_bash", initialised)
    pre_tool = {k: v for k, v in tool.items() if k != "tool_response"}
    pre_tool["hook_event_name"] = "PreToolUse"
    calls = [("UserPromptSubmit", prompt), ("PreToolUse", pre_tool), ("PostToolUse", tool),
             ("Stop", payload(agent, "stop", initialised))]
    if agent == "claude-code":
        calls.insert(3, ("PostToolUseFailure",
                         payload(agent, "post_tool_use_failure_bash", initialised)))
    for event, data in calls:
        # The run exists after the first prompt: a tool call into it runs no git either.
        extra = ("subprocess",) if event in ("PreToolUse", "PostToolUse") else ()
        assert _loaded_by_hook(agent, data, initialised, HEAVY + extra) == [], event
    # They did their work (an early failure would have been reported on stderr too).
    kinds = [e["kind"] for e in events(cli)]
    assert "observation" in kinds and "tool" in kinds


def _line(kind: str, uuid: str, content, ts: str, parent: str | None = None) -> str:
    role = "user" if kind == "user" else "assistant"
    return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                       "sessionId": "0b6f7c1e-5d2a-4c3e-9f1a-2b7d8e9c0a11", "cwd": "/repo",
                       "gitBranch": "main", "timestamp": ts,
                       "message": {"role": role, "content": content}})


def claude_transcript_path(repo: Path, name: str = "session.jsonl") -> Path:
    """Where Claude Code keeps this project's transcripts (the only place a hook reads)."""
    folder = Path.home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-",
                                                             str(repo.resolve()))
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def test_catch_up_from_the_transcript_does_not_record_a_session_twice(initialised, cli):
    """Stop imports what the hooks missed from transcript_path — here the assistant's words
    — but not the prompt and the tool call the hooks already recorded."""
    prompt = payload("claude-code", "user_prompt_submit", initialised)["prompt"]
    transcript = claude_transcript_path(initialised)
    transcript.write_text("\n".join([
        _line("user", "u1", prompt, "2026-01-15T09:00:00Z"),
        _line("assistant", "a1", [
            {"type": "text", "text": "First I check what changed."},
            {"type": "tool_use", "id": "toolu_01A", "name": "Bash",
             "input": {"command": "git status --short"}}], "2026-01-15T09:00:01Z", "u1"),
        _line("user", "u2", [{"type": "tool_result", "tool_use_id": "toolu_01A",
                              "content": " M src/dates.py\n", "is_error": False}],
              "2026-01-15T09:00:02Z", "a1"),
    ]) + "\n")
    for name in ("user_prompt_submit", "post_tool_use_bash", "stop", "stop"):
        data = payload("claude-code", name, initialised, transcript_path=str(transcript))
        proc = hook("claude-code", data, initialised)
        assert proc.returncode == 0 and proc.stderr == "", (name, proc.stderr)
    found = events(cli)
    prompts = [e for e in found
               if e["kind"] == "observation" and e["source"] == "prompt:claude-code"]
    tools = [e for e in found if e["kind"] == "tool"]
    said = [e for e in found if e["kind"] == "observation" and e["source"] == "model"]
    assert len(prompts) == 1 and len(tools) == 1
    assert [e["text"] for e in said] == ["First I check what changed."]


def test_a_later_catch_up_continues_where_the_last_one_stopped(initialised, cli):
    """Each Stop reads only what the transcript gained (the cursor is kept in the store), and
    a call read by one Stop whose result arrives before the next becomes one whole event."""
    transcript = claude_transcript_path(initialised)
    transcript.write_text("\n".join([
        _line("user", "u1", "Make the retry test pass.", "2026-01-15T09:00:00Z"),
        _line("assistant", "a1", [
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "toolu_01B", "name": "Bash",
             "input": {"command": "pytest -q tests/test_retry.py"}}], "2026-01-15T09:00:01Z",
              "u1"),
    ]) + "\n")
    stop = payload("claude-code", "stop", initialised, transcript_path=str(transcript))
    hook("claude-code", payload("claude-code", "user_prompt_submit", initialised), initialised)
    assert hook("claude-code", stop, initialised).returncode == 0
    assert not [e for e in events(cli) if e["kind"] == "tool"]  # no result yet
    with transcript.open("a") as handle:
        handle.write(_line("user", "u2", [{"type": "tool_result", "tool_use_id": "toolu_01B",
                                           "content": "Exit code 1\nFAILED test_retry",
                                           "is_error": True}], "2026-01-15T09:00:02Z", "a1")
                     + "\n")
    proc = hook("claude-code", stop, initialised)
    assert proc.returncode == 0 and proc.stderr == ""
    found = events(cli)
    [tool] = [e for e in found if e["kind"] == "tool"]
    assert tool["text"].startswith("Bash: pytest -q tests/test_retry.py") and tool["meta"]["error"]
    said = [e["text"] for e in found if e["kind"] == "observation"]
    assert said.count("Running the tests.") == 1 and said.count("Make the retry test pass.") == 1
