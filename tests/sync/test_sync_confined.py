"""Issue 21, shared files are confined and bounded: a teammate's `memories.jsonl ->
/dev/zero` is refused without being read, a symlinked `shared/` never makes export write
outside the repository, and a memory text over `[memory] max_chars` is not imported (as
`remember` refuses it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.sync.test_sync_bad_input import _fact, _memories, _shared, _write


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_shared_file_linked_to_a_device_is_refused_unread(initialised):
    folder = _shared(initialised)
    (folder / "memories.jsonl").symlink_to("/dev/zero")
    # A real subprocess under a memory cap: reading /dev/zero without bound would blow it.
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30));"
            "from agentstate.entry import main; sys.argv = ['agentstate', 'sync', '--json'];"
            "main()")
    done = subprocess.run([sys.executable, "-c", code], cwd=initialised, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "symbolic link" in done.stdout and "Traceback" not in done.stderr


def test_a_fifo_is_refused_without_blocking(initialised):
    folder = _shared(initialised)
    os.mkfifo(folder / "evidence.jsonl")
    # A subprocess with a timeout: opening a FIFO to read it blocks until a writer comes.
    done = subprocess.run([sys.executable, "-m", "agentstate", "sync", "--import-only"],
                          cwd=initialised, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "not a regular file" in done.stderr


def test_a_symlinked_shared_folder_is_never_written_through(cli, initialised, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (initialised / ".agentstate" / "shared").symlink_to(outside, target_is_directory=True)
    cli.ok("remember", "the api gateway runs on port 8080", "--kind", "fact")
    result = cli("sync")
    assert result.exit_code == 1
    assert "symbolic link" in result.stderr
    assert list(outside.iterdir()) == []


def test_a_memory_over_max_chars_is_not_imported(cli, initialised):
    folder = _shared(initialised)
    huge = _fact("the gateway " + "x" * 200_000)
    small = _fact("the api gateway runs on port 8080")
    _write(folder, "memories.jsonl", [huge.line, small.line])
    result = cli.json("sync", "--import-only")
    assert result["imported"] == 1
    [skipped] = result["skipped_items"]
    assert "max_chars" in skipped["reason"]
    assert _memories(cli) == ["the api gateway runs on port 8080"]


def test_a_5mb_memory_line_fails_the_file_and_nothing_is_stored(cli, initialised):
    folder = _shared(initialised)
    _write(folder, "memories.jsonl", [_fact("the gateway " + "x" * 5_000_000).line,
                                      _fact("the api gateway runs on port 8080").line])
    result = cli("sync", "--import-only")
    assert result.exit_code == 1 and "the limit is" in result.stderr
    assert _memories(cli) == []
