"""The names of the files a skill folder is made of.

Kept apart from skill_file.py (which parses and validates them) so that file_checks.py, which
skill_file.py runs, can name them without importing skill_file.py back: no import cycle.
"""

from __future__ import annotations

SKILL_MD = "SKILL.md"
SKILL_TOML = "skill.toml"
