"""Packs assembled for the ui, kept while nothing in the store has changed.

Assembling a context pack at 8,000 tokens on a large store takes from a tenth of a second
to a second (more under load); a page is reloaded, filtered, paged and asked "why not X?"
many times over the same preview. A preview is kept per (what, run, budget, query) until
anything is committed to the store (`store.db.change_mark`), or for at most TTL_SECONDS:
a pack also depends on the clock (recency, expiry, "3 minutes ago"), so an idle page does
not keep showing an old one. MAX_ENTRIES bounds the memory a long session can take.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from agentstate.store.db import change_mark

TTL_SECONDS = 60.0
MAX_ENTRIES = 32


class Previews:
    def __init__(self, db_path: Path, *, ttl: float = TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._db_path = db_path
        self._ttl, self._clock = ttl, clock
        self._lock = threading.Lock()
        self._seen = change_mark(db_path)
        self._kept: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self.hits = self.misses = 0  # for the tests and the bench: was it built again?

    def get(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The kept value for `key`, or `build()` (kept for the next request). Two requests
        for the same new key may both build it; the second one's result is kept."""
        now = self._clock()
        version = change_mark(self._db_path)
        with self._lock:
            if version != self._seen:
                self._kept.clear()
                self._seen = version
            found = self._kept.get(key)
            if found is not None and now - found[0] <= self._ttl:
                self._kept.move_to_end(key)
                self.hits += 1
                return found[1]
            self.misses += 1
        value = build()
        with self._lock:
            self._kept[key] = (now, value)
            self._kept.move_to_end(key)
            while len(self._kept) > MAX_ENTRIES:
                self._kept.popitem(last=False)
        return value
