"""Run statuses: the one definition of their names (stored as these strings in `runs.status`)."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """Where a run is in its life: open for events, or ended one of two ways."""

    ACTIVE = "active"
    DONE = "done"
    ABANDONED = "abandoned"


RUN_STATUSES: tuple[RunStatus, ...] = tuple(RunStatus)
# How `run end` may close a run.
END_STATUSES: tuple[RunStatus, ...] = (RunStatus.DONE, RunStatus.ABANDONED)
