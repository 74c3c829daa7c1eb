"""What every file of a skill must satisfy, whatever it is: the skill cannot reach outside.

One function, `check_files`, run by `validate_folder`, which `skill validate`, `skill test`'s
pre-check and `skill publish` all call, so validate never says ok where publish refuses:

- no symlink that leaves the skill folder (or is absolute, or dangles);
- size limits per file and per skill (`[skills] max_file_bytes`, `max_skill_bytes`);
- no file named like a program the `[tools]` policy names (a `scripts/git` would run as the
  allowed tool `git`);
- no secret in any file, of any encoding: UTF-8, UTF-16/32 with a BOM, and binary files'
  printable runs (see safety.scannable_text);
- text that reads like instructions aimed at an agent, in every file: a warning here, and a
  reason publish needs a human --approve.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Protocol

from agentstate.config import SkillSettings, ToolSettings
from agentstate.skills.folder_layout import SKILL_MD, SKILL_TOML


class ProblemSink(Protocol):
    """Where the checks report (skill_file.ProblemCollector; named by its shape, because
    skill_file imports this module and the layer test forbids the cycle back)."""

    def error(self, file: str, line: int | None, rule: str, message: str) -> None: ...

    def warn(self, file: str, line: int | None, rule: str, message: str) -> None: ...


def _policy_programs(policy: ToolSettings) -> set[str]:
    """Program names the tool policy mentions (allowed, denied or defined), plus the defaults:
    with `allow = ["*"]` every default name still counts."""
    from agentstate.tools.policy import program_name

    names = set()
    for rule in (*policy.allow, *policy.deny, *ToolSettings().allow):
        try:
            words = shlex.split(rule)
        except ValueError:
            words = rule.split()
        if words and words[0] != "*":
            names.add(program_name(words[0]))
    names.update(d.name for d in policy.definitions)
    return names


def _leaves(folder: Path, link: Path) -> str | None:
    """Why a symlink is refused (None when it stays inside the folder)."""
    target = os.readlink(link)
    if os.path.isabs(target):
        return f"points to the absolute path {target!r}"
    resolved = (link.parent / target).resolve()
    root = folder.resolve()
    if resolved != root and root not in resolved.parents:
        return f"points outside the skill folder ({target!r})"
    if not resolved.exists():
        return f"points to {target!r}, which does not exist"
    return None


def check_files(folder: Path, files: list[Path], policy: ToolSettings,
                limits: SkillSettings, out: ProblemSink) -> None:
    """Report every problem of `files` (the skill's files, see skill_file.skill_files) to `out`
    (a skill_file.ProblemCollector)."""
    from agentstate.safety import find_injection, find_secrets, scannable_text

    tools = _policy_programs(policy)
    total = 0
    for file in sorted(files):
        rel = file.relative_to(folder).as_posix()
        if file.is_symlink():
            why = _leaves(folder, file)
            if why:
                out.error(rel, None, "symlink-outside",
                          f"{rel} is a symlink that {why}: a skill may not reach outside its "
                          "folder")
                continue
            if file.is_dir():
                out.error(rel, None, "symlink-dir",
                          f"{rel} is a symlink to a folder: put the files in the skill itself")
                continue
        if file.name in tools and rel not in (SKILL_MD, SKILL_TOML):
            out.error(rel, None, "script-shadows-tool",
                      f"{rel} is named like the tool {file.name!r} the [tools] policy names: a "
                      "skill's script may not pass for an allowed program (rename it)")
        try:
            size = file.stat().st_size
        except OSError as exc:
            out.error(rel, None, "unreadable", f"cannot read {rel}: {exc.strerror or exc}")
            continue
        total += size
        if size > limits.max_file_bytes:
            out.error(rel, None, "file-too-large",
                      f"{rel} is {size} bytes, over [skills] max_file_bytes = "
                      f"{limits.max_file_bytes}")
            continue  # not read: refused anyway, and reading it would cost the time it saves
        try:
            data = file.read_bytes()
        except OSError as exc:
            out.error(rel, None, "unreadable", f"cannot read {rel}: {exc.strerror or exc}")
            continue
        text, _is_text = scannable_text(data)
        findings = find_secrets(text)
        if findings:
            line = text.count("\n", 0, findings[0].start) + 1 if _is_text else None
            kinds = ", ".join(sorted({f.kind for f in findings}))
            out.error(rel, line, "secret", f"{rel} looks like it contains a secret ({kinds})")
        for phrase in find_injection(text):
            line = text.count("\n", 0, max(text.lower().find(phrase.lower()), 0)) + 1
            out.warn(rel, line if _is_text else None, "injection",
                     f"{rel} reads like instructions aimed at an agent ({phrase!r}); "
                     "publishing it needs a human --approve")
    if total > limits.max_skill_bytes:
        out.error("", None, "skill-too-large",
                  f"the skill's files are {total} bytes together, over [skills] "
                  f"max_skill_bytes = {limits.max_skill_bytes}")
