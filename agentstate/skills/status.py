"""Skill version statuses: the one definition of their names (stored as these strings in
`skill_versions.status`)."""

from __future__ import annotations

from enum import StrEnum


class SkillStatus(StrEnum):
    """A draft waiting to be published, a release, or a release withdrawn."""

    CANDIDATE = "candidate"
    PUBLISHED = "published"
    REVOKED = "revoked"


