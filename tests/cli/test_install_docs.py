"""Install lines: every page names a distribution that is ours (or a plain dependency), never
the bare `agentstate`, which on the package index is an unrelated project."""

from __future__ import annotations

import re
import shlex
import tomllib
from importlib import metadata

import pytest

from agentstate import DISTRIBUTION
from tests.conftest import ROOT

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
                *(ROOT / "skills").glob("*/*.md")])
# `pip install X`, `pipx install X`, `pipx inject DIST X`, `uv tool install X`, `uv pip install X`
INSTALL = re.compile(r"\b(?:pip3?|pipx|uv tool|uv pip)\s+(?:install|inject)\s+(?P<args>[^`\n]*)")
# Names an install line may give bare: ours, and the extras' own requirements.
ALLOWED = {DISTRIBUTION, "mcp", "matplotlib", "detect-secrets"}


_VALUED_OPTIONS = {"--config-settings", "-C", "-c", "--constraint", "-r", "--requirement",
                   "-t", "--target", "--python", "-i", "--index-url"}


def _names(args: str) -> list[str]:
    """The distribution names an install line asks for (paths, URLs and options skipped)."""
    args = re.split(r"\s#", args, maxsplit=1)[0]  # a shell comment
    args = re.split(r"\s(?:&&|\||;)\s", args, maxsplit=1)[0]
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    names = []
    skip = False
    for word in words:
        if skip:  # the value of an option that takes one
            skip = False
            continue
        if word in _VALUED_OPTIONS:
            skip = True
            continue
        if word.startswith("-") or word.startswith((".", "/", "~", "git+", "http", "file:")) \
                or "/" in word.split("@", 1)[0]:
            continue
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", word)
        if match:
            names.append(re.sub(r"[-_.]+", "-", match.group(0)).lower())
    return names


def install_names(text: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in INSTALL.finditer(line):
            found += [(number, name) for name in _names(match.group("args"))]
    return found


def test_the_scanner_catches_the_lines_that_misled_users():
    assert install_names("pip install 'agentstate[mcp]'") == [(1, "agentstate")]
    assert install_names("run `pipx install agentstate` first") == [(1, "agentstate")]
    assert install_names("uv tool install Agent_State") == [(1, "agent-state")]
    assert install_names("pip install -e '/path/to/agentstate[mcp]'  # ok") == []
    assert install_names("pip install --config-settings editable_mode=compat -e .") == []
    assert install_names("pip install -C editable_mode=compat agentstate") == [(1, "agentstate")]
    assert install_names("pipx install 'agentstate-cli[mcp] @ git+https://h/x.git'") == \
        [(1, "agentstate-cli")]
    assert install_names("pipx inject agentstate-cli 'mcp>=2.3,<3'") == \
        [(1, "agentstate-cli"), (1, "mcp")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_installs_a_name_that_is_not_ours(page):
    bad = [(n, name) for n, name in install_names(page.read_text(encoding="utf-8"))
           if name not in ALLOWED]
    assert bad == [], f"{page.name}: install lines naming {bad} (ours is {DISTRIBUTION})"


def test_the_readme_gives_each_way_to_install():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in ("pip install .", "editable_mode=compat -e .", "pipx install /path/to/agentstate",
                 "uv tool install /path/to/agentstate",
                 f"'{DISTRIBUTION} @ git+"):
        assert line in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in project["optional-dependencies"]:
        assert f"| `{extra}` |" in text, f"the README's table of extras lacks {extra}"


def test_the_distribution_is_ours_and_still_installs_the_agentstate_command():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION
    # The MCP SDK is the MCP tests' client (the server itself does not import it).
    assert any(d.startswith("mcp>=") for d in project["optional-dependencies"]["dev"])
    assert project["scripts"] == {"agentstate": "agentstate.entry:main"}
    installed = metadata.distribution(DISTRIBUTION)  # this checkout, installed by make
    assert any(ep.name == "agentstate" for ep in installed.entry_points)
