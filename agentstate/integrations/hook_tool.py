"""A PostToolUse(/Failure) payload read into a `tool` event: its text, source and meta.

The clients report a tool call in several shapes (an exit code field, a text wrapper around
the output, a failure event, nothing at all): what the call did is taken from the first that
says it (tool_outcome.py holds the readings), recorded as far as understood, and never
turned into an `ok` it did not state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentstate.integrations.hook_payload import HookPayload, payload_meta

HEADLINE_COMMAND_CHARS = 200


def tool_record(payload: HookPayload, problems: list[str] | None = None
                ) -> tuple[str, str, dict[str, Any]]:
    """(text, source, meta) of a `tool` event for a PostToolUse(/Failure) payload.

    Recorded as far as the payload is understood: a missing or oddly typed field is noted in
    `problems` (the caller logs it) and never turns the call into an `ok`. How it ended comes
    from tool_outcome: an exit code field, the client's own text, the client's failure
    event, a runner's summary — else `outcome unknown`."""
    from agentstate.integrations import tool_outcome as oc
    from agentstate.store.sources import tool_source
    from agentstate.tools.excerpt import excerpt, output_excerpt, redact

    noted = problems if problems is not None else []
    data = payload.data
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        noted.append("no tool_name")
        name = "tool"
    tool_input = data.get("tool_input")
    error = data.get("error") if isinstance(data.get("error"), str) else None
    # The client's own word: a failure event or an error; Claude Code sends every failed
    # call as PostToolUseFailure, so its PostToolUse is a success report. Codex has no
    # failure event: its PostToolUse says nothing either way.
    client_failed: bool | None = None
    if payload.event == "PostToolUseFailure" or error is not None:
        client_failed = True
    elif payload.agent == "claude-code":
        client_failed = False
    out = _response_output(payload, data.get("tool_response"), noted)
    if out.interrupted:
        client_failed = True
    if tool_input is not None and not isinstance(tool_input, dict):
        noted.append(f"tool_input is a {type(tool_input).__name__}, not an object")
    # Codex's text starts with its header ("… Process exited with code 1 … Output:"),
    # Claude Code's error with "Exit code 1": the code is taken, the wrapper dropped.
    stdout, text_code = oc.strip_client_wrapper(out.stdout)
    stderr, exit_code = out.stderr, out.exit_code
    error_text = ""
    if error:
        error_text, error_code = oc.strip_claude_exit(error)
        text_code = text_code if text_code is not None else error_code
    how = oc.EXIT_CODE
    if exit_code is None and text_code is not None:
        exit_code, how = text_code, oc.CLIENT_TEXT
    if exit_code is not None:
        failed: bool | None = exit_code != 0 or bool(client_failed)
    else:
        failed, how = _judged_outcome("\n".join((stdout, stderr, error_text)), client_failed)
    if error_text.strip() and not (stdout.strip() or stderr.strip()):
        # Claude Code's `error` is the command's whole output, not its stderr.
        excerpt_text = excerpt(error_text)
    else:
        excerpt_text = output_excerpt(stdout, "\n".join(x for x in (stderr, error_text)
                                                        if x.strip()))
    command, file_path = _input_target(tool_input)
    status = oc.Outcome(exit_code, failed, how, "").status
    # The excerpt lives in the meta, as for `exec` and the importers: resume and context show
    # it under the headline (in the text too, it was shown twice).
    text = _tool_headline(name, status, failed, excerpt_text, command, file_path)
    call_id = data.get("tool_use_id") or data.get("call_id")
    meta = payload_meta(payload, tool=name,
                 command=redact(command[:4000]) if command else None,
                 path=redact(file_path[:1000]) if file_path else None,
                 excerpt=excerpt_text or None,
                 tool_use_id=call_id if isinstance(call_id, str) and call_id else None)
    # A command's exit code is kept (None when nothing stated one): resume ranks calls with
    # a non-zero code higher. `failed` is None when the outcome is unknown.
    if failed or command or exit_code is not None:
        meta["exit_code"] = exit_code
    meta["failed"] = failed
    meta["outcome"] = how
    return text, tool_source(str(name)), meta


@dataclass
class _ToolOutput:
    """What a tool_response says, in whichever of the clients' shapes it came."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    interrupted: bool = False  # the response itself says the call failed or was cut short


def _response_output(payload: HookPayload, response: Any, noted: list[str]) -> _ToolOutput:
    out = _ToolOutput()
    if isinstance(response, dict):
        out.stdout = _text(response.get("stdout") or response.get("output")
                           or response.get("aggregated_output"))
        out.stderr = _text(response.get("stderr"))
        for key in ("exit_code", "exitCode", "returncode"):
            if isinstance(response.get(key), int) and not isinstance(response.get(key), bool):
                out.exit_code = response[key]
        out.interrupted = response.get("interrupted") is True or response.get("is_error") is True
        if not (out.stdout or out.stderr) and response and not {
                "stdout", "stderr", "output", "aggregated_output"} & set(response):
            out.stdout = json.dumps(response, ensure_ascii=False)[:4000]
    elif response is not None:
        if not isinstance(response, str | list):
            noted.append(f"tool_response is a {type(response).__name__}")
        out.stdout = _text(response)
    elif payload.event == "PostToolUse":
        noted.append("no tool_response")
    return out


def _judged_outcome(output: str, client_failed: bool | None) -> tuple[bool | None, str]:
    """(failed, how) when no exit code was stated: the client's failure event, else a
    runner's summary in the output, else the client's success report, else unknown."""
    from agentstate.integrations import tool_outcome as oc

    # Only the kept, bounded output is examined (signature_verdict reads the tail).
    verdict = oc.signature_verdict(output, strong_only=client_failed is False)
    if client_failed:
        return True, oc.CLIENT_EVENT
    if verdict is not None:
        return verdict, oc.SIGNATURE
    if client_failed is False:
        return False, oc.CLIENT_EVENT
    return None, oc.UNKNOWN


def _input_target(tool_input: Any) -> tuple[str | None, str | None]:
    """(command, file path) named by a tool_input, when it is an object that names them."""
    if not isinstance(tool_input, dict):
        return None, None
    raw_command = tool_input.get("command") or tool_input.get("cmd")
    if isinstance(raw_command, list):
        raw_command = " ".join(str(part) for part in raw_command)
    raw_path = tool_input.get("file_path") or tool_input.get("path")
    return (raw_command if isinstance(raw_command, str) else None,
            raw_path if isinstance(raw_path, str) else None)


def _tool_headline(name: str, status: str, failed: bool | None, excerpt_text: str,
                   command: str | None, file_path: str | None) -> str:
    from agentstate.tools.excerpt import redact, telling_line

    shown = None
    if command:
        shown = " ".join(redact(command[:4 * HEADLINE_COMMAND_CHARS]).split())
        if len(shown) > HEADLINE_COMMAND_CHARS:
            shown = shown[: HEADLINE_COMMAND_CHARS - 1] + "…"
    what = f"$ {shown}" if shown else redact(file_path[:1000]) if file_path else None
    if failed:
        # The failure first: resume shows the first ~100 characters of a line.
        reason = telling_line(excerpt_text) if excerpt_text else ""
        return f"{name} {status}" + (f": {reason}" if reason else "") + (
            f" ({what})" if what else "")
    return f"{name}: {what} → {status}" if what else f"{name} → {status}"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content blocks: [{"type": "text", "text": ...}]
        parts = [v.get("text") if isinstance(v, dict) else v for v in value]
        return "\n".join(str(p) for p in parts if p)
    return json.dumps(value, ensure_ascii=False)
