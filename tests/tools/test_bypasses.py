"""The tool layer attacked as an agent with a shell would: every way past the rules that issue 21
lists, and more of the same classes, through the real CLI (`agentstate exec` in a subprocess).

Fake `curl`, `ssh`, `rm` and `editor` scripts sit first on the `[tools] path`; each leaves a
marker file when it runs. A bypass is stopped when no marker appears: refused by a rule, or
made harmless by the environment and the git configuration exec sets. Every case runs twice:
without the sandbox (the rules and the environment alone must hold) and with the default
sandbox setting (bubblewrap where it works here). The markers are written inside the
repository, which the sandbox leaves writable, so the sandbox does not hide a missed rule.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import tomlkit

from tests.conftest import git, run_agentstate

FAKES = ("curl", "ssh", "rm", "editor", "wget")


def _set_tools(repo: Path, **values) -> None:
    path = repo / ".agentstate" / "config.toml"
    document = tomlkit.parse(path.read_text())
    for key, value in values.items():
        document["tools"][key] = value
    path.write_text(tomlkit.dumps(document))


class Attack:
    """A repository with fake programs on the policy path and a marker folder."""

    def __init__(self, repo: Path, sandbox: str) -> None:
        self.repo = repo
        self.bin = repo / "fakebin"
        self.marks = repo / "marks"
        self.bin.mkdir()
        self.marks.mkdir()
        for name in FAKES:
            script = self.bin / name
            script.write_text(f'#!/bin/sh\necho "$0 $*" > {self.marks / name}\n')
            script.chmod(0o755)
        extra = [os.path.dirname(p) for p in (shutil.which("cargo"), shutil.which("npm"))
                 if p]
        values = {"allow": ["*"], "deny": ["rm -rf /", "curl", "wget", "ssh", "scp"],
                  "path": ["fakebin", "/usr/local/bin", "/usr/bin", "/bin", *extra]}
        if sandbox == "none":
            values["sandbox"] = "none"
        _set_tools(repo, **values)

    def path(self, name: str) -> str:
        return str(self.bin / name)

    def run(self, *argv: str, env: dict | None = None, input: str | None = None,
            timeout: str = "30"):
        return run_agentstate("exec", "--timeout", timeout, "--", *argv, cwd=self.repo,
                              env=env, input=input)

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture(params=["none", "default"])
def attack(request, initialised) -> Attack:
    return Attack(initialised, request.param)


def _held(attack: Attack, proc) -> None:
    assert attack.ran() == [], (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------- the 14 ways of issue 21

def test_env_bundled_ignore_environment_and_split_string(attack):
    # `-i` and `-S` in one word: the split string names the program (with its own PATH)
    proc = attack.run("env", f"-iSPATH={attack.bin} curl x")
    assert proc.returncode == 3 and "deny rule 'curl'" in proc.stderr
    _held(attack, proc)


def test_env_bundled_debug_and_split_string(attack):
    proc = attack.run("env", "-vScurl x")
    assert proc.returncode == 3 and "deny rule 'curl'" in proc.stderr
    _held(attack, proc)


def test_env_chdir_moves_the_rm_operand(attack):
    # `rm -rf .` run from `/` is `rm -rf /`: the rule compares the directory env moves to
    proc = attack.run("env", "-C", "/", "rm", "-rf", ".")
    assert proc.returncode == 3 and "deny rule 'rm -rf /'" in proc.stderr
    _held(attack, proc)


def test_git_abbreviated_upload_pack(attack):
    proc = attack.run("git", "ls-remote", "--upload-pa=curl", ".")
    assert proc.returncode == 3 and "git-runs-command" in proc.stderr
    _held(attack, proc)


def test_make_abbreviated_eval(attack):
    proc = attack.run("make", "-f", "/dev/null", "--ev=x:; @curl y", "x")
    assert proc.returncode == 3 and "make-eval" in proc.stderr
    _held(attack, proc)


def test_sed_abbreviated_expression_after_a_flag(attack):
    proc = attack.run("sed", "-s", "--e=1e curl y", "README.md")
    assert proc.returncode == 3 and "sed-exec" in proc.stderr
    _held(attack, proc)


def test_xargs_shell_with_the_command_on_stdin(attack):
    proc = attack.run("xargs", "-I{}", "sh", "-c", "{}", input="curl x\n")
    assert proc.returncode == 3 and "xargs" in proc.stderr
    _held(attack, proc)


def test_editor_and_visual_from_the_callers_environment(attack):
    editor = {"EDITOR": attack.path("editor"), "VISUAL": attack.path("editor")}
    attack.run("git", "commit", "--allow-empty", env=editor)
    attack.run("git", "config", "-e", env=editor)
    attack.run("git", "commit", "--allow-empty", "--amend", env=editor)
    assert attack.ran() == []


def test_ssh_askpass_from_the_callers_environment(attack):
    proc = attack.run("git", "credential", "fill",
                      env={"SSH_ASKPASS": attack.path("curl"), "GIT_TERMINAL_PROMPT": "0"},
                      input="protocol=https\nhost=example.invalid\n\n", timeout="20")
    _held(attack, proc)


def test_git_allow_protocol_ext_from_the_callers_environment(attack):
    proc = attack.run("git", "ls-remote", "ext::curl x", env={"GIT_ALLOW_PROTOCOL": "ext"})
    _held(attack, proc)


def test_git_ssh_transport_runs_no_denied_ssh(attack):
    proc = attack.run("git", "ls-remote", "ssh://example.invalid/x.git")
    assert proc.returncode != 0
    _held(attack, proc)


@pytest.mark.parametrize("how", ["option", "abbreviated", "config"])
def test_git_clone_template_hooks(attack, how):
    hooks = attack.repo / "tpl" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "post-checkout").write_text("#!/bin/sh\ncurl x\n")
    (hooks / "post-checkout").chmod(0o755)
    target = str(attack.repo / f"clone-{how}")
    source = str(attack.repo)
    argv = {"option": ["git", "clone", f"--template={hooks.parent}", source, target],
            "abbreviated": ["git", "clone", f"--templ={hooks.parent}", source, target],
            "config": ["git", "-c", f"init.templateDir={hooks.parent}", "clone", source,
                       target]}[how]
    proc = attack.run(*argv)
    assert proc.returncode == 3 and "git-" in proc.stderr
    _held(attack, proc)


def _crate(repo: Path) -> Path:
    crate = repo / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "c"\nversion = "0.1.0"\n'
                                      'edition = "2021"\n')
    (crate / "src" / "main.rs").write_text("fn main() {}\n")
    return crate


def _rust_home() -> str | None:
    """A home folder with a rustup toolchain (the test's own HOME has none)."""
    for home in (Path.home(), Path(os.path.expanduser("~root"))):
        if (home / ".rustup" / "toolchains").is_dir():
            return str(home)
    return None


needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None or _rust_home() is None,
                                 reason="no cargo with a toolchain: cargo bypasses not tried")


@needs_cargo
def test_rustc_wrapper_from_the_callers_environment(attack):
    crate = _crate(attack.repo)
    proc = run_agentstate("exec", "--", "cargo", "build", "--offline", cwd=crate,
                          env={"RUSTC_WRAPPER": attack.path("curl"), "HOME": _rust_home(),
                               "CARGO_BUILD_RUSTC_WRAPPER": attack.path("curl")})
    _held(attack, proc)


@needs_cargo
def test_cargo_config_rustc_wrapper(attack):
    crate = _crate(attack.repo)
    proc = run_agentstate("exec", "--", "cargo", "--config",
                          f"build.rustc-wrapper='{attack.path('curl')}'", "build", "--offline",
                          cwd=crate, env={"HOME": _rust_home()})
    assert proc.returncode == 3 and "cargo-config" in proc.stderr
    _held(attack, proc)


def test_git_config_system_from_the_callers_environment(attack):
    evil = attack.repo / "evil.gitconfig"
    evil.write_text("[alias]\n\tst = !curl x\n[core]\n\tfsmonitor = curl\n")
    env = {"GIT_CONFIG_SYSTEM": str(evil), "GIT_CONFIG_NOSYSTEM": ""}
    proc = attack.run("git", "st", env=env)
    attack.run("git", "status", env=env)
    _held(attack, proc)


def test_exported_bash_function_named_like_a_tool(attack):
    proc = attack.run("bash", "-c", "git status", env={"BASH_FUNC_git%%": "() { curl x; }"})
    _held(attack, proc)


# ---------------------------------------------------------------- more of the same classes

@pytest.mark.parametrize("argv", [
    ["env", "--split-s=curl x"],                       # a long option's unique prefix
    ["env", "-S", "-i curl x"],                        # options inside the split string
    ["env", "-u", "HOME", "-vS", "curl x"],
    ["env", "-C/", "rm", "-rf", "."],                  # -C with its value attached
    ["env", "--ch=/", "rm", "-rf", "."],
    ["env", "-S", "-C / rm -rf ."],
    ["sh", "-c", "cd / && rm -rf ."],                  # a shell's cd moves the operand
    ["env", "-C", "/tmp", "env", "-C", "..", "rm", "-rf", "."],
    ["xargs", "sh", "-c"],                             # the shell string comes from stdin
    ["xargs", "git"],                                  # git's options come from stdin
    ["xargs", "-I", "X", "X", "x"],                    # the program itself comes from stdin
    ["xargs", "--replace", "env", "{}"],
    ["git", "fetch", "--upload-p=curl", "."],
    ["git", "-c", "core.sshcommand=curl", "ls-remote", "."],
    ["make", "-f", "/dev/null", "--eva", "x:; @curl y", "x"],
    ["sed", "--expr=1e curl y", "README.md"],
    ["sed", "-n", "-s", "-e", "1e curl y", "README.md"],
    ["timeout", "--sig=KILL", "9", "curl", "x"],
    ["nice", "--adj=5", "curl", "x"],
    ["npm", "test", "--script-shell=fakebin/curl"],
    ["npm", "run", "test", "--scr=fakebin/curl"],
    ["go", "test", "-exec=curl", "./..."],
    ["go", "build", "-toolexec", "curl", "."],
    ["go", "vet", "--vettool=fakebin/curl", "."],
])
def test_further_spellings_are_refused(attack, argv):
    (attack.repo / "package.json").write_text('{"scripts": {"test": "true"}}\n')
    proc = attack.run(*argv, input="curl x\n")
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    _held(attack, proc)


def _commit_env() -> dict:
    return {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.invalid"}


@pytest.mark.parametrize("setting", [
    ("alias.x", "!curl x", ["x"]),
    ("core.fsmonitor", "curl", ["status"]),
    ("core.hooksPath", "{repo}/evilhooks", ["commit", "--allow-empty", "-m", "x"]),
    ("gpg.program", "curl", ["commit", "--allow-empty", "-S", "-m", "x"]),
    ("credential.helper", "!curl", ["credential", "fill"]),
    ("core.askPass", "curl", ["credential", "fill"]),
    ("core.editor", "curl", ["commit", "--allow-empty"]),
    ("sequence.editor", "curl", ["rebase", "-i", "HEAD"]),
    ("help.autocorrect", "immediate", ["xx"]),
])
def test_repository_config_written_behind_exec_runs_nothing(attack, setting):
    # An agent can write .git/config with its own file tools; exec's git overrides what
    # would run a program from it.
    key, value, args = setting
    hooks = attack.repo / "evilhooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\ncurl x\n")
    (hooks / "pre-commit").chmod(0o755)
    git(attack.repo, "config", key, value.replace("{repo}", str(attack.repo)))
    if key == "help.autocorrect":
        git(attack.repo, "config", "alias.xy", "!curl x")
    proc = attack.run("git", *args, env=_commit_env(),
                      input="protocol=https\nhost=example.invalid\n\n", timeout="20")
    _held(attack, proc)


def test_the_callers_home_and_xdg_config_do_not_choose_git_config(attack):
    home = attack.repo / "evilhome"
    (home / "git").mkdir(parents=True)
    for config in (home / ".gitconfig", home / "git" / "config"):
        config.write_text("[core]\n\tfsmonitor = curl\n\tpager = curl\n")
    proc = attack.run("git", "status", env={"GIT_CONFIG_GLOBAL": str(home / ".gitconfig")})
    attack.run("git", "status", env={"HOME": str(home), "XDG_CONFIG_HOME": str(home)})
    _held(attack, proc)


def test_python_path_from_the_callers_environment_loads_nothing(attack):
    site = attack.repo / "evilsite"
    site.mkdir()
    # (the agentstate process itself also gets the caller's PYTHONPATH: only the child acts)
    (site / "sitecustomize.py").write_text(
        "import subprocess, sys\n"
        "if 'agentstate' not in ' '.join(sys.orig_argv):\n"
        f"    subprocess.run([{attack.path('curl')!r}])\n")
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    proc = attack.run("python3", "-c", "pass", env={"PYTHONPATH": path})
    _held(attack, proc)


def test_the_fakes_do_run_when_called_plainly(attack):
    # the control: with the rule gone, a plain call leaves its marker (so the test can fail)
    _set_tools(attack.repo, deny=[])
    proc = attack.run("curl", "x")
    assert proc.returncode == 0, proc.stderr
    assert attack.ran() == ["curl"]


DUMP = "import json, os; print(json.dumps(dict(os.environ)))"


def test_the_environment_is_an_allow_list(initialised):
    import json

    caller = {"EDITOR": "x", "VISUAL": "x", "GIT_DIR": "x", "FOO_WRAPPER": "x",
              "NODE_OPTIONS": "x", "SSH_ASKPASS": "x", "BASH_FUNC_ls%%": "() { x; }",
              "PYTHONPATH": "x", "SOME_TOKEN": "x", "LC_ALL": "C", "TERM": "xterm",
              "CLAUDECODE": "1", "GIT_AUTHOR_NAME": "A U Thor", "MY_SETTING": "mine"}
    proc = run_agentstate("exec", "--json", "--", "python3", "-c", DUMP, cwd=initialised,
                          env=caller)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(json.loads(proc.stdout)["data"]["stdout"])
    for name in ("EDITOR", "VISUAL", "GIT_DIR", "FOO_WRAPPER", "NODE_OPTIONS", "SSH_ASKPASS",
                 "BASH_FUNC_ls%%", "PYTHONPATH", "SOME_TOKEN", "MY_SETTING"):
        assert name not in got, name
    # what commands need, and what keeps a nested agentstate acting as the agent
    assert (got["LC_ALL"], got["TERM"], got["CLAUDECODE"]) == ("C", "xterm", "1")
    assert got["GIT_AUTHOR_NAME"] == "A U Thor" and got["HOME"] == os.environ["HOME"]
    assert got["GIT_EDITOR"] == ":" and got["GIT_ALLOW_PROTOCOL"] == "file:http:https"
    # [tools] env: a name passes the caller's value, NAME=value sets one
    _set_tools(initialised, env=["MY_SETTING", "FIXED=1"])
    proc = run_agentstate("exec", "--json", "--", "python3", "-c", DUMP, cwd=initialised,
                          env=caller)
    got = json.loads(json.loads(proc.stdout)["data"]["stdout"])
    assert (got["MY_SETTING"], got["FIXED"]) == ("mine", "1") and "EDITOR" not in got


@pytest.mark.parametrize("entry", ["EDITOR", "GIT_SSH_COMMAND=x", "LD_PRELOAD", "RUSTC_WRAPPER",
                                   "SSH_ASKPASS", "BASH_FUNC_x%%", "PATH=/tmp", "not a name"])
def test_tools_env_refuses_variables_that_run_code(initialised, entry):
    _set_tools(initialised, env=[entry])
    proc = run_agentstate("exec", "--", "true", cwd=initialised)
    assert proc.returncode == 1 and "[tools] env" in proc.stderr.replace("tools.env", "[tools] env")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
