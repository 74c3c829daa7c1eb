"""Running one non-interactive session of a real client against the scripted model, and
reading what the model received."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.conftest import AGENTSTATE, SESSION_TIMEOUT_S, VENV_BIN, Project, quiet_env
from tests.e2e.model_server import ModelServer, ToolCall

# The failing "test": a traceback ending in the telling line, quick to run (a pytest run
# takes seconds on a loaded machine, and Codex hands a command still running after its yield
# time back to the model unfinished, with no PostToolUse). By its absolute path: Codex runs
# commands in a login shell (`bash -lc`), whose PATH is the system's, not this one.
FAILING_TEST = (f"{shlex.quote(sys.executable)} -c "
                "\"import test_parse; test_parse.test_parse()\"")
PASSING = "git status --short"
TELLING = "expected 3 got 4"  # the failing test's telling line
SHELLS = ("Bash", "exec_command", "shell_command", "shell", "local_shell")
ENV_PATH = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"


def shell_name(names: list[str]) -> str:
    for name in SHELLS:
        if name in names:
            return name
    raise AssertionError(f"no shell tool among {names}")


def shell_call(command: str) -> ToolCall:
    def arguments(name: str) -> dict[str, Any]:
        if name == "Bash":
            return {"command": command, "description": "run it"}
        if name == "exec_command":
            return {"cmd": command, "yield_time_ms": 60000}
        if name == "shell_command":
            return {"command": command}
        return {"command": ["bash", "-lc", command]}

    return ToolCall(shell_name, arguments)


def mcp_call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """Call the MCP tool whose offered name ends with `tool` (mcp__agentstate__resume, …)."""
    def name(names: list[str]) -> str:
        found = [n for n in names if "agentstate" in n and n.endswith(tool)]
        if not found:
            raise AssertionError(f"the client did not offer agentstate's {tool}: {names}")
        return found[0]

    return ToolCall(name, arguments)


def capture_shim(project: Project) -> Path:
    """A program named `agentstate` that keeps each hook's stdin (one file per call) and
    then runs the real agentstate with it: hooks behave exactly as installed, and the test
    sees which events fired with which payloads."""
    folder = project.root.parent / "shim"
    payloads = project.root.parent / "payloads"
    folder.mkdir(exist_ok=True)
    payloads.mkdir(exist_ok=True)
    shim = folder / "agentstate"
    shim.write_text(
        "#!/bin/sh\n"
        f'out={shlex.quote(str(payloads))}/$(date +%s%N)-$$.json\n'
        f'tee "$out" | exec {shlex.quote(str(AGENTSTATE))} "$@"\n')
    shim.chmod(0o755)
    return shim


def captured(project: Project) -> list[dict[str, Any]]:
    """The hook payloads the shim kept, in the order they came."""
    folder = project.root.parent / "payloads"
    found = []
    for path in sorted(folder.glob("*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except ValueError:
            continue
    return found


def client_tmp(project: Project) -> str:
    folder = project.home / "tmp"
    folder.mkdir(exist_ok=True)
    return str(folder)


def run_claude(binary: Path, project: Project, model: ModelServer, prompt: str,
               *, mcp: bool = False, path: str = ENV_PATH) -> subprocess.CompletedProcess:
    env = quiet_env(str(project.home), path) | {
        "TMPDIR": client_tmp(project),  # its scratch folders go with the test's own
        "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy",
        # MCP tools offered directly, not behind the tool-search indirection.
        "ENABLE_TOOL_SEARCH": "false", "MCP_TIMEOUT": "30000"}
    args = [str(binary), "-p", prompt, "--output-format", "json",
            "--allowedTools", "Bash mcp__agentstate__resume mcp__agentstate__context"]
    if mcp:
        config = project.root.parent / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"agentstate": {
            "command": str(AGENTSTATE), "args": ["mcp"]}}}))
        args += ["--mcp-config", str(config), "--strict-mcp-config"]
    return _run(args, project, env, model)


def codex_home(project: Project) -> Path:
    return project.home / ".codex"


def write_codex_config(project: Project, model: ModelServer, *, mcp: bool = False) -> Path:
    """The user's Codex config: our model server as the provider (and agentstate's MCP
    server). Written before `hooks install codex --trust` adds its keys."""
    home = codex_home(project)
    home.mkdir(parents=True, exist_ok=True)
    text = (
        'model = "gpt-5.5"\nmodel_provider = "scripted"\n'
        "[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{model.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
        "request_max_retries = 0\nstream_max_retries = 0\n")
    if mcp:
        text += (f"[mcp_servers.agentstate]\ncommand = {json.dumps(str(AGENTSTATE))}\n"
                 'args = ["mcp"]\nstartup_timeout_sec = 60\n')
    path = home / "config.toml"
    path.write_text(text)
    return path


def run_codex(binary: Path, project: Project, model: ModelServer, prompt: str
              ) -> subprocess.CompletedProcess:
    env = quiet_env(str(project.home), ENV_PATH) | {
        "CODEX_HOME": str(codex_home(project)), "SCRIPTED_API_KEY": "e2e-dummy",
        "TMPDIR": client_tmp(project)}
    # No sandbox: Landlock may be unavailable in CI containers; approvals: never.
    args = [str(binary), "exec", "--dangerously-bypass-approvals-and-sandbox", prompt]
    return _run(args, project, env, model)


def _run(args: list[str], project: Project, env: dict[str, str], model: ModelServer
         ) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=project.root, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=SESSION_TIMEOUT_S)
    if model.model.errors:
        raise AssertionError(f"the scripted model could not play its script: "
                             f"{model.model.errors}")
    if done.returncode != 0:
        raise AssertionError(f"{Path(args[0]).name} exited {done.returncode}:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def request_text(body: dict[str, Any]) -> str:
    """Everything in a request the model reads, as one string (system, messages, input)."""
    return json.dumps({k: body.get(k) for k in ("system", "messages", "input", "instructions")},
                      ensure_ascii=False)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a request hands the model, as the text it reads."""
    found = []
    for message in body.get("messages") or []:
        for block in message.get("content") or [] if isinstance(message, dict) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                content = block.get("content")
                if isinstance(content, list):
                    content = "\n".join(str(c.get("text", "")) for c in content
                                        if isinstance(c, dict))
                found.append(str(content))
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, list):
                output = "\n".join(str(c.get("text", "")) for c in output if isinstance(c, dict))
            found.append(str(output))
    return found


EVT = re.compile(r"evt:[a-z0-9]+")


def save_captures(project: Project, client: str, version: str) -> Path:
    """Copy the hook payloads and the client's transcript, with this test's paths replaced
    by stable ones, to /tmp/e2e-captures/<client>/real-<version>/ (for whoever works on
    the payload handling) — the reviewed copies live in tests/fixtures."""
    out = Path("/tmp/e2e-captures") / client.replace("-", "_") / f"real-{version}" / "e2e"
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError:
        return out

    def clean(text: str) -> str:
        text = text.replace(str(project.root), "/home/dev/shop")
        text = text.replace(str(project.home), "/home/dev")
        text = text.replace(str(project.root).replace("/", "-"), "-home-dev-shop")
        text = text.replace(str(project.root.parent), "/home/dev/work")
        return text.replace(sys.executable, "/home/dev/.venv/bin/python")

    transcripts: list[str] = []
    for index, payload in enumerate(captured(project)):
        name = f"{index:02d}-{payload.get('hook_event_name', 'unknown')}.json"
        (out / name).write_text(clean(json.dumps(payload, indent=1)))
        transcript = payload.get("transcript_path")
        if isinstance(transcript, str) and Path(transcript).is_file():
            if transcript not in transcripts:
                transcripts.append(transcript)
            target = out / f"transcript-{transcripts.index(transcript) + 1}.jsonl"
            shutil.copyfile(transcript, target)
            target.write_text(clean(target.read_text()))
    return out
