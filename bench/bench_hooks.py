"""Latency (p50) of `agentstate hook claude-code` per event, as the agent runs it: a fresh
process with the payload on stdin, next to `python -c pass` and `agentstate --help` in the
same run. The write hooks (prompt, tool call, checkpoint) should stay under TARGET_S: the
agent waits for each one.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPEATS = 15
TARGET_S = 0.15
AGENTSTATE = str(Path(sys.executable).with_name("agentstate"))


def payloads(cwd: Path) -> dict[str, dict]:
    common = {"session_id": "bench-session", "transcript_path": None, "cwd": str(cwd)}
    return {
        "UserPromptSubmit": {**common, "hook_event_name": "UserPromptSubmit",
                             "prompt": "Make the parser accept ISO week dates"},
        "PostToolUse (Bash)": {**common, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                               "tool_input": {"command": "pytest -q"},
                               "tool_response": {"stdout": "." * 2000 + "\n3 passed\n",
                                                 "stderr": ""}},
        "PostToolUseFailure (Bash)": {**common, "hook_event_name": "PostToolUseFailure",
                                      "tool_name": "Bash", "tool_input": {"command": "pytest"},
                                      "error": "Exit code 1\nFAILED t.py::x - AssertionError"},
        "Stop (checkpoint)": {**common, "hook_event_name": "Stop", "stop_hook_active": False},
        "SessionStart (resume pack)": {**common, "hook_event_name": "SessionStart",
                                       "source": "startup"},
    }


def p50(argv: list[str], cwd: Path, stdin: str | None = None, before=None) -> float:
    times = []
    for _ in range(REPEATS):
        if before:
            before()
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0 or proc.stderr:
            raise SystemExit(f"{argv} failed: {proc.stderr[:300]}")
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        root = Path(tmp)
        env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
                   GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
        (root / "app.py").write_text("print('hi')\n")
        subprocess.run(["git", "add", "."], cwd=root, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", "one"], cwd=root, check=True, env=env)
        subprocess.run([AGENTSTATE, "init"], cwd=root, check=True, capture_output=True)
        hook = [AGENTSTATE, "hook", "claude-code"]
        cases = payloads(root)
        first = json.dumps(cases["UserPromptSubmit"])
        subprocess.run(hook, cwd=root, input=first, text=True, check=True)  # starts the run
        results = {"python -c pass": p50([sys.executable, "-c", "pass"], root),
                   "agentstate --help": p50([AGENTSTATE, "--help"], root)}
        touch = root / "app.py"

        def new_event() -> None:  # so each Stop has something new to checkpoint
            touch.write_text(touch.read_text() + "#\n")
            subprocess.run([AGENTSTATE, "log", "note", "bench"], cwd=root, check=True,
                           capture_output=True)

        for name, data in cases.items():
            before = new_event if name.startswith("Stop") else None
            results[name] = p50(hook, root, json.dumps(data), before)
    base = results["python -c pass"]
    print(f"{'hook (claude-code)':32} {'p50 s':>7} {'x python':>9}")
    for name, seconds in results.items():
        print(f"{name:32} {seconds:7.3f} {seconds / base:9.1f}")
    writes = [v for k, v in results.items() if k.split()[0] in
              ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop")]
    worst = max(writes)
    verdict = "meets" if worst < TARGET_S else "MISSES"
    print(f"slowest write hook p50: {worst:.3f} s ({verdict} the {TARGET_S} s target)")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
