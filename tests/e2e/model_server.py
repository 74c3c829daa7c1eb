"""A scripted model server on 127.0.0.1 that real agent clients talk to instead of a model.

It speaks just enough of two wire formats for a client to run a session:

- the Anthropic Messages API (`POST /v1/messages`, streamed as server-sent events:
  message_start, content_block_start/delta/stop for text and tool_use blocks, message_delta,
  message_stop) for Claude Code, reached through `ANTHROPIC_BASE_URL`;
- the OpenAI Responses API (`POST /v1/responses`, streamed: response.created,
  response.output_item.added/done, response.output_text.delta, response.completed) for Codex,
  reached through a `model_providers` entry in its config.toml.

Every request body is recorded, so a test asserts on what the model *received*. Replies come
from a script: a list of steps, each either a final text or one tool call. Requests a client
makes on the side (Claude Code's title or quota probes, which carry no tools) are answered
with a short text and do not consume a step. When the script is used up the server answers
with a final "done" text, so a client never hangs on us.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Text:
    text: str


@dataclass
class ToolCall:
    """A call of one of the tools the client offered. `name` picks the tool: a callable gets
    the request's tool names and returns the one to call (the shell tool's name differs
    between client versions); `arguments` likewise may depend on that name."""

    name: str | Callable[[list[str]], str]
    arguments: dict[str, Any] | Callable[[str], dict[str, Any]]


@dataclass
class ToolSearch:
    """Codex's client-side tool discovery (it offers MCP tools only through it): a
    `tool_search_call`; Codex answers with the matching tools in the next request.

    Codex starts MCP servers beside the first turn, and a search made before a server is up
    does not find its tools: with `until` (a namespace, e.g. `mcp__agentstate`), the search
    is made again, `SEARCH_PAUSE_S` apart, until the answer holds that namespace (at most
    `attempts` times; then the script goes on and the next step says what was offered)."""

    query: str
    until: str | None = None
    attempts: int = 40


# Between two tool searches that wait for an MCP server: the server is another process
# starting (a second or more on a loaded machine), so there is no clock to inject here.
SEARCH_PAUSE_S = 0.5


Step = Text | ToolCall | ToolSearch


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    scripted: bool  # did this request consume a script step?


@dataclass
class ScriptedModel:
    steps: list[Step] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # a step that could not be played
    lock: threading.Lock = field(default_factory=threading.Lock)

    last: Step | None = None

    def next_step(self, names: list[str] | None = None) -> Step:
        """The script's next step; a waiting tool search again while its namespace is not
        among the tools offered (`names`)."""
        with self.lock:
            last = self.last
            if (isinstance(last, ToolSearch) and last.until and last.attempts > 0
                    and not any(n.startswith(last.until + NAMESPACE_SEP) for n in names or [])):
                last.attempts -= 1
                time.sleep(SEARCH_PAUSE_S)
                return last
            self.last = self.steps.pop(0) if self.steps else Text("done")
            return self.last

    def main_requests(self) -> list[Recorded]:
        """The requests of the agent loop (the ones that offered tools), in order."""
        return [r for r in self.requests if r.scripted]


def tool_names_anthropic(body: dict[str, Any]) -> list[str]:
    return [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]


NAMESPACE_SEP = "::"


def tool_names_openai(body: dict[str, Any]) -> list[str]:
    """The tools offered; a namespace's tools (Codex groups each MCP server's tools in one)
    as NAMESPACE::NAME."""
    names = []
    offered = list(body.get("tools") or [])
    for item in body.get("input") or []:  # tools a tool search found are declared there
        if isinstance(item, dict) and item.get("type") == "tool_search_output":
            offered += item.get("tools") or []
    for tool in offered:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            names += [f"{tool.get('name')}{NAMESPACE_SEP}{t.get('name')}"
                      for t in tool.get("tools") or [] if isinstance(t, dict)]
            continue
        names.append(tool.get("name") or (tool.get("function") or {}).get("name")
                     or tool.get("type", ""))
    return names


def _resolve(step: ToolCall, names: list[str]) -> tuple[str, dict[str, Any]]:
    name = step.name(names) if callable(step.name) else step.name
    args = step.arguments(name) if callable(step.arguments) else step.arguments
    return name, args


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


def anthropic_events(step: Step, model: str, names: list[str]) -> list[bytes]:
    msg_id = "msg_" + uuid.uuid4().hex[:24]
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if isinstance(step, ToolSearch):
        raise AssertionError("tool search is a Codex step")
    if isinstance(step, Text):
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": step.text}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "end_turn"
    else:
        name, args = _resolve(step, names)
        out += [
            _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "tool_use",
                                                           "id": "toolu_" + uuid.uuid4().hex[:20],
                                                           "name": name, "input": {}}}),
            _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "input_json_delta",
                                                   "partial_json": json.dumps(args)}}),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ]
        stop = "tool_use"
    out += [
        _sse("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]
    return out


def openai_events(step: Step, names: list[str]) -> list[bytes]:
    resp_id = "resp_" + uuid.uuid4().hex[:24]
    out = [_sse("response.created", {"type": "response.created",
                                     "response": {"id": resp_id, "status": "in_progress"}})]
    if isinstance(step, Text):
        item_id = "msg_" + uuid.uuid4().hex[:24]
        item = {"type": "message", "role": "assistant", "id": item_id, "status": "completed",
                "content": [{"type": "output_text", "text": step.text, "annotations": []}]}
        out += [
            _sse("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0,
                                                "item": {**item, "content": [],
                                                         "status": "in_progress"}}),
            _sse("response.output_text.delta", {"type": "response.output_text.delta",
                                                "item_id": item_id, "output_index": 0,
                                                "content_index": 0, "delta": step.text}),
            _sse("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
        ]
    elif isinstance(step, ToolSearch):
        item = {"type": "tool_search_call", "id": "tsc_" + uuid.uuid4().hex[:20],
                "call_id": "ts_" + uuid.uuid4().hex[:20], "status": "completed",
                "execution": "client", "arguments": {"query": step.query, "limit": 8}}
        out += [
            _sse("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0, "item": item}),
            _sse("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
        ]
    else:
        name, args = _resolve(step, names)
        item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:24],
                "call_id": "call_" + uuid.uuid4().hex[:24], "name": name,
                "arguments": json.dumps(args), "status": "completed"}
        if NAMESPACE_SEP in name:
            item["namespace"], item["name"] = name.split(NAMESPACE_SEP, 1)
        out += [
            _sse("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0, "item": item}),
            _sse("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
        ]
    out.append(_sse("response.completed", {"type": "response.completed", "response": {
        "id": resp_id, "status": "completed",
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": 15}}}))
    return out


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reports
        pass

    def _read_body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding") == "zstd" or not raw:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
        return data if isinstance(data, dict) else {"_json": data}

    def _send_json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, chunks: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:  # model lists and the like: nothing to offer
        self.server.model.requests.append(Recorded(self.path, {}, False))
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"data": [], "models": [], "object": "list"})
        else:
            self._send_json(404, {"error": {"type": "not_found", "message": self.path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._read_body()
        model = self.server.model
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/v1/messages/count_tokens"):
            model.requests.append(Recorded(path, body, False))
            self._send_json(200, {"input_tokens": 100})
            return
        if path.endswith("/v1/messages"):
            names = tool_names_anthropic(body)
            scripted = bool(names)
            model.requests.append(Recorded(path, body, scripted))
            step = model.next_step() if scripted else Text("ok")
            try:
                events = anthropic_events(step, str(body.get("model", "claude")), names)
            except AssertionError as exc:  # say so to the test, and end the session cleanly
                model.errors.append(str(exc))
                step = Text(f"scripted model error: {exc}")
                events = anthropic_events(step, str(body.get("model", "claude")), names)
            if body.get("stream"):
                self._send_stream(events)
            else:
                self._send_json(200, _anthropic_message(step, str(body.get("model")), names))
            return
        if path.endswith("/responses"):
            names = tool_names_openai(body)
            scripted = bool(names)
            model.requests.append(Recorded(path, body, scripted))
            step = model.next_step(names) if scripted else Text("ok")
            try:
                events = openai_events(step, names)
            except AssertionError as exc:
                model.errors.append(str(exc))
                events = openai_events(Text(f"scripted model error: {exc}"), names)
            self._send_stream(events)
            return
        model.requests.append(Recorded(path, body, False))
        self._send_json(404, {"error": {"type": "not_found", "message": path}})


def _anthropic_message(step: Step, model: str, names: list[str]) -> dict[str, Any]:
    if isinstance(step, ToolSearch):
        raise AssertionError("tool search is a Codex step")
    if isinstance(step, Text):
        content: list[dict[str, Any]] = [{"type": "text", "text": step.text}]
        stop = "end_turn"
    else:
        name, args = _resolve(step, names)
        content = [{"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": name,
                    "input": args}]
        stop = "tool_use"
    return {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: ScriptedModel


class ModelServer:
    """Serve a ScriptedModel on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self) -> None:
        self.model = ScriptedModel()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.model = self.model
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *steps: Step) -> None:
        with self.model.lock:
            self.model.steps = list(steps)
            self.model.requests.clear()
            self.model.errors.clear()

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
