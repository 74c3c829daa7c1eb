"""A secret in any field a tool event stores — the excerpt of its output, the command, the path,
another meta field — reaches neither the store nor its full-text indexes, through a transcript
import and through the PostToolUse hook.

The meta is scanned without the values the scanner already found clean (the excerpt, command
and path come out of the redaction marked `Scanned`): these tests are what shows that nothing
unscanned is stored on the way.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from agentstate.safety import Scanned, refuse_secrets_in_meta
from tests.security.test_security_secrets import assert_nowhere

_GITHUB = "ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"
_SLACK = "xoxb-" + "2048-1024-Qm7Xk2Lp9Vr4"
_AWS = "AKIA" + "QYLPMN5HZ3XWTR2K"
_STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
_HF = "hf_" + "Zk1Po3Bm5Cv7Dn9Ex1Fy3Gz5Ha7Ib9Jc"
_NEEDLES = [_GITHUB, _SLACK, _AWS, _STRIPE, _HF]
_CLEAN = "harmlessmarkerfortoolevents"  # stored the same way: the checks can see a value


def _long_output(secret: str) -> str:
    """An output longer than an excerpt, the secret on the error line the excerpt keeps."""
    lines = [f"tests/test_module_{n}.py::test_case_{n} PASSED" for n in range(200)]
    return "\n".join([*lines, f"E   ConnectionError: login with {secret} refused",
                      "==== 1 failed, 200 passed ===="])


def _fts_hits(repo: Path, needle: str) -> int:
    """Events the full-text index finds by any long word of `needle` (the raw-byte check can
    miss a word the index stores prefix-compressed)."""
    conn = sqlite3.connect(repo / ".agentstate" / "state.db")
    try:
        return sum(conn.execute("SELECT count(*) FROM events_fts WHERE events_fts MATCH ?",
                                (f'"{word.lower()}"',)).fetchone()[0]
                   for word in re.findall(r"[A-Za-z0-9]{8,}", needle))
    finally:
        conn.close()


def _transcript(path: Path) -> None:
    base = {"sessionId": "fields-session", "cwd": "/repo", "timestamp": "2026-01-14T10:00:00Z"}
    calls = [  # (tool, input, output, uuid of the result line)
        ("Bash", {"command": f"deploy --token {_GITHUB} --env prod"}, "deployed", "r1"),
        ("Read", {"file_path": f"/srv/{_SLACK}/config.yaml"}, "name: api", "r2"),
        ("Bash", {"command": "pytest -q"}, _long_output(_AWS), "r3"),
        ("Bash", {"command": "env"}, f"STRIPE={_STRIPE}", "r4"),
        ("Bash", {"command": "ls"}, "README.md", f"r5-{_HF}"),  # a meta field (uuid)
        ("Bash", {"command": f"echo {_CLEAN}"}, _CLEAN, "r6"),
    ]
    lines = [{**base, "type": "user", "uuid": "u0",
              "message": {"role": "user", "content": "Deploy the service and run the tests"}}]
    for n, (tool, tool_input, output, uuid) in enumerate(calls):
        lines.append({**base, "type": "assistant", "uuid": f"a{n}", "message": {
            "role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{n}", "name": tool, "input": tool_input}]}})
        lines.append({**base, "type": "user", "uuid": uuid, "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                         "content": output}]}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_transcript_import_stores_no_secret_of_any_tool_field(cli, initialised, tmp_path):
    path = tmp_path / "session.jsonl"
    _transcript(path)
    data = cli.json("import", "claude-code", str(path))["total"]
    # Every call is kept but the one whose meta holds a secret of its own (refused whole).
    assert data["tool_events"] == 5 and data["refused"] == 1, data
    assert_nowhere(initialised, _NEEDLES)
    assert all(_fts_hits(initialised, needle) == 0 for needle in _NEEDLES)
    # The checks can fail: the clean marker, stored the same way, is seen by both.
    with pytest.raises(AssertionError):
        assert_nowhere(initialised, [_CLEAN])
    assert _fts_hits(initialised, _CLEAN) > 0


@pytest.mark.parametrize("field", ["command", "path", "excerpt", "session"])
def test_the_post_tool_use_hook_stores_no_secret_of_any_tool_field(cli, initialised, field):
    secret = {"command": _GITHUB, "path": _SLACK, "excerpt": _AWS, "session": _HF}[field]
    payload = {"session_id": "s1", "cwd": str(initialised), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "make deploy"},
               "tool_response": {"stdout": f"done {_CLEAN}", "stderr": ""},
               "tool_use_id": "t1"}
    if field == "command":
        payload["tool_input"] = {"command": f"deploy --token {secret} --env prod"}
    elif field == "path":
        payload["tool_name"] = "Read"
        payload["tool_input"] = {"file_path": f"/srv/{secret}/config.yaml"}
    elif field == "excerpt":
        payload["tool_response"] = {"stdout": _long_output(secret), "stderr": ""}
    else:
        payload["session_id"] = f"s-{secret}"
    assert cli("hook", "claude-code", input=json.dumps(payload)).exit_code == 0
    assert_nowhere(initialised, [secret])
    assert _fts_hits(initialised, secret) == 0


def test_a_meta_is_scanned_but_for_its_scanned_values():
    clean = Scanned("collected 3 items\n3 passed")
    refuse_secrets_in_meta({"excerpt": clean}, json.dumps({"excerpt": clean}))
    # Plain strings are scanned, whatever their key; so are the keys of scanned values.
    for meta in ({"excerpt": f"token {_GITHUB}"}, {"excerpt": clean, "other": _GITHUB},
                 {"excerpt": clean, f"k{_GITHUB}": 1}):
        with pytest.raises(Exception, match="secret"):
            refuse_secrets_in_meta(meta, json.dumps(meta, sort_keys=True))
    # JSON read back gives plain strings: nothing read can pass for scanned.
    assert type(json.loads(json.dumps({"e": clean}))["e"]) is str


def test_a_tool_events_excerpt_command_and_path_come_out_scanned():
    from agentstate.integrations.transcripts import tool_record

    data = tool_record("claude-code", "Bash", {"command": "pytest -q"}, _long_output("x"),
                       error=True, exit_code=None, ts=None, identity="t1")
    assert isinstance(data["meta"]["excerpt"], Scanned)
