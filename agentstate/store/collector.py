"""The cyclic collector off for one job that allocates many objects and keeps them to its end.

Why: the collector's passes are triggered by allocations and walk every tracked object. A
job that builds tens of thousands of tuples holding no cycle (a row a version, a line a
record) pays for passes that free nothing: ~5 ms of a 0.17 s `context`, ~13 ms of a gc,
20-45 ms of a first sync export of 14,667 versions (issue 24). Below every domain so that
any of them, and the processes that run one job (integrations/one_shot.py), use this one.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def without_collector(job: Callable[[], T]) -> T:
    """`job()` with the cyclic collector off; afterwards it is as the caller had it (the
    full command, when the quick path declines, collects as usual)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return job()
    finally:
        if collecting:
            gc.enable()
