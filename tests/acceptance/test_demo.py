"""`make demo` is the README's first command: it must keep working as the product changes."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_the_demo_story_runs_to_the_end():
    proc = subprocess.run([sys.executable, str(ROOT / "demo" / "demo.py")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "demo finished: every step exited as expected" in proc.stdout
