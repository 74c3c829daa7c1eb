"""One error boundary for every entry point: a bug in the CLI, an MCP tool or a hook leaves
its traceback, secrets redacted, in the same crash log (error_boundary.write_crash_log, in
AGENTSTATE_CACHE_DIR), and each entry point reports the mapped error in its own medium —
exit 70 for the CLI (tests/cli/test_boundary.py), an `internal` isError result or JSON-RPC
-32603 for MCP, exit 0 and a hook-errors.log line for a hook.

The faults are real: a `sitecustomize` on PYTHONPATH makes importing one module fail in the
server or hook process, with a secret in the exception's text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentstate.error_boundary import JSONRPC_INTERNAL, JSONRPC_NOT_FOUND, classify
from agentstate.errors import NotFound, Refused
from tests.conftest import ROOT, failing_import_env, run_agentstate

SECRET = "ghp_" + "Zx7" * 12
HOOK_FIXTURES = ROOT / "tests" / "fixtures" / "hooks"


def _shim(tmp_path: Path, *modules: str) -> dict[str, str]:
    """Environment whose Python cannot import `modules` (RuntimeError naming the secret)."""
    return failing_import_env(tmp_path, *modules, note=f" near {SECRET}")


def _new_crash_logs(cache: Path, before: set[Path]) -> list[Path]:
    return sorted(set(cache.glob("crash-*.log")) - before)


def _check_crash_log(log: Path, command: str, module: str) -> None:
    text = log.read_text()
    assert text.startswith("agentstate ") and f"command: agentstate {command}" in text
    assert "Traceback (most recent call last)" in text and f"cannot load {module}" in text
    assert SECRET not in text and "[REDACTED]" in text
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def test_a_bug_in_a_hook_is_logged_redacted_in_the_crash_log_and_exits_0(initialised, tmp_path):
    cache = Path(os.environ["AGENTSTATE_CACHE_DIR"])
    before = set(cache.glob("crash-*.log"))
    data = (HOOK_FIXTURES / "claude-code" / "stop.json").read_text().replace(
        "__CWD__", str(initialised))
    env = _shim(tmp_path, "agentstate.integrations.hooks")
    proc = run_agentstate("hook", "claude-code", cwd=initialised, input=data, env=env)
    assert proc.returncode == 0 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    assert "internal error (RuntimeError: cannot load agentstate.integrations.hooks" \
        in proc.stderr
    [log] = _new_crash_logs(cache, before)
    assert str(log) in proc.stderr and SECRET not in proc.stderr
    _check_crash_log(log, "hook claude-code", "agentstate.integrations.hooks")
    # The store's hook error log (which doctor reads) names the same crash log.
    line = (initialised / ".agentstate" / "hook-errors.log").read_text().splitlines()[-1]
    assert str(log) in line and SECRET not in line


def test_a_bug_in_a_git_hook_goes_through_the_same_boundary(initialised, tmp_path):
    cache = Path(os.environ["AGENTSTATE_CACHE_DIR"])
    before = set(cache.glob("crash-*.log"))
    env = _shim(tmp_path, "agentstate.integrations.git_hooks")
    proc = run_agentstate("hook", "git", "post-commit", cwd=initialised, env=env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    [log] = _new_crash_logs(cache, before)
    _check_crash_log(log, "hook git post-commit", "agentstate.integrations.git_hooks")


def test_a_bug_in_an_mcp_tool_is_an_internal_result_and_a_redacted_crash_log(
        initialised, tmp_path):
    pytest.importorskip("mcp")
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    cache = Path(os.environ["AGENTSTATE_CACHE_DIR"])
    before = set(cache.glob("crash-*.log"))
    run_agentstate("run", "start", "a goal to resume", cwd=initialised)
    env = {**os.environ, **_shim(tmp_path, "agentstate.memory.recall",
                                 "agentstate.context.resume")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "agentstate", "mcp"],
                                   env=env, cwd=str(initialised))
    errlog = (tmp_path / "server-stderr.txt").open("w")
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(stdio_client(params, errlog=errlog)) as (r, w):
            with portal.wrap_async_context_manager(ClientSession(r, w)) as session:
                portal.call(session.initialize)
                result = portal.call(lambda: session.call_tool("recall", {"query": "x"}))
                with pytest.raises(MCPError) as raised:
                    portal.call(lambda: session.read_resource("agentstate://resume"))
    errlog.close()
    assert result.is_error
    envelope = result.structured_content
    assert envelope["ok"] is False and envelope["error"]["code"] == "internal"
    assert json.loads(result.content[0].text) == envelope
    assert SECRET not in json.dumps(envelope)
    assert raised.value.error.code == JSONRPC_INTERNAL
    assert SECRET not in raised.value.error.message
    logs = {Path(envelope["error"]["details"]["crash_log"]),
            Path(raised.value.error.data["error"]["details"]["crash_log"])}
    assert logs <= set(_new_crash_logs(cache, before)) and len(logs) == 2
    for log in logs:
        module = "agentstate.memory.recall" if "recall" in log.read_text() \
            else "agentstate.context.resume"
        _check_crash_log(log, "mcp", module)
    # Nothing of a traceback on the server's stderr either: it is in the crash log.
    assert "Traceback" not in (tmp_path / "server-stderr.txt").read_text()


def test_the_one_mapping():
    """Our errors keep their code and exit; a user's SQLite/OS failure is ours; a NUL in a
    file name is invalid input; Ctrl-C is interrupted; the rest is internal with a log."""
    assert classify(NotFound("gone"), []).error.exit_code == 1
    assert classify(NotFound("gone"), []).jsonrpc_code == JSONRPC_NOT_FOUND
    refused = classify(Refused("no"), [])
    assert refused.error.exit_code == 3 and refused.jsonrpc_code == JSONRPC_INTERNAL
    assert classify(PermissionError(13, "denied", "/x"), []).error.message == \
        "permission denied: /x"
    assert classify(ValueError("embedded null byte"), []).error.code == "invalid_input"
    assert classify(KeyboardInterrupt(), []).error.exit_code == 130
    bug = classify(ZeroDivisionError("x"), ["run", "list"])
    assert bug.bug and bug.error.exit_code == 70 and bug.crash_log is not None
    assert bug.crash_log.is_file() and str(bug.crash_log) in bug.error.message
    assert classify(subprocess.TimeoutExpired("x", 1), []).bug
    assert not classify(NotFound("gone"), []).bug
