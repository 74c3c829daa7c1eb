"""The hook helper: a warm process that runs agents' hooks for the hook processes that ask it
(integrations/hook_client.py, integrations/hook_server.py). Real processes, a real socket, real
stores; the helper is started the way a hook starts it and stopped at the end of each test."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agentstate.integrations import hook_client
from agentstate.integrations.hook_server import helper_pid, stop_helper
from tests.conftest import FIXTURES, git, run_agentstate

HOOK_FIXTURES = FIXTURES / "hooks"
WAIT_S = 60.0


@pytest.fixture
def helper_env(monkeypatch):
    """The helper on, its socket in a short private directory of this test's own."""
    folder = Path(tempfile.mkdtemp(prefix="ash-"))  # socket paths must stay short
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER", "1")
    monkeypatch.setenv("AGENTSTATE_RUNTIME_DIR", str(folder / "rt"))
    yield folder / "rt"
    _stop_and_wait(hook_client.socket_path())
    shutil.rmtree(folder, ignore_errors=True)


def _stop_and_wait(path: str) -> None:
    pid = stop_helper(path)
    if pid is not None:
        _wait_for(lambda: helper_pid(path) is None, "the helper to stop")


def _wait_for(condition, what: str) -> None:
    # A real process coming up or going away: polled, bounded.
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _started(path: str | None = None) -> int:
    path = path or hook_client.socket_path()
    _wait_for(lambda: helper_pid(path) is not None and os.path.exists(path),
              "the helper to start")
    pid = helper_pid(path)
    assert pid is not None
    return pid


def payload(agent: str, name: str, cwd: Path, **override) -> bytes:
    data = json.loads((HOOK_FIXTURES / agent / f"{name}.json").read_text()
                      .replace("__CWD__", str(cwd)))
    data["transcript_path"] = str(cwd / "no-such-transcript.jsonl")
    data.update(override)
    return json.dumps(data).encode()


def _ask(agent: str, name: str, cwd: Path, **override) -> hook_client.Reply:
    event = json.loads(payload(agent, name, cwd))["hook_event_name"]
    here = os.getcwd()
    os.chdir(cwd)  # the hook process's working directory chooses the store
    try:
        return hook_client.ask_helper(["hook", agent, event],
                                      payload(agent, name, cwd, **override))
    finally:
        os.chdir(here)


def _first_hook_starts_the_helper(repo: Path) -> int:
    proc = run_agentstate("hook", "claude-code", cwd=repo,
                          input=payload("claude-code", "user_prompt_submit", repo).decode())
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return _started()


def test_the_first_hook_runs_in_process_and_starts_the_helper_which_runs_the_next(
        helper_env, initialised, cli):
    pid = _first_hook_starts_the_helper(initialised)
    assert cli.json("events", "--all")[0]["kind"] == "observation"  # recorded in process
    reply = _ask("claude-code", "post_tool_use_bash", initialised)
    assert reply.ran and reply.code == 0 and reply.stderr == "", reply.stderr
    kinds = [e["kind"] for e in cli.json("events", "--all")]
    assert kinds.count("tool") == 1 and kinds.count("observation") == 1
    assert helper_pid() == pid  # the same helper: it forks a child per hook


def test_the_helper_answers_as_the_hook_would_in_process(helper_env, initialised, cli,
                                                         monkeypatch):
    """SessionStart's pack through the helper is byte for byte the pack the same hook prints
    in process (the helper only moves where the handler runs)."""
    _first_hook_starts_the_helper(initialised)
    through_helper = _ask("claude-code", "session_start_resume", initialised)
    assert through_helper.ran and through_helper.stderr == ""
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER", "0")
    in_process = run_agentstate("hook", "claude-code", cwd=initialised, input=payload(
        "claude-code", "session_start_resume", initialised).decode())
    assert in_process.stdout == through_helper.stdout
    goal = json.loads(payload("claude-code", "user_prompt_submit", initialised))["prompt"]
    pack = json.loads(through_helper.stdout)["hookSpecificOutput"]["additionalContext"]
    assert goal.splitlines()[0] in pack


def test_each_hook_takes_its_own_environment_and_directory(helper_env, initialised, cli,
                                                           tmp_path, monkeypatch):
    """One helper serves every repository and every setting: a hook's working directory
    chooses its store, and its environment (here the clock) is its own."""
    _first_hook_starts_the_helper(initialised)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    assert run_agentstate("init", cwd=other).returncode == 0
    monkeypatch.setenv("AGENTSTATE_NOW", "2031-05-06T07:08:09Z")
    assert _ask("claude-code", "user_prompt_submit", other, prompt="first in other").ran
    monkeypatch.setenv("AGENTSTATE_NOW", "2032-01-02T03:04:05Z")
    assert _ask("claude-code", "post_tool_use_bash", initialised).ran
    theirs = json.loads(run_agentstate("events", "--all", "--json", cwd=other).stdout)["data"]
    assert [e["text"] for e in theirs if e["kind"] == "observation"] == ["first in other"]
    assert theirs[0]["ts"].startswith("2031-05-06T07:08")
    ours = cli.json("events", "--all")
    assert not any("first in other" in e["text"] for e in ours)
    assert next(e for e in ours if e["kind"] == "tool")["ts"].startswith("2032-01-02T03:04")


def test_a_hook_that_never_confirms_is_never_run(helper_env, initialised, cli):
    """Exactly once: the helper's child waits for the hook process's go-ahead, so a hook
    process that gave up (and runs the hook itself) never has it run twice."""
    _first_hook_starts_the_helper(initialised)
    before = len(cli.json("events", "--all"))
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(WAIT_S)
    here = os.getcwd()
    os.chdir(initialised)
    try:
        conn.connect(hook_client.socket_path())
        hook_client.send_frame(conn, hook_client.request_header(
            ["hook", "claude-code", "PostToolUse"]))
        hook_client.send_frame(conn, payload("claude-code", "post_tool_use_bash", initialised))
        assert conn.recv(1) == hook_client.READY
    finally:
        os.chdir(here)
        conn.close()
    # The child saw the connection close instead of a go-ahead; a hook that does confirm is
    # served after it, so once that one is recorded the abandoned one had its chance.
    assert _ask("claude-code", "post_tool_use_edit", initialised).ran
    kinds = [e["kind"] for e in cli.json("events", "--all")[before:]]
    assert kinds == ["tool"]


def test_changed_code_is_never_run_the_helper_leaves(helper_env, initialised, tmp_path,
                                                     monkeypatch):
    """An upgrade or an edit of agentstate's files: the helper answers "stale" and exits, the
    hook runs in process (here: the caller), and the next hook starts a fresh helper."""
    copy = tmp_path / "site"
    shutil.copytree(Path(hook_client.__file__).parents[1], copy / "agentstate",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy)}
    path = _copy_socket_path(copy, env)
    subprocess.Popen([sys.executable, "-P", "-m", "agentstate.integrations.hook_server"],
                     cwd="/", env=os.environ | env, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = _started(path)
    assert _ask_copy(copy, env, initialised) == "ran"
    edited = copy / "agentstate" / "integrations" / "hooks.py"
    edited.write_text(edited.read_text() + "\n# edited\n")
    assert _ask_copy(copy, env, initialised) == "fallback start"
    _wait_for(lambda: helper_pid(path) != first, "the stale helper to leave")
    # The caller started a fresh helper, which runs the edited code.
    second = _started(path)
    assert second != first
    assert _ask_copy(copy, env, initialised) == "ran"
    _stop_and_wait(path)


def _copy_socket_path(copy: Path, env: dict[str, str]) -> str:
    probe = ("from agentstate.integrations.hook_client import socket_path\n"
             "print(socket_path())")
    return subprocess.run([sys.executable, "-P", "-c", probe], env=os.environ | env,
                          capture_output=True, text=True, check=True, cwd="/").stdout.strip()


def _ask_copy(copy: Path, env: dict[str, str], repo: Path) -> str:
    """Ask the copy's helper from a process that imports the copy's client."""
    probe = ("import sys\nfrom agentstate.integrations.hook_client import ask_helper, "
             "start_helper\n"
             "r = ask_helper(['hook', 'claude-code', 'PostToolUse'], sys.stdin.buffer.read())\n"
             "print('ran' if r.ran else 'fallback' + (' start' if r.start else ''))\n"
             "r.start and start_helper()  # as entry.main does after running it here")
    done = subprocess.run([sys.executable, "-P", "-c", probe], env=os.environ | env, cwd=repo,
                          input=payload("claude-code", "post_tool_use_bash", repo),
                          capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_the_helper_leaves_when_idle(helper_env, initialised, monkeypatch):
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER_IDLE", "0.3")
    _first_hook_starts_the_helper(initialised)
    path = hook_client.socket_path()
    _wait_for(lambda: helper_pid(path) is None, "the idle helper to leave")
    assert not os.path.exists(path)
    reply = _ask("claude-code", "post_tool_use_bash", initialised)
    assert not reply.ran and reply.start  # gone: the next hook runs here and starts one


def test_no_helper_where_others_could_reach_it(helper_env, initialised, cli):
    """A runtime directory another user could enter (or a symlink to one): never a helper."""
    helper_env.mkdir(mode=0o755)
    os.chmod(helper_env, 0o755)
    proc = run_agentstate("hook", "claude-code", cwd=initialised,
                          input=payload("claude-code", "user_prompt_submit", initialised).decode())
    assert proc.returncode == 0 and proc.stderr == ""
    assert [e["kind"] for e in cli.json("events", "--all")] == ["observation"]
    reply = _ask("claude-code", "post_tool_use_bash", initialised)
    assert not reply.ran and not reply.start
    assert list(helper_env.iterdir()) == []  # and the hook did not start one there
    served = subprocess.run([sys.executable, "-P", "-m", "agentstate.integrations.hook_server"],
                            cwd="/", capture_output=True, timeout=WAIT_S)
    assert served.returncode == 1 and list(helper_env.iterdir()) == []


def test_off_means_in_process_and_no_helper(helper_env, initialised, cli, monkeypatch):
    monkeypatch.setenv("AGENTSTATE_HOOK_HELPER", "0")
    for _ in range(2):
        proc = run_agentstate("hook", "claude-code", cwd=initialised, input=payload(
            "claude-code", "user_prompt_submit", initialised).decode())
        assert proc.returncode == 0 and proc.stderr == ""
    assert helper_pid() is None and not helper_env.exists()
    assert not _ask("claude-code", "post_tool_use_bash", initialised).ran


def test_hooks_helper_command_shows_and_stops_it(helper_env, initialised, cli):
    assert cli.json("hooks", "helper")["running"] is False
    pid = _first_hook_starts_the_helper(initialised)
    shown = cli.json("hooks", "helper")
    assert shown["running"] is True and shown["pid"] == pid
    assert shown["socket"] == hook_client.socket_path()
    stopped = cli.json("hooks", "helper", "--stop")
    assert stopped["stopped"] is True and stopped["pid"] == pid
    _wait_for(lambda: helper_pid() is None, "the helper to stop")
    assert not os.path.exists(hook_client.socket_path())


CLIENT_PROBE = ("import sys\nsys.argv = ['agentstate', 'hook', 'claude-code']\n"
                "from agentstate.entry import main\n"
                "try:\n    main()\nexcept SystemExit:\n    pass\n"
                "heavy = ['dataclasses', 'json', 'sqlite3', 'tomllib', 'typing', 'socket',\n"
                "         'agentstate.integrations.hooks', 'agentstate.store.db']\n"
                "sys.stderr.write('LOADED ' + ','.join(m for m in heavy if m in sys.modules))")


def test_a_hook_served_by_the_helper_imports_almost_nothing(helper_env, initialised, cli):
    """What makes the helper worth having: the hook process itself loads none of the store's
    modules (not even json or dataclasses) when the helper answers."""
    _first_hook_starts_the_helper(initialised)
    done = subprocess.run([sys.executable, "-c", CLIENT_PROBE], cwd=initialised,
                          input=payload("claude-code", "post_tool_use_bash", initialised),
                          capture_output=True, timeout=WAIT_S)
    assert done.stderr.decode().endswith("LOADED "), done.stderr
    assert [e["kind"] for e in cli.json("events", "--all")].count("tool") == 1


WARM_PROBE = """
import json, sys
from agentstate.integrations.hook_server import warm, run_captured
warm()
before = {m for m in sys.modules if m.startswith("agentstate")}
for line in sys.stdin:
    agent, event, body = json.loads(line)
    code, out, err = run_captured(["hook", agent, event], body.encode())
    assert code == 0 and err == "", (event, err)
print(json.dumps(sorted({m for m in sys.modules if m.startswith("agentstate")} - before)))
"""


@pytest.mark.parametrize("agent,names", [
    ("claude-code", ["session_start_startup", "user_prompt_submit", "post_tool_use_bash",
                     "post_tool_use_failure_bash", "pre_compact", "stop",
                     "session_start_resume", "session_end"]),
    ("codex", ["session_start_startup", "user_prompt_submit", "post_tool_use_bash",
               "post_tool_use_apply_patch", "stop", "session_start_resume"])])
def test_the_helper_holds_warm_what_hooks_import(initialised, cli, agent, names):
    """The helper imports what each child would otherwise import cold: every event of both
    clients, run as the child runs it after warm(), imports no further agentstate module."""
    lines = "".join(json.dumps([agent, json.loads(payload(agent, n, initialised))[
        "hook_event_name"], payload(agent, n, initialised).decode()]) + "\n" for n in names)
    done = subprocess.run([sys.executable, "-c", WARM_PROBE], cwd=initialised, input=lines,
                          capture_output=True, text=True, timeout=WAIT_S * 2)
    assert done.returncode == 0, done.stderr
    cold = json.loads(done.stdout.strip().splitlines()[-1])
    assert cold == [], f"imported cold in each child (add to _import_what_hooks_use): {cold}"
    assert "tool" in [e["kind"] for e in cli.json("events", "--all")]


FORK_PROBE = """
import json, os
from agentstate.integrations.hook_server import rehearse, warm
problems = rehearse()
warm()
files = []
for fd in os.listdir("/proc/self/fd"):
    try:
        files.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass  # the listing's own descriptor, closed by now
import tempfile
print(json.dumps({"problems": problems, "files": files, "tmp": tempfile.gettempdir()}))
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to list open files")
def test_the_helper_rehearses_every_hook_and_forks_holding_no_database(tmp_path):
    """The warm-up runs one of each hook on a scratch store without a problem (a rehearsal
    that fails would silently leave every child cold), and leaves no SQLite file open: a
    connection shared by forked children would corrupt the file it points at."""
    # Its own temporary directory: another test's helper may be rehearsing in the shared one.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = subprocess.run([sys.executable, "-c", FORK_PROBE], cwd=tmp_path,
                          env=dict(os.environ, TMPDIR=str(scratch)),
                          capture_output=True, text=True, timeout=WAIT_S * 2)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["problems"] == []
    opened = [f for f in found["files"] if f.endswith((".sqlite", ".db", "-wal"))]
    assert opened == []
    assert found["tmp"] == str(scratch)  # the rehearsal ran in there, and left nothing
    assert not list(scratch.glob("agentstate-rehearsal-*"))


def test_a_config_edited_between_hooks_is_read_again(helper_env, initialised, cli):
    """The helper parses a store's config ahead and keeps it by its text: an edit is another
    text, so the next hook reads the file as it is now (here: broken, and it says so)."""
    _first_hook_starts_the_helper(initialised)
    assert _ask("claude-code", "post_tool_use_bash", initialised).stderr == ""
    config = initialised / ".agentstate" / "config.toml"
    config.write_text(config.read_text() + "\n[memory\n")
    reply = _ask("claude-code", "post_tool_use_edit", initialised)
    assert reply.ran and "not valid TOML" in reply.stderr, reply.stderr
