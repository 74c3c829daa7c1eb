"""`agentstate import claude-code|codex`: agent transcripts through the one import path.

The fixtures under tests/fixtures/ are hand-written in the shapes those agents write (see
the module docs of agentstate/integrations/claude_code.py and codex.py): a session with a
failing test run, a compaction and a truncated last line; a file of broken lines, unknown
types and non-UTF-8 bytes; an empty file; each agent's file handed to the other's command.
"""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from agentstate.errors import InvalidInput
from agentstate.integrations.claude_code import import_claude_code
from agentstate.integrations.codex import import_codex, parse_output
from agentstate.integrations.transcript_lines import ReadCursor, read_lines
from agentstate.runs.checkpoint import list_checkpoints
from agentstate.runs.importer import RunSource, run_sources
from agentstate.runs.log import get_run, list_events, start_run
from tests.conftest import FIXTURES

CLAUDE = FIXTURES / "claude_code" / "session.jsonl"
BROKEN = FIXTURES / "claude_code" / "broken.jsonl"
EMPTY = FIXTURES / "claude_code" / "empty.jsonl"
CODEX = FIXTURES / "codex" / "rollout.jsonl"
GOAL = "Fix the failing date format test in tests/test_dates.py; dates must stay ISO 8601."


def _events(store, run):
    return list_events(store, run)


def test_claude_code_session_maps_messages_tools_and_compaction(store):
    done = import_claude_code(store, CLAUDE)
    result = done.result
    assert done.counts == {"observations": 4, "tool_events": 2, "checkpoints": 2, "notes": 0}
    assert (result.malformed, result.refused, result.created_run) == (0, 0, True)
    assert result.skipped_reasons == {
        "file-history-snapshot record": 1, "harness text": 1, "harness message": 1,
        "thinking (not stored)": 1, "compaction marker": 1, "incomplete last line": 1,
        "tool call without a result yet": 1,
    }
    run = get_run(store, result.run)
    assert run.goal == GOAL  # the first real request, not the /clear wrapper or the caveat
    events = _events(store, run.ref)
    by_text = {e.text: e for e in events}
    first = by_text[GOAL]
    assert (first.kind, first.source, first.ts) == ("observation", "user",
                                                    "2026-01-14T10:00:05.000000Z")
    assert by_text["I'll run the date tests first."].source == "model"
    sub = by_text["Subagent: found two other callers of format_date in shop/invoice.py."]
    assert sub.meta["sidechain"] is True and "sidechain" not in first.meta
    [pytest_call, read] = [e for e in events if e.kind == "tool"]
    assert pytest_call.text == "Bash: python -m pytest -q tests/test_dates.py → exit 1"
    assert pytest_call.source == "tool:Bash" and pytest_call.ts.startswith("2026-01-14T10:00:11")
    assert pytest_call.meta["error"] is True and pytest_call.meta["exit_code"] == 1
    assert "E       AssertionError: assert '15.01.2026' == '2026-01-15'" in \
        pytest_call.meta["excerpt"]
    assert read.text == "Read: /home/dev/shop/shop/dates.py → ok" and not read.meta["error"]
    assert all("thinking" not in e.text.lower() or e.kind != "note" for e in events)
    # Compaction summaries are real checkpoints (rows + events), at the transcript's time.
    checkpoints = list_checkpoints(store, run.ref)
    assert [c.note for c in checkpoints] == ["Fix the date format test", checkpoints[1].note]
    assert checkpoints[1].note.startswith("This session is being continued")
    compacted = by_text[checkpoints[1].note]
    assert compacted.meta["trigger"] == "auto" and compacted.ts.startswith("2026-01-14T10:05:01")
    assert by_text["Fix the date format test"].ts.startswith("2026-01-14T10:00:00")
    assert run_sources(store, run.ref) == [RunSource(
        agent="claude-code", session="5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70",
        cwd="/home/dev/shop", branch="fix-dates", file=str(CLAUDE.resolve()))]


def test_claude_code_reimport_is_idempotent_and_picks_up_growth(store, tmp_path):
    path = tmp_path / "5b1f.jsonl"
    shutil.copy(CLAUDE, path)
    first = import_claude_code(store, path).result
    read_again = import_claude_code(store, path)
    again = read_again.result
    # Read from where the first import stopped: its complete lines are not read again (the
    # half-written last one is), so nothing is found twice.
    complete_lines = path.read_bytes().count(b"\n")
    assert (again.imported, again.duplicates, again.run) == (0, 0, first.run)
    assert read_again.already_read == complete_lines
    # Read whole (what --strict does), every record is found to be there already.
    whole = import_claude_code(store, path, strict=True)
    assert (whole.result.imported, whole.result.duplicates, whole.already_read) == (
        0, first.imported, 0)
    # The session goes on: the cut line is completed and its tool result arrives.
    text = path.read_text()
    cut = text.rsplit("\n", 1)[0] + "\n"
    result_line = json.dumps({
        "type": "user", "sessionId": "5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70",
        "uuid": "c0000000-0000-4000-8000-00000000000c", "timestamp": "2026-01-14T10:05:20Z",
        "message": {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": "toolu_run_tests_2",
            "content": "....\n5 passed in 0.10s"}]}})
    path.write_text(cut + result_line + "\n")
    grown = import_claude_code(store, path).result
    assert (grown.imported, grown.duplicates, grown.run) == (1, 0, first.run)
    assert grown.kinds == {"tool": 1} and grown.skipped_reasons.get("incomplete last line") \
        is None
    # The same session from another path still lands in its run.
    other = tmp_path / "copy.jsonl"
    shutil.copy(path, other)
    assert import_claude_code(store, other).result.run == first.run


def test_a_re_import_reads_the_whole_file_where_the_saved_read_no_longer_applies(store,
                                                                                 tmp_path):
    """Where an earlier import stopped is kept per run and file, and used only while the
    file still starts with what was read and nothing more is asked of the lines read: a
    rewritten head, another run, or thinking asked for now all mean reading every line."""
    path = tmp_path / "5b1f.jsonl"
    shutil.copy(CLAUDE, path)
    first = import_claude_code(store, path)
    lines = path.read_bytes().count(b"\n")
    assert import_claude_code(store, path).already_read == lines
    # Another run: nothing of this file is in it yet.
    other = start_run(store, "another run", make_current=False)[0]
    into_other = import_claude_code(store, path, run_ref=other.ref)
    assert (into_other.already_read, into_other.result.imported) == (0, first.result.imported)
    # Thinking asked for now: lines read before without it are read again for it.
    thinking = import_claude_code(store, path, include_thinking=True)
    assert thinking.already_read == 0 and thinking.result.kinds == {"note": 1}
    # The file rewritten where the last read stopped: read whole again, its new text found.
    text = path.read_text()
    complete, last = text[:text.rindex("\n") + 1], text[text.rindex("\n") + 1:]
    head, final = complete[:-1].rsplit("\n", 1)
    record = json.loads(final)
    assert record["type"] == "assistant"
    record["uuid"] = "rewritten-" + record["uuid"]
    path.write_text(head + "\n" + json.dumps(record) + "\n" + last)
    rewritten = import_claude_code(store, path)
    assert rewritten.already_read == 0 and rewritten.result.imported >= 1
    assert rewritten.result.duplicates == first.result.imported - rewritten.result.imported


def test_include_thinking_stores_notes(store):
    result = import_claude_code(store, CLAUDE, include_thinking=True).result
    [note] = list_events(store, result.run, kind="note")
    assert note.text == "The user wants the test fixed. Run it first."
    assert note.source == "model" and note.meta["thinking"] is True


def test_codex_rollout_maps_messages_calls_and_compaction(store):
    done = import_codex(store, CODEX)
    result = done.result
    assert done.counts == {"observations": 2, "tool_events": 3, "checkpoints": 1, "notes": 0}
    assert (done.session, done.cwd, done.branch) == (
        "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "/home/dev/api", "retry-backoff")
    assert result.skipped_reasons["event message"] == 6  # copies of response items
    assert result.skipped_reasons["reasoning (not stored)"] == 1
    assert result.skipped_reasons["future_record_type record"] == 1
    assert result.skipped_reasons["incomplete last line"] == 1
    assert result.skipped_reasons["tool call without a result yet"] == 1
    assert result.malformed == 0
    run = get_run(store, result.run)
    assert run.goal == "Add exponential backoff to the HTTP client retries"
    tools = list_events(store, run.ref, kind="tool")
    assert [t.text for t in tools] == [
        "shell: pytest -q tests/test_retry.py → exit 1",
        "apply_patch: update api/retry.py → exit 0",
        "exec_command: pytest -q → exit 0",
    ]
    assert "E       assert [1, 1, 1] == [1, 2, 4]" in tools[0].meta["excerpt"]
    assert tools[0].meta["error"] is True and tools[2].meta["error"] is False
    [checkpoint] = list_checkpoints(store, run.ref)
    assert checkpoint.note.startswith("Backoff work so far")
    assert checkpoint.created.startswith("2026-01-12T08:10:00")
    again = import_codex(store, CODEX)
    assert (again.result.imported, again.result.duplicates) == (0, 0)
    assert again.already_read == CODEX.read_bytes().count(b"\n")
    whole = import_codex(store, CODEX, strict=False, run_ref=result.run, include_reasoning=False)
    assert (whole.result.imported, whole.already_read) == (0, again.already_read)
    with_reasoning = import_codex(store, CODEX, goal="again, with reasoning",
                                  include_reasoning=True).result
    [note] = list_events(store, with_reasoning.run, kind="note")
    assert note.text == "**Inspecting the retry loop**"


@pytest.mark.parametrize("value, expected", [
    ('{"output": "boom\\n", "metadata": {"exit_code": 2}}', ("boom\n", 2, True)),
    ("Exit code: 0\nWall time: 1 seconds\nOutput:\nok", (None, 0, False)),
    ("Process exited with code 3\nOutput:\nno", (None, 3, True)),
    ({"content": "denied", "success": False}, ("denied", None, True)),
    ([{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}],
     ("a\nb", None, False)),
    ("plain text", ("plain text", None, False)),
])
def test_codex_output_shapes(value, expected):
    text, code, failed = parse_output(value)
    assert (code, failed) == expected[1:]
    if expected[0] is not None:
        assert text == expected[0]


def test_broken_lines_are_counted_not_fatal(cli, initialised):
    data = cli.json("import", "claude-code", str(BROKEN))["files"][0]
    assert (data["observations"], data["tool_events"], data["malformed"], data["refused"]) \
        == (2, 1, 5, 1)
    assert data["skipped_reasons"] == {"future-record record": 1, "image block": 1}
    events = cli.json("events", "--run", data["run"])
    texts = [e["text"] for e in events]
    # Undecodable bytes follow the one input rule: that line is rejected, not altered.
    assert not any("latin-1 bytes" in t for t in texts)
    assert not any("AKIA" in t for t in texts)  # the line with a secret is refused
    assert "tool → ok" in texts  # a result whose call is not in the file
    # Unreadable timestamps fall back to the import time instead of losing the line.
    assert any(t == "Done tidying." for t in texts)
    strict = cli("import", "claude-code", str(BROKEN), "--strict", "--goal", "strict try")
    assert strict.exit_code == 1 and "line 2" in strict.stderr
    assert "strict try" not in cli("run", "list").stdout


def test_wrong_format_names_the_right_command(cli, initialised, store):
    wrong = cli("import", "claude-code", str(CODEX))
    assert wrong.exit_code == 1 and "agentstate import codex" in wrong.stderr
    wrong = cli("import", "codex", str(CLAUDE), "--json")
    assert wrong.exit_code == 1
    assert "agentstate import claude-code" in wrong.json()["error"]["message"]
    generic = cli("import", "jsonl", str(CLAUDE))
    assert generic.exit_code == 1 and "Claude Code session transcript" in generic.stderr
    assert "agentstate import claude-code" in generic.stderr
    with pytest.raises(InvalidInput, match="agentstate import codex"):
        import_claude_code(store, CODEX)


def test_nothing_imported_is_an_error_but_duplicates_only_is_not(cli, initialised, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('not json\n{"type": "assistant", "sessionId": "s1", "uuid": "u"}\n')
    result = cli("import", "claude-code", str(bad))
    assert result.exit_code == 1 and "nothing imported" in result.stderr
    generic = tmp_path / "generic.jsonl"
    generic.write_text('{"kind": "bogus", "text": "x"}\nnot json\n')
    result = cli("import", "jsonl", str(generic), "--json")
    assert result.exit_code == 1 and result.json()["error"]["details"]["malformed"] == 2
    cli.ok("import", "claude-code", str(CLAUDE))
    again = cli.json("import", "claude-code", str(CLAUDE))["total"]
    assert (again["imported"], again["duplicates"], again["already_read"]) == (
        0, 0, CLAUDE.read_bytes().count(b"\n"))
    whole = cli.json("import", "claude-code", str(CLAUDE), "--strict")["total"]
    assert (whole["imported"], whole["duplicates"]) == (0, 8)
    empty = cli("import", "claude-code", str(EMPTY))
    assert empty.exit_code == 0 and "nothing to import" in empty.stdout


def test_huge_tool_output_keeps_the_failure_and_no_secret(store, tmp_path):
    noise = "\n".join(f"tests/test_{n}.py::test_case PASSED" for n in range(20_000))
    output = (noise + "\nE       AssertionError: totals differ: 41 != 42\n" + noise
              + "\nexport API_KEY=abcd1234secretvalue\n1 failed, 40000 passed in 9.1s")
    lines = [
        {"type": "user", "sessionId": "huge", "uuid": "u1", "timestamp": "2026-01-14T10:00:00Z",
         "message": {"role": "user", "content": "run the whole suite"}},
        {"type": "assistant", "sessionId": "huge", "uuid": "u2",
         "message": {"role": "assistant", "content": [
             {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest"}}]}},
        {"type": "user", "sessionId": "huge", "uuid": "u3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": output, "is_error": True}]}},
    ]
    path = tmp_path / "huge.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = import_claude_code(store, path).result
    [tool] = list_events(store, result.run, kind="tool")
    excerpt = tool.meta["excerpt"]
    assert len(excerpt) <= 3100 and tool.meta["output_chars"] == len(output)
    assert "AssertionError: totals differ: 41 != 42" in excerpt
    assert excerpt.endswith("1 failed, 40000 passed in 9.1s")
    assert "abcd1234secretvalue" not in excerpt and "export API_KEY=***" in excerpt


def test_folder_import_one_run_per_session(cli, initialised, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(CLAUDE, folder / "5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70.jsonl")
    shutil.copy(BROKEN, folder / "9d2c1b7a.jsonl")
    # A subagent transcript of the first session, named so it sorts first.
    (folder / "agent-0a1b.jsonl").write_text(json.dumps({
        "type": "assistant", "isSidechain": True, "uuid": "s1",
        "sessionId": "5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70", "timestamp": "2026-01-14T10:00:30Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "subagent"}]},
    }) + "\n")
    # The fixtures were recorded in another repository: --all-projects takes them.
    data = cli.json("import", "claude-code", str(folder), "--all-projects")
    runs = {f["file"].rsplit("/", 1)[1]: f["run"] for f in data["files"]}
    assert len(set(runs.values())) == 2
    assert runs["agent-0a1b.jsonl"] == runs["5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70.jsonl"]
    assert [f["file"].rsplit("/", 1)[1] for f in data["files"]][-1] == "agent-0a1b.jsonl"
    assert cli.json("run", "show", runs["agent-0a1b.jsonl"])["run"]["goal"] == GOAL
    assert data["total"]["observations"] == 4 + 2 + 1  # BROKEN: one line is not UTF-8
    assert cli("import", "claude-code", str(folder), "--goal", "x").exit_code == 2


def test_import_into_a_named_run_binds_the_session(store):
    run, _ = start_run(store, "my own run")
    first = import_claude_code(store, CLAUDE, run_ref=run.ref).result
    assert first.run == run.ref and not first.created_run
    assert import_claude_code(store, CLAUDE).result.run == run.ref  # found by session id


def test_every_line_in_the_import_key_survives_a_plain_reader(store, repo):
    """Nothing in the imported rows holds the tool call ids (mixed-case ids read as secrets)."""
    result = import_claude_code(store, CLAUDE).result
    db = sqlite3.connect(repo / ".agentstate" / "state.db")
    rows = db.execute("SELECT text, meta FROM events WHERE run = "
                      "(SELECT row FROM runs WHERE id = ?)",
                      (result.run.split(":")[1],)).fetchall()
    assert rows and not any("toolu_" in text + meta for text, meta in rows)


def _grow(path, *lines: dict) -> None:
    with path.open("a") as handle:
        for line in lines:
            handle.write(json.dumps(line) + "\n")


def test_a_cursor_reads_only_what_a_claude_transcript_gained(store, tmp_path):
    path = tmp_path / "5b1f.jsonl"
    text = CLAUDE.read_text()
    path.write_text(text.rsplit("\n", 1)[0] + "\n")  # the whole lines; a call awaits its result
    cursor = ReadCursor()
    first = import_claude_code(store, path, cursor=cursor).result
    assert cursor.offset == path.stat().st_size and cursor.state["pending"]
    same = import_claude_code(store, path, cursor=cursor).result
    assert (same.imported, same.duplicates) == (0, 0)  # nothing re-read, so nothing to dedupe
    _grow(path, {"type": "user", "sessionId": "5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70",
                 "uuid": "c0000000-0000-4000-8000-00000000000c",
                 "timestamp": "2026-01-14T10:05:20Z",
                 "message": {"role": "user", "content": [{
                     "type": "tool_result", "tool_use_id": "toolu_run_tests_2",
                     "content": "....\n5 passed in 0.10s"}]}})
    grown = import_claude_code(store, path, cursor=cursor).result
    assert (grown.imported, grown.duplicates, grown.run) == (1, 0, first.run)
    # The call was read before the cursor; its name and input came back from the cursor.
    tool = [e for e in _events(store, first.run) if e.kind == "tool"][-1]
    assert tool.text.startswith("Bash: ") and "pytest" in tool.text
    # Every identity matches what a whole-file read makes: nothing new on a full re-import.
    full = import_claude_code(store, path).result
    assert (full.imported, full.duplicates) == (0, first.imported + 1)


def test_a_cursor_keeps_codex_line_numbers_absolute(store, tmp_path):
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(CODEX.read_text().splitlines(keepends=True)[:22]))
    cursor = ReadCursor()
    first = import_codex(store, path, cursor=cursor).result
    _grow(path,
          {"timestamp": "2026-01-12T08:10:09.000Z", "type": "response_item",
           "payload": {"type": "function_call_output", "call_id": "call_git_1",
                       "output": "Exit code: 0\nOutput:\nnothing to commit\n"}},
          {"timestamp": "2026-01-12T08:10:10.000Z", "type": "response_item",
           "payload": {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "Now open a PR."}]}})
    grown = import_codex(store, path, cursor=cursor).result
    assert (grown.imported, grown.duplicates) == (2, 0)
    tool = [e for e in _events(store, first.run) if e.kind == "tool"][-1]
    assert tool.text.startswith("shell: git status")
    full = import_codex(store, path).result
    assert (full.imported, full.duplicates) == (0, first.imported + 2)


def test_a_cursor_that_no_longer_fits_the_file_is_not_used(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n')
    cursor = ReadCursor()
    assert [n for n, *_ in read_lines(path, cursor)] == [1, 2]
    assert cursor.fits(path)
    path.write_text('{"a": 1}\n{"c": 3}\n')  # same size, different ending: rewritten
    assert not cursor.fits(path)
    path.write_text('{"a": 1}\n')  # shorter: truncated
    assert not cursor.fits(path)
    assert ReadCursor.from_dict({"offset": "x"}) == ReadCursor()


@pytest.mark.parametrize("importer,fixture,lines", [
    (import_claude_code, CLAUDE, None), (import_codex, CODEX, 22)])
def test_a_cursor_keeps_the_session_head_so_later_catch_ups_read_only_new_lines(
        store, tmp_path, monkeypatch, importer, fixture, lines):
    """Once the head (session, cwd, goal; Codex: whether messages come as response items)
    is complete, later reads with the cursor neither sniff the format nor read the first
    lines again, and import exactly what a whole-file read would."""
    import agentstate.integrations.claude_code as claude_code
    import agentstate.integrations.codex as codex
    import agentstate.integrations.transcript_lines as transcript_lines
    import agentstate.integrations.transcripts as transcripts

    path = tmp_path / fixture.name
    whole = fixture.read_text().splitlines(keepends=True)
    path.write_text("".join(whole[:lines] if lines else whole[:-1]))
    cursor = ReadCursor()
    first = importer(store, path, cursor=cursor)
    head = cursor.state["head"]
    assert (head["session"], head["cwd"]) == (first.session, first.cwd) and head["goal"]

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("the head was read again")

    for module in (claude_code, codex, transcripts):
        monkeypatch.setattr(module, "read_session", must_not_run, raising=False)
    monkeypatch.setattr(transcript_lines, "sniff", must_not_run)
    _grow(path, {"type": "user", "sessionId": first.session, "uuid": "u-late",
                 "timestamp": "2026-01-14T10:09:00Z", "message": {
                     "role": "user", "content": "One more thing: keep the changelog."}}
          if importer is import_claude_code else
          {"timestamp": "2026-01-12T08:10:10.000Z", "type": "response_item",
           "payload": {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "Keep the changelog."}]}})
    grown = importer(store, path, cursor=cursor)
    assert (grown.session, grown.cwd, grown.result.run) == (first.session, first.cwd,
                                                            first.result.run)
    assert (grown.result.imported, grown.result.duplicates) == (1, 0)
    monkeypatch.undo()
    full = importer(store, path).result  # a whole-file read finds nothing it did not store
    assert (full.imported, full.duplicates) == (0, first.result.imported + 1)


def test_a_head_without_its_goal_yet_is_read_again(store, tmp_path):
    """A session whose first request has not been written yet (SessionStart, a resumed
    session's preamble) keeps no head: the next read finds the goal."""
    path = tmp_path / "s.jsonl"
    base = {"sessionId": "s-1", "cwd": "/repo", "timestamp": "2026-01-14T10:00:00Z"}
    path.write_text(json.dumps({**base, "type": "system", "uuid": "x0",
                                "content": "session started"}) + "\n")
    cursor = ReadCursor()
    import_claude_code(store, path, cursor=cursor)
    assert "head" not in cursor.state
    _grow(path, {**base, "type": "user", "uuid": "x1",
                 "message": {"role": "user", "content": "Make the parser strict"}})
    later = import_claude_code(store, path, cursor=cursor)
    assert cursor.state["head"]["goal"] == "Make the parser strict"
    assert later.session == "s-1"


def test_a_cursor_stops_before_a_half_written_last_line(tmp_path):
    """The agent is still writing the last line: it is reported `partial`, the cursor stays
    before it, and the next read (once the line is whole) reads it, never skipping it."""
    path = tmp_path / "t.jsonl"
    whole = '{"a": 1}\n'
    path.write_text(whole + '{"b": 2, "te')
    cursor = ReadCursor()
    assert [(n, error) for n, _, error in read_lines(path, cursor)] == [(1, None), (2, "partial")]
    assert (cursor.offset, cursor.line) == (len(whole), 1)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('xt": "done"}\n')
    assert [(n, obj) for n, obj, _ in read_lines(path, cursor)] == [
        (2, {"b": 2, "text": "done"})]
    assert cursor.offset == path.stat().st_size and cursor.line == 2


def test_a_claude_record_cut_mid_line_is_imported_when_it_is_whole(store, tmp_path):
    path = tmp_path / "5b1f.jsonl"
    path.write_text(CLAUDE.read_text().rsplit("\n", 1)[0] + "\n")
    cursor = ReadCursor()
    first = import_claude_code(store, path, cursor=cursor).result
    line = json.dumps({"type": "user", "sessionId": "5b1f4e2a-7c3d-4e8f-9a10-2b3c4d5e6f70",
                       "uuid": "c0000000-0000-4000-8000-00000000000d",
                       "timestamp": "2026-01-14T10:05:30Z",
                       "message": {"role": "user", "content": "and the flaky one too"}})
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line[:40])
    assert import_claude_code(store, path, cursor=cursor).result.imported == 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line[40:] + "\n")
    grown = import_claude_code(store, path, cursor=cursor).result
    assert (grown.imported, grown.run) == (1, first.run)
    assert [e.text for e in _events(store, first.run)][-1] == "and the flaky one too"
