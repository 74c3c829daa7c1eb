"""Acceptance checks of the foundation and skills issues, run as a user runs the CLI."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_agentstate


@pytest.mark.parametrize("args", [
    ("events", "--limit", "abc", "--json"),            # a value of the wrong type
    ("resume", "--json", "--budget", "x"),
    ("skill", "propose", "--from-run", "run:abc", "--json"),  # a missing required option
    ("log", "--json", "note"),                           # a missing argument
    ("run", "list", "--json", "--no-such-option"),
])
def test_usage_errors_with_json_print_one_envelope(initialised, args):
    proc = run_agentstate(*args, cwd=initialised)
    assert proc.returncode == 2, proc.stderr
    envelope = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert envelope["ok"] is False and envelope["version"] == 1
    assert envelope["error"]["code"] == "usage" and envelope["error"]["message"]
    assert envelope["command"] == " ".join(a for a in args[:2] if not a.startswith("-")
                                           and a not in ("note",))
    assert "Traceback" not in proc.stderr


def test_usage_errors_without_json_are_one_line_naming_help(initialised):
    proc = run_agentstate("events", "--limit", "abc", cwd=initialised)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1
    assert "--limit" in proc.stderr and "agentstate events --help" in proc.stderr


def test_json_after_double_dash_belongs_to_the_command(initialised):
    # `exec -- prog --json`: the flag is the child's, and agentstate still reports as usual.
    proc = run_agentstate("exec", "--", "echo", "--json", cwd=initialised)
    assert proc.returncode == 0 and proc.stdout == "--json\n"


def test_error_envelope_names_the_command_also_under_python_m(initialised):
    # run_agentstate runs `python -m agentstate`, whose program name has spaces in it.
    proc = run_agentstate("run", "show", "run:zzzzzzzzzz", "--json", cwd=initialised)
    assert proc.returncode == 1
    envelope = json.loads(proc.stdout)
    assert envelope["command"] == "run show" and envelope["error"]["code"] == "not_found"


def test_a_bad_agentstate_now_is_named_in_the_error(initialised):
    proc = run_agentstate("run", "list", cwd=initialised, env={"AGENTSTATE_NOW": "garbage"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "AGENTSTATE_NOW" in proc.stderr and "'garbage'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_store_on_a_read_only_mount_says_read_only(initialised):
    # A read-only file system (a mounted volume, a container layer): SQLite cannot create the
    # WAL's -shm file and says only "unable to open database file". The message must still
    # name the problem. Needs a private mount namespace (root in a container); else skipped.
    import shutil
    import subprocess
    import sys

    unshare = shutil.which("unshare")
    store = initialised / ".agentstate"
    if unshare is None:
        pytest.skip("unshare not available")
    script = (f'mount --bind "{store}" "{store}" && mount -o remount,bind,ro "{store}" '
              f'|| exit 99; exec "{sys.executable}" -m agentstate log note x')
    proc = subprocess.run([unshare, "-m", "sh", "-c", script], cwd=initialised,
                          capture_output=True, text=True, timeout=60)
    if proc.returncode == 99 or "unshare:" in proc.stderr:
        pytest.skip("cannot make a read-only mount here")
    assert proc.returncode == 1, proc.stderr
    assert "read-only" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_init_honours_dir_and_agentstate_dir(tmp_path):
    here = tmp_path / "elsewhere"
    here.mkdir()
    target = tmp_path / "project with space"
    target.mkdir()
    proc = run_agentstate("--dir", str(target), "init", "--json", cwd=here)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["data"]["path"] == str(target / ".agentstate")
    assert (target / ".agentstate" / "state.db").exists()
    assert not (here / ".agentstate").exists()
    # Every other command finds it through the same override.
    assert run_agentstate("--dir", str(target), "run", "start", "g", cwd=here).returncode == 0
    # The environment variable, naming the .agentstate directory itself.
    other = tmp_path / "other"
    other.mkdir()
    env = {"AGENTSTATE_DIR": str(other / ".agentstate")}
    proc = run_agentstate("init", cwd=here, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (other / ".agentstate" / "config.toml").exists()
    assert not (here / ".agentstate").exists()
    assert run_agentstate("run", "list", cwd=here, env=env).returncode == 0


def test_large_import_piped_leaves_stderr_clean(initialised):
    # The progress bar is for a terminal; piped, stderr holds only the one-line notice that
    # the new run is now the current one.
    path = initialised / "big.jsonl"
    with path.open("w") as handle:
        for i in range(3000):
            handle.write(json.dumps({"kind": "observation", "text": f"step {i} " + "x" * 80})
                         + "\n")
    assert path.stat().st_size > 256 * 1024
    proc = run_agentstate("import", "jsonl", str(path), cwd=initialised)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("the current run is now ") and proc.stderr.count("\n") == 1
    assert "imported 3000" in proc.stdout


@pytest.mark.parametrize("args", [("events", "--limit"), ("run", "list", "--limit")])
def test_a_huge_limit_means_everything(initialised, args):
    assert run_agentstate("run", "start", "g", "-c", "one rule", cwd=initialised).returncode == 0
    proc = run_agentstate(*args, "99999999999999999999999", "--json", cwd=initialised)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(json.loads(proc.stdout)["data"]) == 1
