"""Skills and the tool layer: what they cost, with ratios measured in this same run.

- match: `match_skills` on a goal, in-process, with the 3 shipped skills, 200 and 2,000
  published skills (the catalog is read from the database mirror, never from git).
- init: `init_store` on a fresh repository with and without installing the shipped skills
  (one commit, three tags, three rows).
- publish: one `skill publish` of a scaffold (validation, acceptance run through the tool
  layer, commit + tag + row), in-process.
- exec: `agentstate exec -- true` (CLI start-up, policy, run, log) against running `true`.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentstate.store.principals import resolve_principal
from bench.data import scaled

REPEATS = scaled(7, 1)
GOAL = "resume the interrupted refactor of the date parser and run the tests"


def _median(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _fresh_repo(base: Path, name: str) -> Path:
    path = base / name
    path.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def _add_catalog(store, n: int, seed: int = 3, prefix: str = "skill") -> None:
    rng = random.Random(seed)
    words = ["parser", "cache", "deploy", "migrate", "lint", "docs", "release", "bench",
             "schema", "api", "auth", "queue", "index", "render", "config", "fixture"]
    with store.transaction():
        for i in range(n):
            picked = rng.sample(words, 4)
            store.db["skill_versions"].insert({
                "name": f"{prefix}-{i}", "version": 1, "status": "published",
                "description": f"How to {picked[0]} the {picked[1]} safely.",
                "triggers": json.dumps([f"{picked[0]} {picked[1]}", f"{picked[2]} {picked[3]}"]),
                "created": store.now(), "provenance": "{}", "reasons": "[]",
            })


def _author(folder: Path) -> None:
    """Replace the scaffold's placeholders (publish refuses an unedited scaffold)."""
    from agentstate.skills.authoring import PLACEHOLDER_BODY, PLACEHOLDER_SCRIPT

    for rel, marker in (("SKILL.md", PLACEHOLDER_BODY), ("scripts/check.py", PLACEHOLDER_SCRIPT)):
        file = folder / rel
        file.write_text(file.read_text().replace(marker, "Benchmark procedure"))


def main() -> None:
    from agentstate.maintenance.init import init_store
    from agentstate.skills import shipped
    from agentstate.skills.authoring import new_skill
    from agentstate.skills.catalog import match_skills
    from agentstate.skills.publishing import publish_skill
    from agentstate.store.db import open_store

    with tempfile.TemporaryDirectory(prefix="bench-skills-") as tmp:
        base = Path(tmp)
        repo = _fresh_repo(base, "main")
        init_store(target=repo)
        store = open_store(start=repo)
        sizes, cold = {}, {}
        more = scaled(1800, 10)
        for n, add in ((3, None), (200, (197, 3, "skill")), (2000, (more, 4, "more"))):
            if add:
                _add_catalog(store, add[0], seed=add[1], prefix=add[2])
            cold[n] = _median(lambda: match_skills(store, GOAL), 1)  # first call: no cache
            sizes[n] = _median(lambda: match_skills(store, GOAL), scaled(21, 1))
        print("match_skills (in-process; first call, then median of 21 warm calls)")
        for n, seconds in sizes.items():
            print(f"  {n:>5} published skills  first {cold[n] * 1000:7.2f} ms   "
                  f"warm {seconds * 1000:7.2f} ms")
        print(f"  ratio 2000/200: first {cold[2000] / cold[200]:.1f}x, "
              f"warm {sizes[2000] / sizes[200]:.1f}x (a linear scan of the catalog)")

        counter = iter(range(10_000))

        def init_with() -> None:
            init_store(target=_fresh_repo(base, f"w{next(counter)}"))

        original = shipped.install_into

        def init_without() -> None:
            shipped.install_into = lambda root: shipped.InstallResult()
            try:
                init_store(target=_fresh_repo(base, f"n{next(counter)}"))
            finally:
                shipped.install_into = original

        with_s, without_s = [], []
        for _ in range(REPEATS):  # alternate, so drift in machine load hits both
            with_s.append(_median(init_with, 1))
            without_s.append(_median(init_without, 1))
        a, b = statistics.median(with_s), statistics.median(without_s)
        print("init (in-process, includes `git init` of the repo, median)")
        print(f"  with shipped skills     {a * 1000:7.1f} ms")
        print(f"  without                 {b * 1000:7.1f} ms   ratio {a / b:.1f}x")

        def publish_one() -> None:
            name = f"bench-{next(counter)}"
            new_skill(store, name, description="A benchmark skill.",
                      principal=resolve_principal(store))
            _author(store.skills_path / name)
            publish_skill(store, name, principal=resolve_principal(store))

        seconds = _median(publish_one, scaled(5, 1))
        print(f"publish of a scaffold (validate, acceptance via the tool layer, commit+tag+row)"
              f": {seconds * 1000:.0f} ms median of {scaled(5, 1)}")
        store.close()

        agentstate = Path(sys.executable).parent / "agentstate"
        direct = _median(lambda: subprocess.run(["true"], check=True))
        through = _median(lambda: subprocess.run([str(agentstate), "exec", "--", "true"],
                                                 cwd=repo, check=True, capture_output=True))
        print("exec -- true (subprocess, median)")
        print(f"  true directly            {direct * 1000:7.1f} ms")
        print(f"  agentstate exec -- true  {through * 1000:7.1f} ms   "
              f"overhead {(through - direct) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
