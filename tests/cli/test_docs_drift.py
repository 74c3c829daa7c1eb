"""The docs keep up with the command line: every command, subcommand and option that `--help`
shows is named in README.md or docs/*.md, next to its command; every relative link resolves.

"Next to its command" means in the same block — a paragraph, a table row or a line of a code
block — as the command's name (`agentstate run start …`, "`run start`", `skill new NAME [--path
DIR]`), or anywhere in a section whose heading names the command ("## `sync`: …"), so an
option documented for another command does not count. A few options are documented once for
every command (below); no other exceptions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from agentstate.cli import app, load_commands
from tests.conftest import ROOT

# Documented once for all commands (docs/concepts.md, "Output and `--json`"; `--help` in
# the README): repeating them beside every command would say nothing.
EVERYWHERE = {"--json", "--help", "--dir", "--version"}

FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(text: str) -> list[tuple[str, str]]:
    """(the heading above it, the block): paragraphs and table rows outside code blocks,
    single lines inside them."""
    out: list[tuple[str, str]] = []
    para: list[str] = []
    fence: str | None = None
    heading = ""

    def flush() -> None:
        if para:
            out.append((heading, " ".join(para)))
            para.clear()

    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            flush()
            token = m.group(1)
            if fence is None:
                fence = token
            elif line.strip() == token and token[0] == fence[0] and len(token) >= len(fence):
                fence = None
            continue
        if fence is not None:
            out.append((heading, line))
        elif not line.strip():
            flush()
        elif line.startswith("#"):
            flush()
            heading = line
        elif line.lstrip().startswith("|"):
            flush()
            out.append((heading, line))
        else:
            para.append(line)
    flush()
    return out


@dataclass(frozen=True)
class Command:
    path: str                  # "run start"
    options: tuple[str, ...]   # every spelling: "--budget", "-b"


def commands() -> list[Command]:
    load_commands()
    root = typer.main.get_command(app)
    found: list[Command] = []

    # Duck-typed like cli/boundary.py: Typer >= 0.25 builds its tree from a vendored click.
    def walk(cmd: Any, path: list[str]) -> None:
        if path:
            names = tuple(n for p in cmd.params if p.param_type_name == "option"
                          for n in (*p.opts, *p.secondary_opts))
            found.append(Command(" ".join(path), names))
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            if not sub.hidden:
                walk(sub, [*path, name])

    walk(root, [])
    assert len(found) > 40, "the command tree was not walked"
    return found


def mentions(block: str, path: str) -> bool:
    """The block names the command: after `agentstate `, or at the start of a code span."""
    return re.search(rf"(?:agentstate |`){re.escape(path)}(?![\w-])", block) is not None


def has_option(block: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", block) is not None


def undocumented(texts: list[str]) -> list[str]:
    all_blocks = [b for text in texts for b in blocks(text)]
    missing: list[str] = []
    for command in commands():
        near = [b for heading, b in all_blocks
                if mentions(b, command.path) or mentions(heading, command.path)]
        if not near:
            missing.append(f"command `{command.path}`")
            continue
        for option in command.options:
            if option not in EVERYWHERE and not any(has_option(b, option) for b in near):
                missing.append(f"`{command.path} {option}`")
    return missing


def test_every_command_and_option_is_documented():
    missing = undocumented([p.read_text(encoding="utf-8") for p in doc_files()])
    assert not missing, "not in README.md or docs/*.md beside their command: " + ", ".join(
        missing)


def test_a_removed_mention_is_caught():
    texts = [p.read_text(encoding="utf-8") for p in doc_files()]
    assert not undocumented(texts)
    # Forget `context --explain` everywhere: the check must notice.
    assert "`context --explain`" in undocumented([t.replace("--explain", "") for t in texts])
    # A command named nowhere at all.
    gone = [re.sub(r"(agentstate |`)skill diff", r"\1", t) for t in texts]
    assert "command `skill diff`" in undocumented(gone)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    found = set(re.findall(r'<a id="([^"]+)"></a>', text))
    fence: str | None = None
    for line in text.splitlines():
        m = FENCE.match(line)
        if m:
            token = m.group(1)
            if fence is None:
                fence = token
            elif line.strip() == token and len(token) >= len(fence):
                fence = None
            continue
        heading = re.match(r"^#{1,6} (.*)$", line)
        if fence is None and heading:
            found.add(slug(heading.group(1)))
    return found


def broken_links(files: list[Path]) -> list[str]:
    broken = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):          # https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            where = f"{shown}: ({target})"
            if not dest.exists():
                broken.append(f"{where} no such file")
            elif fragment and dest.suffix == ".md" and fragment not in anchors(
                    dest.read_text(encoding="utf-8")):
                broken.append(f"{where} no such anchor")
    return broken


def test_relative_links_point_at_files_and_anchors_that_exist():
    files = doc_files()
    # docs/team.md is written alongside this split; until it exists, the README's links to
    # it are the only ones allowed to dangle.
    broken = [b for b in broken_links(files)
              if not (b.startswith("README.md: (docs/team.md") and b.endswith("no such file")
                      and not (ROOT / "docs" / "team.md").exists())]
    assert not broken, broken


def test_a_broken_link_is_caught(tmp_path):
    (tmp_path / "page.md").write_text("# Page\n\n## A `b`: c\n\n[x](page.md#a-b-c) [y](#a-b-c)\n")
    (tmp_path / "bad.md").write_text("[x](nope.md) [y](page.md#gone) [z](https://e.org/x)\n")
    found = broken_links([tmp_path / "page.md", tmp_path / "bad.md"])
    assert len(found) == 2 and "nope.md" in found[0] and "page.md#gone" in found[1]
