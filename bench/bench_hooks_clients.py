"""Each hook event's cost as the real clients pay it: Claude Code and Codex CLI (the versions
pinned in tests/e2e/clients.py) run short sessions against the scripted model of the e2e
tests, with agentstate's hooks installed behind a pass-through timing shim; each hook call is
timed as a whole process (start to exit, as the client waits for it). Measured on an empty
store and on one holding STORE_EVENTS events, so a cost that grows with the store shows as a
ratio. The clients must already be installed in the e2e cache (`pytest -m e2e` once);
otherwise this says so and measures nothing.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from agentstate.integrations.hook_server import stop_helpers_in
from bench.data import SMOKE, scaled

if TYPE_CHECKING:
    from tests.e2e.conftest import Project

ROOT = Path(__file__).resolve().parent.parent
# Smoke mode: one session per client and store, a store of 20 events — every code path of
# this bench (both clients, the shim, the filled store) in seconds instead of minutes.
SESSIONS = scaled(3, 1)
STORE_EVENTS = scaled(5000, 20)
TARGET_S = 0.1


def timing_shim(folder: Path, real: str, log: Path) -> Path:
    shim = folder / "agentstate"
    # bash's EPOCHREALTIME reads the clock without starting a process, and the clock starts
    # once the payload is saved: the window holds the hook process alone, not the shim's own
    # mktemp, cat and date processes (which added several ms to every event).
    shim.write_text(
        "#!/usr/bin/env bash\n"
        'tmp=$(mktemp)\ncat > "$tmp"\n'
        "start=${EPOCHREALTIME/[.,]/}000\n"
        f'{shlex.quote(real)} "$@" < "$tmp"\n'
        "end=${EPOCHREALTIME/[.,]/}000\n"
        "event=$(sed -n 's/.*\"hook_event_name\": *\"\\([A-Za-z]*\\)\".*/\\1/p' \"$tmp\")\n"
        f'echo "$event $start $end" >> {shlex.quote(str(log))}\n'
        'rm -f "$tmp"\n')
    shim.chmod(0o755)
    return shim


def fill(root: Path, events: int) -> None:
    """A store with `events` events in one run (through the run log's own function)."""
    from agentstate.runs.log import append_event, start_run
    from agentstate.store.db import open_store

    store = open_store(start=root)
    try:
        run, _ = start_run(store, "an older task with a long history")
        for i in range(events):
            append_event(store, run.ref, "observation", f"step {i}: looked at module {i % 97}",
                         source="model")
    finally:
        store.close()


def measure(client: str, binary: Path, events: int, *, helper: bool = True
            ) -> dict[str, list[float]]:
    """Each event's whole-process times; `helper` False runs every hook in process
    (AGENTSTATE_HOOK_HELPER=0), for the comparison."""
    from tests.e2e.conftest import AGENTSTATE, Project

    with tempfile.TemporaryDirectory(prefix="bench-hook-clients-") as tmp:
        base = Path(tmp)
        root, home = base / "shop", base / "home"
        root.mkdir()
        home.mkdir()
        env = dict(os.environ, HOME=str(home), GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
                   GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
        (root / "test_parse.py").write_text("def test_parse():\n    assert 2 + 2 == 3\n")
        subprocess.run(["git", "add", "."], cwd=root, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", "one"], cwd=root, check=True, env=env)
        subprocess.run([str(AGENTSTATE), "init"], cwd=root, check=True, capture_output=True,
                       env=env)
        if events:
            fill(root, events)
        project = Project(root, home)
        log = base / "hooks.log"
        shim = timing_shim(base, str(AGENTSTATE), log)
        # The hook helper as a user has it (on unless asked), its socket in this run's own
        # directory and stopped at the end; the clients pass these to the hooks.
        saved = {k: os.environ.get(k) for k in ("AGENTSTATE_HOOK_HELPER",
                                                 "AGENTSTATE_RUNTIME_DIR")}
        os.environ["AGENTSTATE_HOOK_HELPER"] = "1" if helper else "0"
        os.environ["AGENTSTATE_RUNTIME_DIR"] = str(base / "rt")
        try:
            _sessions(client, binary, project, shim)
        finally:
            stop_helpers_in(str(base / "rt"))
            for key, value in saved.items():
                os.environ.pop(key, None) if value is None else os.environ.update({key: value})
        found: dict[str, list[float]] = defaultdict(list)
        for line in log.read_text().splitlines():
            event, start, end = line.split()
            found[event].append((int(end) - int(start)) / 1e9)
        return found


def _sessions(client: str, binary: Path, project: Project, shim: Path) -> None:
    from agentstate.integrations.agent_config import install_agent_hooks
    from tests.e2e.model_server import ModelServer, Text
    from tests.e2e.sessions import (
        FAILING_TEST,
        PASSING,
        codex_home,
        run_claude,
        run_codex,
        shell_call,
        write_codex_config,
    )

    root = project.root
    with ModelServer() as model:
        if client == "codex":
            from agentstate.integrations.codex_trust import trust_codex_hooks

            write_codex_config(project, model)
            path = root / ".codex" / "hooks.json"
            install_agent_hooks("codex", path, program=str(shim))
            trust_codex_hooks(root, path, config_path=codex_home(project) / "config.toml")
        else:
            install_agent_hooks("claude-code", root / ".claude" / "settings.json",
                                program=str(shim))
        for _ in range(SESSIONS):
            model.script(shell_call(FAILING_TEST), shell_call(PASSING), Text("Done."))
            run = run_codex if client == "codex" else run_claude
            run(binary, project, model, "Run the parser test and check git")


def python_floor() -> float:
    """p50 of `python -c pass` (this interpreter, whole processes): the floor a hook's cost is
    read against on a shared machine, measured in the same run."""
    import time

    times = []
    for _ in range(scaled(9, 1)):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def p50(times: list[float] | None) -> float:
    return statistics.median(times) if times else float("nan")


def main() -> None:
    from tests.e2e.clients import CLIENTS
    from tests.e2e.conftest import CACHE

    print(f"hook cost inside the real clients: p50 seconds per event, {SESSIONS} sessions, "
          f"empty store vs {STORE_EVENTS:,} events; load average "
          f"{os.getloadavg()[0]:.1f} at the start")
    floor = python_floor()
    print(f"python -c pass: {floor:.3f} s (p50); x: an event's p50 on the large store over "
          "it; in-proc: the large store with the hook helper off (every hook a cold process); "
          "helped: large over in-proc")
    for name, client in CLIENTS.items():
        binary = CACHE / client.cache_name / "node_modules" / ".bin" / client.binary
        if not binary.exists():
            print(f"{name} {client.version}: not installed in {CACHE}; run `pytest -m e2e` "
                  "once to install it (skipped)")
            continue
        if SMOKE:
            # One real session per client: Claude Code on the empty store, Codex on the
            # filled one — every code path runs, at half the smoke's cost (figures are moot).
            small = measure(name, binary, 0) if name == "claude-code" else {}
            large = measure(name, binary, STORE_EVENTS) if name != "claude-code" else {}
            cold: dict[str, list[float]] = {}
        else:
            small = measure(name, binary, 0)
            large = measure(name, binary, STORE_EVENTS)
            cold = measure(name, binary, STORE_EVENTS, helper=False)
        print(f"{name} {client.version}")
        print(f"  {'event':22} {'empty':>7} {'large':>7} {'ratio':>6} {'x':>5} "
              f"{'in-proc':>7} {'helped':>6}")
        for event in sorted(set(small) | set(large)):
            a, b, c = (p50(found.get(event)) for found in (small, large, cold))
            flag = "" if b <= TARGET_S else f"  (over {TARGET_S} s)"
            print(f"  {event:22} {a:7.3f} {b:7.3f} {b / a:6.2f} {b / floor:5.1f} "
                  f"{c:7.3f} {b / c:6.2f}{flag}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end; python -c pass again: "
          f"{python_floor():.3f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
