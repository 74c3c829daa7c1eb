"""`agentstate exec` and `run_tool`: policy, logging, redaction, exit codes, timeouts."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agentstate.errors import InvalidInput
from agentstate.runs.log import end_run, list_events, start_run
from agentstate.tools.runner import ToolCall, list_tool_calls, run_tool
from tests.conftest import configure, run_agentstate

PY = "python3"  # allowed by the default policy (sys.executable may be python3.11)


def calls(store):
    return list(store.db.query("SELECT * FROM tool_calls ORDER BY rowid"))


def test_run_tool_logs_event_and_row(store):
    run, _ = start_run(store, "try the tool layer")
    result = run_tool(store, [PY, "-c", "print('hello'); import sys; sys.exit(4)"])
    assert (result.allowed, result.exit_code, result.ok) == (True, 4, False)
    assert result.stdout == "hello\n" and result.run == run.ref
    [event] = list_events(store, run.ref, kind="tool")
    assert event.ref == result.event and event.source == "tool:" + result.program
    assert "→ exit 4" in event.text
    assert event.meta["exit_code"] == 4 and event.meta["excerpt"] == "hello"
    assert event.meta["command"][0] == PY and event.meta["output_digest"].startswith("sha256:")
    [row] = calls(store)
    assert row["event"] == event.id and row["run"] == run.id and row["allowed"] == 1
    assert json.loads(row["command"])[1:] == ["-c", "print('hello'); import sys; sys.exit(4)"]


def test_list_tool_calls_gives_typed_records_newest_first(store):
    run, _ = start_run(store, "list the calls")
    first = run_tool(store, [PY, "-c", "pass"])
    denied = run_tool(store, ["curl", "https://example.invalid"])
    end_run(store, run.ref, "done")
    outside = run_tool(store, [PY, "-c", "import sys; sys.exit(2)"])
    listed = list_tool_calls(store)
    assert [c.id for c in listed] == [outside.call_id, denied.call_id, first.call_id]
    assert all(isinstance(c, ToolCall) for c in listed)
    newest, refused, ok = listed
    assert (newest.run, newest.event, newest.exit_code, newest.allowed) == (None, None, 2, True)
    assert (refused.allowed, refused.run, refused.event) == (False, run.ref, denied.event)
    assert refused.reason and "deny rule 'curl'" in refused.reason
    assert ok.command[1:] == ["-c", "pass"]
    assert ok.event is not None and ok.event.startswith("evt:") and not ok.timed_out
    assert [c.id for c in list_tool_calls(store, run.ref)] == [denied.call_id, first.call_id]
    assert [c.id for c in list_tool_calls(store, limit=1)] == [outside.call_id]


def test_secrets_are_redacted_in_command_and_output(store):
    start_run(store, "redaction")
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    result = run_tool(store, [PY, "-c", f"print('token={token}')", token])
    assert result.ok and token in result.stdout  # the caller sees the real output
    [event] = list_events(store, result.run, kind="tool")
    stored = json.dumps(event.meta) + event.text + json.dumps(calls(store)[0])
    assert token not in stored and "***" in event.meta["excerpt"]


def test_denied_and_missing_commands_are_logged_without_running(store, tmp_path):
    start_run(store, "policy")
    marker = tmp_path / "ran"
    denied = run_tool(store, ["curl", "-o", str(marker), "https://example.invalid"])
    assert not denied.allowed and "deny rule 'curl'" in denied.reason
    assert not marker.exists()
    configure(store, "tools", allow=(*store.settings.tools.allow, "no-such-program-x1"))
    missing = run_tool(store, ["no-such-program-x1", "--flag"])
    assert missing.allowed and missing.not_found and "not on the [tools] path" in missing.reason
    rows = calls(store)
    assert [(r["allowed"], r["exit_code"]) for r in rows] == [(0, None), (1, None)]
    texts = [e.text for e in list_events(store, kind="tool")]
    assert texts[0].startswith("denied: $ curl") and texts[1].startswith("not run: $ no-such")


def test_timeout_kills_the_process_group(store, tmp_path):
    start_run(store, "timeout")
    child = tmp_path / "child-finished"
    script = (f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
              f"\"import time; time.sleep(1); open({str(child)!r}, 'w')\"]); time.sleep(30)")
    result = run_tool(store, [PY, "-c", script], timeout=0.5)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert result.duration_ms < 5000
    assert calls(store)[0]["timed_out"] == 1
    import time

    time.sleep(1.3)  # the grandchild would have written the file by now if it survived
    assert not child.exists()


def test_without_a_run_only_the_tool_call_row_is_written(store):
    result = run_tool(store, [PY, "-c", "pass"])
    assert result.ok and result.event is None and result.run is None
    assert calls(store)[0]["event"] is None
    with pytest.raises(InvalidInput, match="timeout"):
        run_tool(store, [PY], timeout=0)
    with pytest.raises(InvalidInput, match="no command"):
        run_tool(store, [])


def test_ended_run_is_refused_before_running(store, tmp_path):
    run, _ = start_run(store, "ended")
    end_run(store, run.ref, "done")
    marker = tmp_path / "ran"
    with pytest.raises(InvalidInput, match="has ended"):
        run_tool(store, [PY, "-c", f"open({str(marker)!r}, 'w')"], run_ref=run.ref)
    assert not marker.exists() and calls(store) == []


def test_cli_exit_codes(cli, repo, initialised):
    # Real subprocesses where the exit code is the point.
    propagated = run_agentstate("exec", "--", "python3", "-c",
                                "import sys; print('out'); sys.exit(7)", cwd=repo)
    assert propagated.returncode == 7 and propagated.stdout == "out\n"
    assert "no active run" in propagated.stderr
    cli.ok("run", "start", "exec from the CLI")
    denied = cli("exec", "--", "ssh", "example.invalid")
    assert denied.exit_code == 3 and "deny rule 'ssh'" in denied.stderr
    assert "logged as evt:" in denied.stderr
    not_allowed = cli("exec", "--", "perl", "-e", "1")
    assert not_allowed.exit_code == 3 and "not in [tools] allow" in not_allowed.stderr
    config = repo / ".agentstate" / "config.toml"
    config.write_text(config.read_text().replace('"agentstate"]', '"agentstate", "nope-x1"]'))
    missing = cli("exec", "--", "nope-x1")
    assert missing.exit_code == 1 and "command not found: nope-x1" in missing.stderr
    timed = cli("exec", "--timeout", "0.3", "--", "python3", "-c", "import time; time.sleep(10)")
    assert timed.exit_code == 124 and "timed out" in timed.stderr
    usage = cli("exec")
    assert usage.exit_code == 2 and "no command given" in usage.stderr
    payload = cli("exec", "--json", "--", "python3", "-c", "print(1)").json()["data"]
    assert payload["exit_code"] == 0 and payload["stdout"] == "1\n"
    assert payload["event"].startswith("evt:")
    denied_json = cli("exec", "--json", "--", "curl", "x")
    assert denied_json.exit_code == 3 and denied_json.json()["error"]["code"] == "refused"
    events = cli.json("events", "--kind", "tool")
    assert [e["meta"]["exit_code"] for e in events] == [None, None, None, None, 0, None]
    assert [e["meta"]["allowed"] for e in events] == [False, False, True, True, True, False]


@pytest.mark.parametrize("value", ['"abc"', "-5", "[1]", "true"])
def test_bad_configured_timeout_is_a_clear_error(initialised, value):
    config = initialised / ".agentstate" / "config.toml"
    text = config.read_text()
    assert "\ntimeout = 600\n" in text
    config.write_text(text.replace("\ntimeout = 600\n", f"\ntimeout = {value}\n"))
    proc = run_agentstate("exec", "--", "true", cwd=initialised)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "[tools] timeout" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["nan", "-1", "0"])
def test_timeout_option_must_be_positive(store, value):
    with pytest.raises(InvalidInput, match="timeout must be a positive number"):
        run_tool(store, [PY, "-c", "pass"], timeout=float(value))


def _ctrl_c_as_at_a_terminal() -> None:
    # A shell starts background jobs with SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler: `make test &` would make this test wait out the child.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["human", "json"])
def test_an_interrupted_call_is_still_logged(initialised, json_flag):
    # Ctrl-C while a tool runs: the process group is killed, agentstate exits 130, and the
    # call is in the log (an agent resuming later must see it was cut short). Under --json,
    # stdout is still exactly one JSON document: the `interrupted` envelope.
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import run_agentstate as run_cli

    assert run_cli("run", "start", "goal", cwd=initialised).returncode == 0
    started = initialised / "started"
    child = (f"import pathlib, time; pathlib.Path({str(started)!r}).write_text('x'); "
             "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-m", "agentstate", "exec", *json_flag, "--", PY,
                             "-c", child],
                            cwd=initialised, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_ctrl_c_as_at_a_terminal)
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for the child to start, not for time to pass
    assert started.exists()
    proc.send_signal(signal.SIGINT)
    try:
        # Generous: on a loaded machine the interrupted call is still logged before exiting.
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"agentstate did not exit after SIGINT: {out!r} {err!r}") from None
    assert proc.returncode == 130 and "Traceback" not in err
    if json_flag:
        assert json.loads(out) == {"ok": False, "version": 1, "command": "exec",
                                   "error": {"code": "interrupted", "message": "interrupted"}}
        assert err == ""
    else:
        assert err == "error: interrupted\n"
    events = json.loads(run_cli("events", "--kind", "tool", "--json", cwd=initialised).stdout)
    [event] = events["data"]
    assert "interrupted" in event["text"] and event["meta"]["interrupted"] is True
    assert event["meta"]["exit_code"] is None


def test_an_empty_program_is_a_usage_error_like_no_command(cli, initialised):
    for args in (("exec", "--", ""), ("exec", "--", "  ", "x")):
        result = cli(*args)
        assert result.exit_code == 2 and "no command given" in result.stderr


# ---------------------------------------------------------------- a tool layer hard to fool

def set_tools(repo, **values) -> None:
    """Edit [tools] in the repository's config.toml, as a user would."""
    import tomlkit

    path = repo / ".agentstate" / "config.toml"
    document = tomlkit.parse(path.read_text())
    for key, value in values.items():
        document["tools"][key] = value
    path.write_text(tomlkit.dumps(document))


def plant(folder, name: str, marker) -> str:
    """An executable called `name` in `folder` that creates `marker` when it runs."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    return str(script)


def refusal(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 3 and len(lines) == 1, (proc.returncode, proc.stderr)
    return lines[0]


def test_the_callers_path_does_not_choose_the_program(initialised, tmp_path):
    marker = tmp_path / "evil-ran"
    evil = tmp_path / "evil"
    plant(evil, "git", marker)
    env = {"PATH": f"{evil}:{os.environ['PATH']}"}
    proc = run_agentstate("exec", "--", "git", "--version", cwd=initialised, env=env)
    assert proc.returncode == 0 and "git version" in proc.stdout and not marker.exists()
    # what the command starts is found on the policy path too
    proc = run_agentstate("exec", "--", "env", "git", "--version", cwd=initialised, env=env)
    assert not marker.exists()


def test_an_allowed_name_at_another_path_is_refused(initialised, tmp_path):
    marker = tmp_path / "evil-ran"
    evil = plant(tmp_path / "elsewhere", "git", marker)
    line = refusal(run_agentstate("exec", "--", evil, "status", cwd=initialised))
    assert "unexpected-path" in line and "the one at /usr/bin/git" in line
    script = plant(initialised / "myskill" / "scripts", "git", marker)  # a skill script `git`
    line = refusal(run_agentstate("exec", "--", "./myskill/scripts/git", cwd=initialised))
    assert "unexpected-path" in line
    assert run_agentstate("exec", "--", script, cwd=initialised).returncode == 3
    assert not marker.exists()
    # the real file under another spelling is the same program
    assert run_agentstate("exec", "--", "/usr/bin/../bin/git", "--version",
                          cwd=initialised).returncode == 0


def test_a_skill_script_named_like_a_tool_does_not_run_as_that_tool(store, tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "skill"
    plant(folder / "scripts", "git", marker)
    result = run_tool(store, [str(folder / "scripts" / "git"), "status"], cwd=folder)
    assert not result.allowed and "unexpected-path" in result.reason and not marker.exists()


def test_a_missing_program_is_not_found_not_refused(initialised):
    proc = run_agentstate("exec", "--", "nonexistentcmd", "x", cwd=initialised)
    assert proc.returncode == 1 and "command not found: nonexistentcmd" in proc.stderr
    assert "not in [tools] allow" not in proc.stderr


def test_a_program_only_on_the_callers_path_is_explained(store, tmp_path, monkeypatch):
    bin_dir = tmp_path / "mybin"
    marker = store.work_tree / "m"  # the sandbox keeps writes outside the repository private
    plant(bin_dir, "mytool", marker)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    configure(store, "tools", allow=("mytool",))
    result = run_tool(store, ["mytool"])
    assert result.not_found and f"add {bin_dir} to [tools] path" in result.reason
    configure(store, "tools", path=(*store.settings.tools.path, str(bin_dir)))
    assert run_tool(store, ["mytool"]).ok and marker.exists()


def test_relative_and_home_entries_of_the_tools_path(store, tmp_path, monkeypatch):
    from agentstate.tools.policy import search_path

    (store.work_tree / ".venv" / "bin").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path))  # the caller's HOME does not move `~/`
    # An activated virtualenv is on the path by design (tested on its own); the shell that
    # runs the suite may have one, which would add its bin here.
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    (tmp_path / "hbin").mkdir()
    configure(store, "tools", path=("/usr/bin", ".venv/bin", "~/hbin", "/no/such/dir"))
    dirs = search_path(store.settings.tools, store.work_tree)
    assert dirs == ["/usr/bin", str(store.work_tree / ".venv" / "bin")]


@pytest.mark.parametrize("argv,marker_in", [
    (["git", "-c", "alias.y=!touch {m}", "y"], "git-config-exec"),
    (["make", "--eval=x:; @touch {m}", "x"], "make-eval"),
    (["find", ".", "-maxdepth", "0", "-exec", "touch", "{m}", ";"], "find-exec"),
    (["sed", "-n", "1e touch {m}", "README.md"], "sed-exec"),
])
def test_arguments_that_run_other_programs_are_refused_before_running(initialised, tmp_path,
                                                                      argv, marker_in):
    marker = tmp_path / "ran"
    argv = [a.replace("{m}", str(marker)) for a in argv]
    line = refusal(run_agentstate("exec", "--", *argv, cwd=initialised))
    assert f"denied by built-in rule {marker_in}" in line and not marker.exists()


def test_environment_variables_that_run_code_are_dropped(initialised, tmp_path):
    marker = tmp_path / "ran"
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.y",
           "GIT_CONFIG_VALUE_0": f"!touch {marker}",
           "GIT_CONFIG_PARAMETERS": f"'alias.z=!touch {marker}'",
           "MAKEFLAGS": f"--eval=all:; @touch {marker}"}
    run_agentstate("exec", "--", "git", "y", cwd=initialised, env=env)
    run_agentstate("exec", "--", "git", "z", cwd=initialised, env=env)
    run_agentstate("exec", "--", "make", "-f", "/dev/null", cwd=initialised, env=env)
    assert not marker.exists()


@pytest.mark.parametrize("argv", [
    ["rm", "-fr", "{d}"], ["rm", "-r", "-f", "{d}"], ["rm", "-rf", "--no-preserve-root", "{d}"],
    ["rm", "--recursive", "--force", "--", "{d}/"], ["env", "rm", "-rf", "{d}"],
    ["nice", "-n", "5", "rm", "-rf", "{d}"], ["timeout", "9", "rm", "-rf", "{d}"],
    ["nohup", "rm", "-rf", "{d}"], ["sh", "-c", "true && rm -rf {d}"],
])
def test_with_allow_star_the_deny_rule_holds_whatever_the_spelling(initialised, tmp_path, argv):
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    set_tools(initialised, allow=["*"], deny=[f"rm -rf {victim}"])
    argv = [a.replace("{d}", str(victim)) for a in argv]
    line = refusal(run_agentstate("exec", "--", *argv, cwd=initialised))
    assert f"deny rule 'rm -rf {victim}'" in line and (victim / "sub").is_dir()


def test_a_symlink_to_a_denied_program_is_denied(store, tmp_path):
    link = tmp_path / "innocent"
    link.symlink_to("/usr/bin/curl")
    configure(store, "tools", allow=("*",))
    result = run_tool(store, [str(link), "--version"])
    assert not result.allowed and "deny rule 'curl'" in result.reason


# ---------------------------------------------------------------- the bubblewrap sandbox

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap): sandbox not tested")


def test_a_missing_sandbox_refuses_rather_than_runs_unconfined(store, tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").symlink_to("/usr/bin/git")  # git, but no bwrap
    configure(store, "tools", sandbox="bwrap", path=(str(tmp_path / "bin"),))
    result = run_tool(store, ["git", "--version"])
    assert not result.allowed and "[tools] sandbox = 'bwrap'" in result.reason


@needs_bwrap
def test_the_sandbox_confines_writes_and_network(initialised, tmp_path):
    set_tools(initialised, sandbox="bwrap")
    outside = tmp_path / "outside.txt"
    script = (
        "import os, socket, sys\n"
        f"open({str(initialised / 'inside.txt')!r}, 'w').write('ok')\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'w').write('escaped')\n"
        "    except OSError as exc:\n"
        "        print('refused', path, exc.errno)\n"
        "print('interfaces', sorted(name for _, name in socket.if_nameindex()))\n"
    )
    proc = run_agentstate("exec", "--", "python3", "-c", script, str(outside),
                          str(initialised / ".agentstate" / "planted"),
                          str(Path.home() / "planted"), cwd=initialised)
    assert proc.returncode == 0, proc.stderr
    assert (initialised / "inside.txt").read_text() == "ok"
    assert not outside.exists() and not (initialised / ".agentstate" / "planted").exists()
    assert not (Path.home() / "planted").exists()
    assert "interfaces ['lo']" in proc.stdout
    # without the sandbox the same command writes outside (so the test can fail)
    set_tools(initialised, sandbox="none")
    run_agentstate("exec", "--", "python3", "-c", script, str(outside), cwd=initialised)
    assert outside.exists()


@needs_bwrap
def test_the_sandbox_lets_a_skill_write_its_temp_dir(store, tmp_path):
    configure(store, "tools", sandbox="bwrap")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = f"open({str(scratch / 'out')!r}, 'w').write('x')"
    assert not run_tool(store, ["python3", "-c", code]).ok  # /tmp is private in the sandbox
    assert run_tool(store, ["python3", "-c", code], writable=[scratch]).ok
    assert (scratch / "out").read_text() == "x"
