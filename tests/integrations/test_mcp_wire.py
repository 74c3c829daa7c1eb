"""`agentstate mcp` on the wire: raw JSON-RPC lines to a real server process, for what the
SDK's client never sends (malformed lines, batches, unknown methods and tools, arguments of
the wrong type, a client that closes stdin mid-call) and to show that the server needs
no part of the MCP SDK (agentstate/integrations/mcp_wire.py says why it is our own)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import failing_import_env, run_agentstate

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def exchange(repo: Path, *messages: dict | str, env: dict | None = None) -> dict:
    """Send the lines (a dict is a message, a str a raw line), close stdin, → answers by id
    (None for answers without one, as a list), and the process's stderr under 'stderr'."""
    lines = [m if isinstance(m, str) else json.dumps(m) for m in messages]
    proc = run_agentstate("mcp", cwd=repo, env=env, input="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    answers: dict = {None: [], "stderr": proc.stderr}
    for line in proc.stdout.splitlines():
        message = json.loads(line)  # every line the server writes is one JSON object
        assert message["jsonrpc"] == "2.0"
        if message.get("id") is None:
            answers[None].append(message)
        else:
            assert message["id"] not in answers, "answered twice"
            answers[message["id"]] = message
    return answers


def call(ident: int, tool: str, **arguments) -> dict:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}


def envelope(answer: dict) -> dict:
    result = answer["result"]
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    return result["structuredContent"]


def test_the_handshake_answers_the_clients_version_or_the_newest(initialised):
    got = exchange(initialised, INIT, INITIALIZED, {**INIT, "id": 2, "params": {
        "protocolVersion": "1999-01-01", "capabilities": {}}})
    assert got[1]["result"]["protocolVersion"] == "2025-06-18"
    assert got[2]["result"]["protocolVersion"] == "2025-11-25"
    assert got[1]["result"]["serverInfo"]["name"] == "agentstate"
    assert set(got[1]["result"]["capabilities"]) == {"tools", "resources"}
    assert got[None] == []  # the notification is not answered


def test_bad_lines_get_json_rpc_errors_and_the_server_goes_on(initialised):
    got = exchange(initialised, INIT, "this is not json", "[1, 2]", '"a string"',
                   {"jsonrpc": "2.0", "id": 7, "result": {}},  # a response: ignored
                   {"jsonrpc": "2.0", "id": 3, "method": "no/such"},
                   {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": [1]},
                   {"jsonrpc": "2.0", "id": 5, "method": "ping"})
    assert [a["error"]["code"] for a in got[None]] == [-32700, -32600, -32600]
    assert got[3]["error"]["code"] == -32601 and "no/such" in got[3]["error"]["message"]
    assert got[4]["error"]["code"] == -32602
    assert got[5]["result"] == {}
    assert 7 not in got and "Traceback" not in got["stderr"]


def test_tool_arguments_are_checked_against_the_listed_schema(initialised):
    got = exchange(initialised, INIT, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                   call(3, "recall", query="parser", limit="x"),
                   call(4, "recall", limit=3),
                   call(5, "recall", query="parser", limit=3, colour="red"),
                   call(6, "nosuch"),
                   call(7, "recall", query="parser", limit="3"),
                   call(8, "skill_list", all="yes"),
                   call(9, "log_event", kind="note", text="x", meta={"a": 1}),
                   call(10, "recall", query="parser", kind="fact"))
    recall = next(t for t in got[2]["result"]["tools"] if t["name"] == "recall")
    schema = recall["inputSchema"]
    assert schema["required"] == ["query"] and schema["additionalProperties"] is False
    assert schema["properties"]["limit"]["anyOf"][0] == {"type": "integer"}
    for ident, needle in ((3, "'limit' must be an integer"), (4, "'query' is required"),
                          (5, "no argument 'colour'"), (9, "'meta' must be an object"),
                          (10, "'kind' must be a list of strings")):
        assert got[ident]["result"]["isError"] is True, ident
        error = envelope(got[ident])["error"]
        assert error["code"] == "invalid_input" and needle in error["message"], ident
    assert got[6]["error"]["code"] == -32602 and "recall" in got[6]["error"]["message"]
    # What the SDK's models accepted is accepted too: a numeric string, a boolean word.
    assert envelope(got[7])["ok"] is True and envelope(got[8])["ok"] is True


def test_calls_pending_when_stdin_closes_are_still_answered(initialised):
    assert run_agentstate("run", "start", "fix the parser", cwd=initialised).returncode == 0
    got = exchange(initialised, INIT, *(call(n, "log_event", kind="note", text=f"line {n}")
                                        for n in range(2, 7)))
    refs = [envelope(got[n])["data"]["ref"] for n in range(2, 7)]
    assert len(set(refs)) == 5 and all(r.startswith("evt:") for r in refs)
    events = run_agentstate("events", "--json", cwd=initialised)
    assert all(r in events.stdout for r in refs)


def test_the_server_runs_without_any_part_of_the_sdk(initialised, tmp_path):
    env = failing_import_env(tmp_path, "mcp", "mcp_types", "pydantic", "anyio", "starlette")
    got = exchange(initialised, INIT, call(2, "skill_list"),
                   {"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                    "params": {"uri": "agentstate://nope"}}, env=env)
    assert got[1]["result"]["protocolVersion"] == "2025-06-18"
    assert envelope(got[2])["ok"] is True
    assert got[3]["error"]["code"] == -32002


def test_a_text_with_a_lone_surrogate_is_sent_as_valid_json(initialised):
    proc = subprocess.run(
        [sys.executable, "-c",
         "import io, json\n"
         "from agentstate.integrations.mcp_wire import Connection\n"
         "out = io.BytesIO()\n"
         "Connection({}, io.BytesIO(), out).answer(1, {'text': 'a\\udc80b'})\n"
         "print(json.loads(out.getvalue().decode('utf-8'))['result']['text'] == 'a\\udc80b')"],
        capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True", proc.stderr


MCP_PROBE = """
import sys
sys.argv = ["agentstate", "mcp"]
from agentstate.entry import main
try:
    main()
except SystemExit as done:
    code = done.code
sys.stderr.write(f"EXIT {code} TYPER {'typer' in sys.modules}")
"""


def test_a_bare_mcp_on_a_ready_store_is_served_without_the_cli(initialised):
    """Clients start `agentstate mcp` with every session: on a store that opens as it is the
    entry point serves it without building the command line (Typer is never imported)."""
    proc = subprocess.run([sys.executable, "-c", MCP_PROBE], cwd=initialised, text=True,
                          input=json.dumps(INIT) + "\n", capture_output=True, timeout=120)
    assert proc.stderr.endswith("EXIT 0 TYPER False"), proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["result"]["serverInfo"]["name"]


def test_a_store_that_is_not_ready_goes_through_the_cli_which_says_why(repo):
    """No store here: the fast path steps aside, reads nothing, and the command reports."""
    proc = subprocess.run([sys.executable, "-c", MCP_PROBE], cwd=repo, text=True,
                          input=json.dumps(INIT) + "\n", capture_output=True, timeout=120)
    assert "error: no .agentstate store in" in proc.stderr, proc.stderr
    assert proc.stderr.endswith("EXIT 1 TYPER True") and proc.stdout == ""
