"""The MCP protocol loop inside the test process, on byte streams (test_mcp_wire.py runs the
real `agentstate mcp`): what a client's lines get back, from toy handlers and from the
server's own tools."""

from __future__ import annotations

import io
import json

from agentstate.integrations import mcp_server
from agentstate.integrations.mcp_wire import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Connection,
    Deferred,
    RpcError,
)


def _run(handlers, *lines: str | dict, after=None) -> dict:
    """Serve `lines`, then (`after`) wait for deferred answers, then read what was sent."""
    raw = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    out = io.BytesIO()
    Connection(handlers, io.BytesIO(raw.encode()), out).serve()
    if after is not None:
        after()
    answers: dict = {}
    for line in out.getvalue().decode().splitlines():
        message = json.loads(line)
        answers.setdefault(message.get("id"), []).append(message)
    return answers


def _request(ident, method: str, params=None) -> dict:
    message = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


def test_answers_errors_and_deferred_results_each_reach_their_request():
    def refuse(params):
        raise RpcError(INVALID_PARAMS, "no", data={"why": "test"})

    def crash(params):
        raise ZeroDivisionError("a bug")

    handlers = {"echo": lambda params: {"got": params},
                "refuse": refuse, "crash": crash,
                "later": lambda params: Deferred(lambda reply, fail: reply({"late": True}))}
    answers = _run(handlers, _request(1, "echo", {"a": 1}), _request(2, "refuse"),
                   _request(3, "crash"), _request(4, "later"), _request(5, "missing"),
                   _request(6, "echo", [1, 2]), {"jsonrpc": "2.0", "method": "echo"},
                   "not json", "[1, 2]", {"jsonrpc": "2.0", "id": 7},
                   {"jsonrpc": "2.0", "id": 8, "result": {}}, "   ")
    assert answers[1][0]["result"] == {"got": {"a": 1}}
    assert answers[2][0]["error"] == {"code": INVALID_PARAMS, "message": "no",
                                      "data": {"why": "test"}}
    assert answers[3][0]["error"]["code"] == INTERNAL_ERROR
    assert answers[4][0]["result"] == {"late": True}
    assert answers[5][0]["error"]["code"] == METHOD_NOT_FOUND
    assert answers[6][0]["error"]["code"] == INVALID_PARAMS
    assert answers[7][0]["error"]["code"] == INVALID_REQUEST
    assert [m["error"]["code"] for m in answers[None]] == [PARSE_ERROR, INVALID_REQUEST]
    assert 8 not in answers  # a response is not answered; a notification neither


def test_the_servers_tools_through_the_loop(initialised, cli):
    """initialize, tools/list and a resume call through the same loop the stdio server runs,
    with the server's own handlers on this store."""
    cli.ok("run", "start", "fix the parser")
    service = mcp_server.StoreService(str(initialised / ".agentstate"), "agent")
    answers = _run(mcp_server.handlers(service),
                   _request(1, "initialize", {"protocolVersion": "2025-06-18",
                                              "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "0"}}),
                   _request(2, "tools/list"),
                   _request(3, "tools/call", {"name": "resume", "arguments": {}}),
                   _request(4, "tools/call", {"name": "nope", "arguments": {}}),
                   after=service.shutdown)  # the tool calls answer from its threads
    assert answers[1][0]["result"]["protocolVersion"] == "2025-06-18"
    names = {tool["name"] for tool in answers[2][0]["result"]["tools"]}
    assert {"resume", "context", "recall", "remember"} <= names
    text = answers[3][0]["result"]["content"][0]["text"]
    assert "fix the parser" in text and not text.lstrip().startswith("{")
    assert "error" in answers[4][0] or answers[4][0]["result"].get("isError")
