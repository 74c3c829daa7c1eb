"""The secret scanner and the injection detector on 1 MB adversarial inputs (linear time), and
agentstate's detector next to Yelp's detect-secrets on the tests' corpus (when installed).

Linear time shows as a ratio: the time for 1 MB over the time for 256 KB of the same shape is
about 4 for a linear pattern and about 16 for a quadratic one. Each shape targets a pattern's
weak spot: long runs of its own characters, its prefix repeated, a prefix with no terminator.
(The credential-in-URL pattern once took 75 s on a 99,000-character token.)
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data import scaled

SIZE = scaled(1 << 20, 1 << 12)
SEEDS = [
    "a", "A1", "aB3/", "0f", "ghp_", "github_pat_", "glpat-", "sk-", "xoxb-", "eyJ", "eyJa.",
    "AKIA", "AIza", "hf_", "npm_", "SG.", "://", "a://", "a:b", "a:b@", "x=", "x: ", '"a": "',
    "PASSWORD=", "password ", "password is ", "secret ", "api key ", "-----BEGIN ",
    "-----BEGIN RSA PRIVATE KEY-----\n", "-----END", "mysql ", "mysql -u x ", "--password=",
    "--token ", "Bearer ", "AccountKey=", "hooks.slack.com/services/", "\u200b", "a\u200b",
    "curl ", "curl x ", "wget -qO- ", "| ", "bash <(", "ignore ", "ignore the ",
    "send to ", "x" * 63 + "=", "DB_PASS" * 9 + ": ",
]


def shapes(size: int) -> dict[str, str]:
    rng = random.Random(5)
    out = {f"{seed[:24]!r} repeated": (seed * (size // len(seed) + 1))[:size] for seed in SEEDS}
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out["random base64"] = "".join(rng.choice(alphabet) for _ in range(size))
    out["random printable"] = "".join(chr(rng.randrange(32, 127)) for _ in range(size))
    for prefix in ("ghp_", "eyJ", "https://", "redis://:", "password=", "mysql -p", "Bearer ",
                   "-----BEGIN OPENSSH PRIVATE KEY-----\n", "curl "):
        out[f"{prefix!r} + one long token"] = (prefix + "a" * size)[:size]
    return out


def _time(fn, text: str) -> float:
    start = time.perf_counter()
    fn(text)
    return time.perf_counter() - start


def linear_time() -> None:
    from agentstate.safety import find_injection, find_secrets

    small, big = shapes(SIZE // 4), shapes(SIZE)
    rows = []
    for name in big:
        for label, fn in (("secrets", find_secrets), ("injection", find_injection)):
            t_small, t_big = _time(fn, small[name]), _time(fn, big[name])
            rows.append((t_big, label, name, t_big / max(t_small, 1e-6)))
    rows.sort(reverse=True)
    print(f"{'scan':<10} {'input (1 MB)':<44} {'seconds':>8} {'1MB/256KB':>10}")
    for t_big, label, name, ratio in rows[:15]:
        print(f"{label:<10} {name:<44} {t_big:8.3f} {ratio:10.1f}")
    by_ratio = sorted(rows, key=lambda r: r[3], reverse=True)[:5]
    print("largest ratios (small absolute times are noisy): " + "; ".join(
        f"{label} {name} {ratio:.1f} ({t_big:.3f} s)" for t_big, label, name, ratio in by_ratio))
    worst = max(rows)
    print(f"{len(rows)} runs; slowest {worst[0]:.3f} s ({worst[1]}: {worst[2]}); "
          f"largest 1MB/256KB ratio {max(r[3] for r in rows):.1f} (linear ≈ 4)")


def realistic_outputs() -> None:
    """MB/s of the scanner on what imports and hooks keep: multi-line test output and diffs,
    as the text itself and as the JSON of an event's meta (where a break is `\\n`)."""
    import json

    from agentstate.safety import find_secrets
    from bench.data import Texts

    texts = Texts(11)
    passed = "\n".join(f"tests/test_{texts.ident()}.py::test_{texts.ident()} PASSED"
                       for _ in range(40))
    samples = {
        "pytest -v run with a failure": [passed + "\n" + texts.traceback() + "\n"
                                         + texts.pytest_failure() for _ in range(scaled(60, 2))],
        "unified diffs": ["\n".join(texts.diff() for _ in range(4)) for _ in range(scaled(60, 2))],
    }
    print(f"{'realistic text':<32} {'as text':>10} {'as JSON':>10}")
    for name, docs in samples.items():
        speeds = []
        for form in (docs, [json.dumps({"excerpt": d}) for d in docs]):
            size = sum(len(d) for d in form) / 1e6
            took = min(_time(lambda batch: [find_secrets(d) for d in batch], form)
                       for _ in range(scaled(3, 1)))
            speeds.append(size / took)
        print(f"{name:<32} {speeds[0]:>6.2f} MB/s {speeds[1]:>6.2f} MB/s")


def _import_ms(statement: str) -> float:
    times = []
    for _ in range(scaled(5, 1)):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def compare_detect_secrets() -> None:
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "security"))
    sys.path.insert(0, str(Path(__file__).parent))
    from secrets_corpus import NEGATIVES, POSITIVES
    from secrets_holdout import HOLDOUT_NEGATIVES, HOLDOUT_POSITIVES

    print("the tests' corpus (tests/security/secrets_corpus.py):")
    _compare(POSITIVES, NEGATIVES)
    print()
    print("a corpus the detector was not tuned on (bench/secrets_holdout.py):")
    _compare([(shape, text, "") for shape, text in HOLDOUT_POSITIVES], HOLDOUT_NEGATIVES,
             startup=False)


def _compare(POSITIVES: list, NEGATIVES: list, startup: bool = True) -> None:  # noqa: N803
    from agentstate.safety import find_secrets

    ours_tp = sum(bool(find_secrets(text)) for _, text, _ in POSITIVES)
    ours_fp = sum(bool(find_secrets(text)) for _, text in NEGATIVES)
    print(f"agentstate: {ours_tp}/{len(POSITIVES)} positives caught, "
          f"{ours_fp}/{len(NEGATIVES)} near misses flagged")
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        print("detect-secrets is not installed: `pip install detect-secrets` to compare")
        return
    caught, flagged, missed_by_us = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp, default_settings():
        def hits(text: str) -> bool:
            path = os.path.join(tmp, "sample.txt")
            Path(path).write_text(text + "\n", encoding="utf-8")
            found = SecretsCollection()
            found.scan_file(path)
            return bool(list(found))

        for shape, text, _ in POSITIVES:
            if hits(text):
                caught += 1
                if not find_secrets(text):
                    missed_by_us.append(shape)
        theirs_missed = [s for s, t, _ in POSITIVES if not hits(t)]
        flagged = sum(hits(text) for _, text in NEGATIVES)
        start = time.perf_counter()
        for _, text, _ in POSITIVES + [(s, t, "") for s, t in NEGATIVES]:
            hits(text)
        theirs_s = time.perf_counter() - start
    start = time.perf_counter()
    for _, text, _ in POSITIVES + [(s, t, "") for s, t in NEGATIVES]:
        find_secrets(text)
    ours_s = time.perf_counter() - start
    print(f"detect-secrets (default plugins and filters): {caught}/{len(POSITIVES)} positives "
          f"caught, {flagged}/{len(NEGATIVES)} near misses flagged")
    print(f"  caught by detect-secrets and not by agentstate: {missed_by_us or 'none'}")
    print(f"  missed by detect-secrets: {len(theirs_missed)}: {', '.join(theirs_missed[:12])}…")
    print(f"  missed by agentstate: "
          f"{[s for s, t, _ in POSITIVES if not find_secrets(t)] or 'none'}; near misses it "
          f"flags: {[s for s, t in NEGATIVES if find_secrets(t)] or 'none'}")
    print(f"  corpus scan: agentstate {ours_s * 1000:.1f} ms, detect-secrets "
          f"{theirs_s * 1000:.1f} ms (file-based API)")
    if not startup:
        return
    base = _import_ms("pass")
    ours = _import_ms("import agentstate.safety; agentstate.safety.find_secrets('x')")
    theirs = _import_ms("from detect_secrets import SecretsCollection;"
                        "from detect_secrets.settings import default_settings\n"
                        "with default_settings(): pass")
    print(f"  start-up cost over `python -c pass` ({base:.0f} ms): agentstate.safety "
          f"+{ours - base:.0f} ms, detect-secrets +{theirs - base:.0f} ms")


def main() -> None:
    if "--compare" not in sys.argv:  # `--compare`: the detector comparison only
        realistic_outputs()
        print()
        linear_time()
        print()
    compare_detect_secrets()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent.parent))
    main()
