"""The sandbox under the tool layer: on by default where bubblewrap works, said out loud where it
does not, and the usual test and lint commands still run inside it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import tomlkit

from tests.conftest import git, run_agentstate

BWRAP = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin")


def _bwrap_problem() -> str | None:
    if BWRAP is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    from agentstate.tools.sandbox import bwrap_works

    return bwrap_works(BWRAP)


_PROBLEM = _bwrap_problem()
needs_bwrap = pytest.mark.skipif(_PROBLEM is not None,
                                 reason=f"sandbox not tested: {_PROBLEM}")


def set_tools(repo: Path, **values) -> None:
    path = repo / ".agentstate" / "config.toml"
    document = tomlkit.parse(path.read_text())
    for key, value in values.items():
        document["tools"][key] = value
    path.write_text(tomlkit.dumps(document))


def exec_json(repo: Path, *argv: str, cwd: Path | None = None):
    proc = run_agentstate("exec", "--json", "--", *argv, cwd=cwd or repo)
    return proc, json.loads(proc.stdout) if proc.stdout.startswith("{") else None


PROBE = """
import os, socket, sys
for path in sys.argv[1:]:
    try:
        with open(path, "a") as f:
            f.write("escaped")
        print("wrote", path)
    except OSError as exc:
        print("refused", path, exc.errno)
print("interfaces", sorted(name for _, name in socket.if_nameindex()))
"""


@needs_bwrap
def test_the_sandbox_is_on_by_default_and_guards_what_runs_later(initialised, tmp_path):
    outside = tmp_path / "outside.txt"
    inside = initialised / "inside.txt"
    guarded = [initialised / ".git" / "hooks" / "pre-commit", initialised / ".git" / "config",
               initialised / ".agentstate" / "planted"]
    proc, out = exec_json(initialised, "python3", "-c", PROBE, str(inside), str(outside),
                          *map(str, guarded), str(Path.home() / "planted"))
    assert proc.returncode == 0 and out is not None, proc.stderr
    assert out["data"]["sandbox"] == "bwrap" and out["data"]["sandbox_note"] is None
    stdout = out["data"]["stdout"]
    assert inside.read_text() == "escaped" and f"wrote {inside}" in stdout
    assert not outside.exists() and not (Path.home() / "planted").exists()
    assert not guarded[0].exists() and not guarded[2].exists()
    assert "escaped" not in guarded[1].read_text()
    assert "interfaces ['lo']" in stdout
    # the same command without the sandbox writes outside: the test can fail
    set_tools(initialised, sandbox="none")
    proc, out = exec_json(initialised, "python3", "-c", PROBE, str(outside))
    assert outside.exists() and out["data"]["sandbox"] == "none"
    assert "the [tools] policy is the only line" in out["data"]["sandbox_note"]


@needs_bwrap
def test_the_policy_may_allow_the_network(initialised):
    set_tools(initialised, network=True)
    proc, out = exec_json(initialised, "python3", "-c", PROBE)
    assert proc.returncode == 0, proc.stderr
    interfaces = out["data"]["stdout"].split("interfaces ", 1)[1]
    assert interfaces.strip() != "['lo']"


@needs_bwrap
def test_daemon_sockets_under_run_are_hidden_without_network(initialised):
    listing = "import os; print(sorted(os.listdir('/run')))"
    proc, out = exec_json(initialised, "python3", "-c", listing)
    assert proc.returncode == 0 and out["data"]["stdout"].strip() == "[]", proc.stderr


@needs_bwrap
def test_doctor_reports_the_sandbox(cli, initialised):
    checks = {c["name"]: c for c in cli.json("doctor")["checks"]}
    assert checks["sandbox"]["status"] == "ok" and "bubblewrap" in checks["sandbox"]["detail"]


def test_without_bubblewrap_exec_and_doctor_say_the_policy_is_the_only_line(cli, initialised,
                                                                           tmp_path):
    bin_dir = initialised / "onlypython"  # a policy path with python3 and no bwrap
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
    set_tools(initialised, path=["onlypython"])
    proc = run_agentstate("exec", "--", "python3", "-c", "print('ran')", cwd=initialised)
    assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "sandbox" in line]
    assert notes == ["agentstate: no sandbox (bubblewrap is not installed, or not on the "
                     "[tools] path): the [tools] policy is the only line"]
    proc, out = exec_json(initialised, "python3", "-c", "pass")
    assert out["data"]["sandbox"] == "none" and "only line" in out["data"]["sandbox_note"]
    assert "sandbox" not in proc.stderr  # --json carries it instead
    check = {c["name"]: c for c in cli.json("doctor")["checks"]}["sandbox"]
    assert check["status"] == "warn" and "the [tools] policy is the only line" in check["detail"]
    # an explicit "bwrap" refuses rather than runs unconfined, and doctor says so
    set_tools(initialised, sandbox="bwrap")
    assert run_agentstate("exec", "--", "python3", "-c", "pass",
                          cwd=initialised).returncode == 3
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    check = {c["name"]: c for c in result.json()["data"]["checks"]}["sandbox"]
    assert check["status"] == "fail"


# ---------------------------------------------------------------- the usual commands still run

def _project(repo: Path) -> None:
    (repo / "Makefile").write_text("check:\n\t@echo make-ok\n")
    (repo / "test_ok.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (repo / "package.json").write_text('{"name": "p", "version": "1.0.0", '
                                       '"scripts": {"test": "node -e \\"console.log(1)\\""}}\n')


def _venv_path(repo: Path, extra: list[str] | None = None) -> None:
    # pytest and ruff of this checkout's virtualenv, cargo and npm where they are installed
    dirs = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]
    dirs += [os.path.dirname(p) for p in (shutil.which("cargo"), shutil.which("go")) if p]
    set_tools(repo, path=dirs + (extra or []),
              allow=["git", "make", "pytest", "python3", "ruff", "npm", "node", "cargo",
                     "go", "sh"])


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_the_usual_test_and_lint_commands_still_run(initialised, sandbox):
    if sandbox == "auto" and _PROBLEM:
        pytest.skip(f"sandbox not tested: {_PROBLEM}")
    _project(initialised)
    _venv_path(initialised)
    set_tools(initialised, sandbox=sandbox)
    commands = [
        ["git", "status", "--short"], ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", "work"], ["git", "log", "--oneline", "-1"],
        ["git", "diff", "HEAD~1", "--stat"], ["make", "check"], ["pytest", "-q", "test_ok.py"],
        ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ok.py"],
        ["ruff", "check", "test_ok.py"],
    ]
    if shutil.which("npm") and shutil.which("node"):
        commands.append(["npm", "test"])
    for argv in commands:
        proc = run_agentstate("exec", "--", *argv, cwd=initialised)
        assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    assert git(initialised, "log", "-1", "--format=%s").strip() == "work"


@pytest.mark.skipif(shutil.which("cargo") is None or not Path("/root/.rustup").is_dir()
                    and not (Path.home() / ".rustup").is_dir(),
                    reason="no cargo with a toolchain here: cargo test not tried")
def test_cargo_test_still_runs(initialised):
    crate = initialised / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "c"\nversion = "0.1.0"\n'
                                      'edition = "2021"\n')
    (crate / "src" / "lib.rs").write_text("#[test]\nfn adds() { assert_eq!(1 + 1, 2); }\n")
    _venv_path(initialised)
    rustup = next(str(p) for p in (Path.home() / ".rustup", Path("/root/.rustup")) if p.is_dir())
    set_tools(initialised, env=[f"RUSTUP_HOME={rustup}"])
    proc = run_agentstate("exec", "--timeout", "300", "--", "cargo", "test", "--offline", "-q",
                          cwd=crate)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "1 passed" in proc.stdout
