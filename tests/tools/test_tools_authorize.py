"""`authorize`: which file the tool layer runs, in process (quick, so `make mutation` sees it).

Each test builds its own `[tools] path` of real executable files in a temporary folder: the
lookup, the same-file checks of allow and deny rules, wrappers' inner commands, a missing
program and the bwrap sandbox's own lookup are decided on those files, never on PATH."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from agentstate.config import ToolSettings, parse_settings
from agentstate.tools.policy import authorize, resolve_program


def _tool(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def _policy(bin_dir: Path, allow=("*",), deny=(), sandbox="none") -> ToolSettings:
    return parse_settings({"tools": {"allow": list(allow), "deny": list(deny),
                                     "path": [str(bin_dir)], "sandbox": sandbox}}).tools


@pytest.fixture
def bin_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)  # only the folder below is searched
    folder = tmp_path / "bin"
    _tool(folder, "mytool")
    env = shutil.which("env")
    assert env is not None
    (folder / "env").symlink_to(env)
    return folder


def test_a_program_on_the_policy_path_is_allowed_and_named(bin_dir, tmp_path):
    verdict = authorize(_policy(bin_dir, allow=["mytool"]), ["mytool", "-x"], cwd=tmp_path,
                        base=tmp_path)
    assert verdict.decision.allowed and verdict.decision.rule == "mytool"
    assert verdict.executable == str(bin_dir / "mytool") and not verdict.not_found


def test_a_missing_program_is_not_found_not_refused(bin_dir, tmp_path):
    verdict = authorize(_policy(bin_dir, allow=["mytool"]), ["nosuchtool"], cwd=tmp_path,
                        base=tmp_path)
    # Allowed by the rules' verdict (nothing denied it); the runner answers "not found".
    assert verdict.not_found is True and verdict.decision.allowed is True
    assert verdict.executable is None
    assert "command not found: nosuchtool" in verdict.decision.reason


def test_a_path_is_taken_relative_to_the_commands_folder(bin_dir, tmp_path):
    work = tmp_path / "work"
    script = _tool(work / "scripts", "check.sh")
    verdict = authorize(_policy(bin_dir), ["scripts/check.sh"], cwd=work, base=tmp_path)
    assert verdict.decision.allowed and verdict.executable == str(script)
    # The same relative path from another folder names nothing there.
    elsewhere = authorize(_policy(bin_dir), ["scripts/check.sh"], cwd=tmp_path, base=tmp_path)
    assert elsewhere.not_found
    # A file that is not executable is no program.
    script.chmod(0o644)
    assert resolve_program("scripts/check.sh", [str(bin_dir)], work) is None


def test_a_file_of_the_same_name_elsewhere_is_not_the_allowed_program(bin_dir, tmp_path):
    impostor = _tool(tmp_path / "elsewhere", "mytool")
    verdict = authorize(_policy(bin_dir, allow=["mytool"]), [str(impostor)], cwd=tmp_path,
                        base=tmp_path)
    assert not verdict.decision.allowed and verdict.decision.rule == "unexpected-path"


def test_a_wrappers_command_is_checked_as_the_wrapper_finds_it(bin_dir, tmp_path):
    policy = _policy(bin_dir, allow=["env", "mytool"])
    ok = authorize(policy, ["env", "mytool"], cwd=tmp_path, base=tmp_path)
    assert ok.decision.allowed and ok.executable == str(bin_dir / "env")
    # The wrapper starting a file that is not the path's `mytool` is refused…
    _tool(tmp_path, "mytool")
    copy = authorize(policy, ["env", "./mytool"], cwd=tmp_path, base=tmp_path)
    assert not copy.decision.allowed and copy.decision.rule == "unexpected-path"
    # …and the path's own file, named by a path, is allowed.
    own = authorize(policy, ["env", "./mytool"], cwd=bin_dir, base=tmp_path)
    assert own.decision.allowed


def test_another_name_for_a_denied_program_is_denied(bin_dir, tmp_path):
    (bin_dir / "alias-of-mytool").symlink_to(bin_dir / "mytool")
    verdict = authorize(_policy(bin_dir, deny=["mytool"]), ["alias-of-mytool"], cwd=tmp_path,
                        base=tmp_path)
    assert not verdict.decision.allowed and verdict.decision.rule == "mytool"


def test_the_bwrap_sandbox_needs_bwrap_on_the_policy_path(bin_dir, tmp_path):
    missing = authorize(_policy(bin_dir, sandbox="bwrap"), ["mytool"], cwd=tmp_path,
                        base=tmp_path)
    assert not missing.decision.allowed and missing.decision.rule == "sandbox"
    assert "bwrap is not on the [tools] path" in missing.decision.reason
    # Without the sandbox the same lookup is not needed.
    assert authorize(_policy(bin_dir), ["mytool"], cwd=tmp_path, base=tmp_path).decision.allowed
    _tool(bin_dir, "bwrap")
    found = authorize(_policy(bin_dir, sandbox="bwrap"), ["mytool"], cwd=tmp_path,
                      base=tmp_path)
    assert found.decision.allowed and found.executable == str(bin_dir / "mytool")


def test_agentstate_itself_is_found_beside_the_interpreter_and_nothing_else_is(bin_dir,
                                                                              tmp_path):
    own = Path(sys.executable).parent / "agentstate"
    if not (own.is_file() and os.access(own, os.X_OK)):
        pytest.skip("no agentstate script beside this interpreter")
    assert resolve_program("agentstate", [str(bin_dir)], tmp_path) == str(own)
    assert resolve_program("nosuchtool", [str(bin_dir)], tmp_path) is None
