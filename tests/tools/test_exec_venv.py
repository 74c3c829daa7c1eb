"""`exec` finds the project's own tools: an activated virtualenv (VIRTUAL_ENV) or `.venv/`
at the repository root, after the configured [tools] path and under the same rules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_agentstate


@pytest.fixture(autouse=True)
def _no_activated_virtualenv(monkeypatch):
    """run_agentstate starts from this process's environment: a suite run from an activated
    virtualenv would hand its VIRTUAL_ENV to every command here, so the tests that mean
    "not activated" would run with one."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)


def make_venv(folder: Path) -> Path:
    """A real virtualenv (no pip: fast) with a `pytest` that says where it ran from."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   timeout=120)
    bin_dir = folder / "bin"
    for name, body in (("pytest", "echo pytest-from-venv $0 \"$@\""),
                       ("git", "echo fake-git-from-venv"),
                       ("curl", "echo curl-ran"),
                       ("perl", "echo perl-ran")):
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    return bin_dir


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(extra)
    return env


def test_an_activated_virtualenv_outside_the_repository(initialised, tmp_path):
    bin_dir = make_venv(tmp_path / "envs" / "project")
    env = _env(VIRTUAL_ENV=str(tmp_path / "envs" / "project"),
               PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    ran = run_agentstate("exec", "--", "pytest", "-q", cwd=initialised, env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("pytest-from-venv") and str(bin_dir) in ran.stdout
    # Without the activation the README's loop is refused, as before: not on the path.
    plain = run_agentstate("exec", "--", "pytest", "-q", cwd=initialised,
                           env=_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert plain.returncode == 1 and "not on the [tools] path" in plain.stderr


def test_dot_venv_at_the_repository_root(initialised, tmp_path):
    bin_dir = make_venv(initialised / ".venv")
    sub = initialised / "src"
    sub.mkdir()
    ran = run_agentstate("exec", "--", "pytest", "tests", cwd=sub, env=_env())
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("pytest-from-venv") and str(bin_dir) in ran.stdout


def test_the_policy_still_decides_and_a_venv_never_replaces_system_tools(initialised,
                                                                         tmp_path):
    make_venv(tmp_path / "venv")
    env = _env(VIRTUAL_ENV=str(tmp_path / "venv"))
    denied = run_agentstate("exec", "--", "curl", "x", cwd=initialised, env=env)
    assert denied.returncode == 3 and "deny rule 'curl'" in denied.stderr
    assert "curl-ran" not in denied.stdout
    refused = run_agentstate("exec", "--", "perl", "-e", "1", cwd=initialised, env=env)
    assert refused.returncode == 3 and "not in [tools] allow" in refused.stderr
    git = run_agentstate("exec", "--", "git", "--version", cwd=initialised, env=env)
    assert git.returncode == 0 and git.stdout.startswith("git version")  # the system's


def test_a_directory_that_is_not_a_virtualenv_is_not_searched(initialised, tmp_path):
    fake = tmp_path / "not-a-venv"
    make_venv(fake)
    (fake / "pyvenv.cfg").unlink()
    ran = run_agentstate("exec", "--", "pytest", cwd=initialised,
                         env=_env(VIRTUAL_ENV=str(fake)))
    assert ran.returncode == 1 and "not on the [tools] path" in ran.stderr


def test_init_writes_a_policy_for_the_project_it_finds(cli, repo):
    """A Node, Go, Rust and Python project with a Makefile: init allows each one's usual
    test and lint commands and looks where they are installed; a `jest` in node_modules/.bin
    (where npm puts the project's tools) then runs through exec."""
    import tomllib

    for marker in ("package.json", "go.mod", "Cargo.toml", "pyproject.toml", "Makefile",
                   "yarn.lock"):
        (repo / marker).write_text("\n")
    (repo / "package.json").write_text('{"scripts": {"lint": "eslint ."}, '
                                       '"devDependencies": {"jest": "^29"}}\n')
    created = cli.json("init")["created"]
    assert any(line.startswith("config.toml [tools]: allow ") for line in created), created
    config = tomllib.loads((repo / ".agentstate" / "config.toml").read_text())["tools"]
    for program in ("npx", "eslint", "jest", "yarn", "gofmt", "golangci-lint", "rustfmt",
                    "mypy", "make", "pytest", "cargo", "go", "npm", "ruff"):
        assert program in config["allow"], program
    assert {"node_modules/.bin", "~/.cargo/bin", "~/go/bin"} <= set(config["path"])
    assert "# The one tool layer" in (repo / ".agentstate" / "config.toml").read_text()
    jest = repo / "node_modules" / ".bin" / "jest"
    jest.parent.mkdir(parents=True)
    jest.write_text("#!/bin/sh\necho jest-ran \"$@\"\n")
    jest.chmod(0o755)
    ran = run_agentstate("exec", "--", "jest", "--ci", cwd=repo, env=_env())
    assert ran.returncode == 0 and ran.stdout.startswith("jest-ran --ci"), ran.stderr
    denied = run_agentstate("exec", "--", "curl", "x", cwd=repo, env=_env())
    assert denied.returncode == 3  # deny rules untouched


def test_init_leaves_a_committed_or_plain_config_alone(cli, repo):
    import tomllib

    cli.ok("init")  # no project files: the shipped defaults
    config = repo / ".agentstate" / "config.toml"
    allow = tomllib.loads(config.read_text())["tools"]["allow"]
    assert "npx" not in allow and "mypy" not in allow and "eslint" not in allow
    (repo / "package.json").write_text("{}\n")
    before = config.read_text()
    assert cli.json("init")["created"] == []  # an existing config is never rewritten
    assert config.read_text() == before
