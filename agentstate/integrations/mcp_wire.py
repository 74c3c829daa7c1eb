"""The MCP stdio transport: newline-delimited JSON-RPC 2.0 on stdin/stdout, for the protocol
subset `agentstate mcp` serves (the initialize handshake, ping, tools, resources).

Why our own and not the MCP SDK: importing any part of the SDK (`mcp.server.lowlevel`
included) runs the `mcp` package's `__init__`, which builds every pydantic model of every
protocol revision and the client with its HTTP stack: ~1.6 s on this machine
(`python -X importtime -c "import mcp.server.lowlevel"`), 97% of the server's start-up
against the 0.4 s target (issue 24). What the server needs of the protocol is small and
fixed: a handshake, two lists, two calls. The SDK stays the test oracle: the tests in
tests/integrations drive this server with the SDK's own client, and tests/e2e with the
real Claude Code and Codex.

What is served, and how:
- One JSON object per line each way, UTF-8. A line that is not JSON is a parse error
  (-32700, id null); a message without a method is a response to us (we send no requests)
  and is ignored; a batch (a JSON array, allowed by protocol 2025-03-26 only) is refused
  with -32600 rather than half served.
- `initialize` answers the client's protocol version when it is one of the handshake
  revisions below, else the newest of them (the client then decides whether it can go on).
- Requests are answered in the order their work finishes: the handler decides whether the
  work runs inline (lists, ping) or later (`defer`: tool calls and resource reads go to the
  store's worker thread, so a ping is answered while a pack is being built). Writes to
  stdout hold one lock, so two answers never interleave.
- Notifications (`notifications/initialized`, `notifications/cancelled`, …) are accepted
  and need nothing: a call cannot be stopped half way through a store write, and its
  answer, if the client has given up on it, is ignored by the client.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

# The revisions of the initialize handshake, oldest first (the stateless revisions after
# them use a per-request envelope this server does not speak).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class RpcError(Exception):
    """A JSON-RPC error answer (code, message and optional data)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


Reply = Callable[[dict[str, Any]], None]  # the result of a deferred request
Fail = Callable[[RpcError], None]


@dataclass
class Deferred:
    """A handler's way of saying "the answer comes later": `start(reply, fail)` is called
    once, and calls one of them (from any thread) when the work is done."""

    start: Callable[[Reply, Fail], None]


Handler = Callable[[dict[str, Any]], "dict[str, Any] | Deferred"]


def negotiate(requested: Any) -> str:
    return requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]


class Connection:
    """One client on a pair of byte streams."""

    def __init__(self, handlers: dict[str, Handler], reader: BinaryIO, writer: BinaryIO
                 ) -> None:
        self.handlers = handlers
        self.reader, self.writer = reader, writer
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        # ensure_ascii=False: a pack in another script is sent as itself, not six bytes a
        # character; JSON's own escapes keep a newline inside a string off the wire.
        try:
            data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate in a stored text: escape everything
            data = json.dumps(message, separators=(",", ":")).encode()
        with self._lock:
            try:
                self.writer.write(data + b"\n")
                self.writer.flush()
            except (BrokenPipeError, ValueError):  # the client went away (or closed stdout)
                pass

    def answer(self, ident: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": ident, "result": result})

    def error(self, ident: Any, failure: RpcError) -> None:
        body: dict[str, Any] = {"code": failure.code, "message": failure.message}
        if failure.data is not None:
            body["data"] = failure.data
        self.send({"jsonrpc": "2.0", "id": ident, "error": body})

    def serve(self) -> None:
        """Read messages until the client closes stdin."""
        for raw in self.reader:
            if raw.strip():
                self.receive(raw)

    def receive(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
        except ValueError:  # not JSON, or not UTF-8
            self.error(None, RpcError(PARSE_ERROR, "parse error: a line that is not JSON"))
            return
        if isinstance(message, list):
            self.error(None, RpcError(INVALID_REQUEST, "batches are not supported"))
            return
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and "method" not in message and (
                    "result" in message or "error" in message):
                return  # a response: this server sends no requests, so nothing awaits it
            ident = message.get("id") if isinstance(message, dict) else None
            self.error(ident, RpcError(INVALID_REQUEST, "not a JSON-RPC request"))
            return
        self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        method, notification = message["method"], "id" not in message
        ident = message.get("id")
        params = message.get("params")
        if notification:
            return  # see the module's docstring: none needs an action
        handler = self.handlers.get(method)
        if handler is None:
            self.error(ident, RpcError(METHOD_NOT_FOUND, f"method not found: {method}"))
            return
        if params is None:
            params = {}
        if not isinstance(params, dict):
            self.error(ident, RpcError(INVALID_PARAMS, "params must be an object"))
            return
        try:
            outcome = handler(params)
        except RpcError as failure:
            self.error(ident, failure)
            return
        except Exception as exc:  # noqa: BLE001 - a bug answers this request, not the process
            from agentstate.error_boundary import classify

            self.error(ident, RpcError(INTERNAL_ERROR, classify(exc, ["mcp", method]).error
                                       .message))
            return
        if isinstance(outcome, Deferred):
            outcome.start(lambda result: self.answer(ident, result),
                          lambda failure: self.error(ident, failure))
        else:
            self.answer(ident, outcome)


def serve_stdio(handlers: dict[str, Handler]) -> None:
    Connection(handlers, sys.stdin.buffer, sys.stdout.buffer).serve()
