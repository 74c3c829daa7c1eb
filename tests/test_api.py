"""The library face: the examples of docs/python-api.md run as written, in a real
repository with a real store, and `agentstate`'s names are `agentstate.api`'s, imported only
when first used."""

from __future__ import annotations

import re
import subprocess
import sys

import agentstate
from agentstate import api
from tests.conftest import ROOT, run_agentstate

DOC = ROOT / "docs" / "python-api.md"


def examples() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = re.search(r"<!-- api-examples -->\n(.*?)<!-- /api-examples -->", text, re.S)
    assert section, "docs/python-api.md has no <!-- api-examples --> section"
    blocks = re.findall(r"```python\n(.*?)```", section.group(1), re.S)
    assert len(blocks) >= 3
    return "\n".join(blocks)


def test_the_documented_examples_run(initialised):
    proc = subprocess.run([sys.executable, "-c", examples()], cwd=initialised,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, pack = proc.stdout.splitlines()[0], proc.stdout.splitlines()[1]
    assert re.fullmatch(r"run:\S+ evt:\S+", first) and pack.startswith("pack:")
    # What the examples wrote is in the store the CLI reads.
    events = run_agentstate("events", "--all", "--json", cwd=initialised)
    assert "tabs are rejected" in events.stdout


def test_a_failing_example_fails_the_test(initialised):
    """The runner is not a formality: a false claim in an example makes it exit non-zero."""
    wrong = examples().replace('assert "British English" not in for_agent.text',
                               'assert "British English" in for_agent.text')
    proc = subprocess.run([sys.executable, "-c", wrong], cwd=initialised,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "AssertionError" in proc.stderr


def test_the_package_exports_the_api_by_the_same_names():
    assert set(api.__all__) == agentstate.API_NAMES
    for name in api.__all__:
        assert getattr(agentstate, name) is getattr(api, name)
    assert agentstate.__version__ and agentstate.DISTRIBUTION == "agentstate-cli"


def test_importing_agentstate_does_not_import_the_library():
    """Hooks run `agentstate.entry`, which imports the package root: that must not pull in
    the api and every domain behind it."""
    code = ("import sys, agentstate, agentstate.entry; "
            "print('agentstate.api' in sys.modules, 'agentstate.context.assemble' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.stdout.split() == ["False", "False"], proc.stderr
