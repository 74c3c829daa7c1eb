"""SKILL.md: the open Agent Skills format's front matter, read and checked.

  name           required; 1-64 chars of a-z, 0-9 and '-'; no leading, trailing or double
                 hyphen; equal to the folder name
  description    required; 1-1024 chars
  license        optional string
  compatibility  optional; 1-500 chars
  metadata       optional map of string keys to string values
  allowed-tools  optional; space-separated string of tool names
and no other key, so agents that read skills natively can use the folder as is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentstate.skills.folder_layout import SKILL_MD
from agentstate.skills.problems import ProblemCollector

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
BODY_LINES_WARN = 500  # the spec recommends keeping SKILL.md under 500 lines
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


@dataclass
class SkillDoc:
    """A parsed SKILL.md."""

    front: dict[str, Any]
    body: str
    body_line: int
    key_lines: dict[str, int]


def split_front_matter(text: str) -> tuple[str, str, int] | None:
    """(front matter text, body, body's first line number) or None when there is none."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return None
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), index + 2
    return "", "", -1  # opened, never closed


def parse_skill_md(text: str, out: ProblemCollector) -> SkillDoc | None:
    """Parse SKILL.md; problems go to `out`. Front matter lines are real file lines."""
    import yaml

    split = split_front_matter(text)
    if split is None:
        out.error(SKILL_MD, 1, "front-matter-missing",
                  "no front matter: SKILL.md must start with a '---' line, then YAML with "
                  "name and description, then '---'")
        return None
    front_text, body, body_line = split
    if body_line < 0:
        out.error(SKILL_MD, 1, "front-matter-unclosed",
                  "front matter is not closed: add a '---' line after the YAML")
        return None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: faster
    try:
        node = yaml.compose(front_text, Loader=loader)
        data = yaml.load(front_text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        out.error(SKILL_MD, line, "yaml-invalid", f"front matter is not valid YAML: {problem}")
        return None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode | type(None)):
        out.error(SKILL_MD, 2, "front-matter-type",
                  "front matter must be a YAML mapping of keys to values")
        return None
    key_lines: dict[str, int] = {}
    for key_node, _ in node.value if node is not None else []:
        key = str(key_node.value)
        line = key_node.start_mark.line + 2
        if key in key_lines:
            out.error(SKILL_MD, line, "duplicate-key",
                      f"key {key!r} appears twice (first on line {key_lines[key]})")
        key_lines.setdefault(key, line)
    return SkillDoc(front={str(k): v for k, v in data.items()}, body=body,
                    body_line=body_line, key_lines=key_lines)


def check_front_matter(doc: SkillDoc, folder_name: str, out: ProblemCollector) -> None:
    front, lines = doc.front, doc.key_lines
    for key in front:
        if key not in SPEC_KEYS:
            hint = " (put custom fields under `metadata`, or in skill.toml)"
            out.error(SKILL_MD, lines.get(key), "unknown-key",
                      f"unknown front matter key {key!r}; allowed: {', '.join(SPEC_KEYS)}{hint}")
    _check_name_key(front.get("name"), lines.get("name"), folder_name, out)
    _check_description(front.get("description"), lines.get("description"), out)
    if "license" in front and not (isinstance(front["license"], str) and front["license"].strip()):
        out.error(SKILL_MD, lines.get("license"), "license-type",
                  "`license` must be a non-empty string (a license name or a bundled file)")
    if "compatibility" in front:
        value = front["compatibility"]
        if not isinstance(value, str) or not value.strip():
            out.error(SKILL_MD, lines.get("compatibility"), "compatibility-type",
                      "`compatibility` must be a non-empty string")
        elif len(value) > COMPATIBILITY_MAX:
            out.error(SKILL_MD, lines.get("compatibility"), "compatibility-length",
                      f"`compatibility` is {len(value)} characters; at most {COMPATIBILITY_MAX}")
    if "metadata" in front:
        _check_metadata(front["metadata"], lines.get("metadata"), out)
    if "allowed-tools" in front and not isinstance(front["allowed-tools"], str):
        out.error(SKILL_MD, lines.get("allowed-tools"), "allowed-tools-type",
                  "`allowed-tools` must be a space-separated string of tool names")
    if not doc.body.strip():
        out.warn(SKILL_MD, doc.body_line, "body-empty",
                 "SKILL.md has no instructions after the front matter")
    elif doc.body.count("\n") > BODY_LINES_WARN:
        out.warn(SKILL_MD, doc.body_line, "body-long",
                 f"SKILL.md body is over {BODY_LINES_WARN} lines; move detail to references/")


def _check_name_key(name: Any, line: int | None, folder_name: str,
                    out: ProblemCollector) -> None:
    if name is None:
        out.error(SKILL_MD, 2, "name-missing", "front matter has no `name`")
    elif not isinstance(name, str):
        out.error(SKILL_MD, line, "name-type", "`name` must be a string")
    else:
        check_name(name, out, line)
        if name != folder_name:
            out.error(SKILL_MD, line, "name-mismatch",
                      f"`name` is {name!r} but the folder is {folder_name!r}; they must be equal")


def _check_description(description: Any, line: int | None, out: ProblemCollector) -> None:
    if description is None:
        out.error(SKILL_MD, 2, "description-missing", "front matter has no `description`")
    elif not isinstance(description, str):
        out.error(SKILL_MD, line, "description-type", "`description` must be a string")
    elif not description.strip():
        out.error(SKILL_MD, line, "description-empty", "`description` is empty")
    elif len(description) > DESCRIPTION_MAX:
        out.error(SKILL_MD, line, "description-length",
                  f"`description` is {len(description)} characters; at most {DESCRIPTION_MAX}")


def _check_metadata(value: Any, line: int | None, out: ProblemCollector) -> None:
    if not isinstance(value, dict):
        out.error(SKILL_MD, line, "metadata-type",
                  "`metadata` must be a mapping of string keys to string values")
        return
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            out.error(SKILL_MD, line, "metadata-type",
                      f"`metadata` entry {key!r}: keys and values must be strings "
                      f"(quote {item!r})")


def check_name(name: str, out: ProblemCollector | None = None,
               line: int | None = None) -> list[str]:
    """The spec's name rules; returns the messages (and reports them to `out`)."""
    messages = []
    if not name:
        messages.append(("name-length", "`name` is empty"))
    elif len(name) > NAME_MAX:
        messages.append(("name-length", f"`name` is {len(name)} characters; at most {NAME_MAX}"))
    if name and not re.fullmatch(r"[a-z0-9-]+", name):
        messages.append(("name-chars", f"`name` {name!r} may only contain lowercase letters, "
                                       "digits and hyphens"))
    elif name and (name.startswith("-") or name.endswith("-")):
        messages.append(("name-hyphen", f"`name` {name!r} must not start or end with a hyphen"))
    elif "--" in name:
        messages.append(("name-hyphen", f"`name` {name!r} must not contain '--'"))
    if out is not None:
        for rule, message in messages:
            out.error(SKILL_MD, line, rule, message)
    return [m for _, m in messages]


def allowed_tool_commands(value: str) -> list[str]:
    """Command prefixes pre-approved by `allowed-tools` (`Bash(git status:*)` → `git status`)."""
    found = []
    for match in re.finditer(r"Bash\(([^)]*)\)", value or ""):
        inner = match.group(1).strip()
        inner = re.sub(r":?\*$", "", inner).strip()
        if inner:
            found.append(inner)
    return found
