"""Regular expressions compiled on first use.

Every hook call is a whole process (the agent waits for it), and compiling a pattern costs
far more than a substring test: the secret scanner's, the excerpt's and the outcome rules'
patterns compiled at import were a large share of a hook's instructions. A `LazyPattern`
reads like a compiled pattern at its call sites and compiles when first used, so a process
pays only for the patterns its own text reaches (a text without `://` never compiles the
URL rule, a tool call with an exit code never compiles the runners' summary lines).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import AnyStr, Generic


class LazyPattern(Generic[AnyStr]):
    """`re.compile(source, flags)`, done on the first search, match or substitution."""

    __slots__ = ("source", "flags", "_pattern")

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self.source: AnyStr = source
        self.flags: int = flags
        self._pattern: re.Pattern[AnyStr] | None = None

    @property
    def compiled(self) -> re.Pattern[AnyStr]:
        if self._pattern is None:
            self._pattern = re.compile(self.source, self.flags)
        return self._pattern

    def search(self, text: AnyStr, pos: int = 0) -> re.Match[AnyStr] | None:
        return self.compiled.search(text, pos)

    def match(self, text: AnyStr, pos: int = 0) -> re.Match[AnyStr] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: AnyStr) -> re.Match[AnyStr] | None:
        return self.compiled.fullmatch(text)

    def finditer(self, text: AnyStr) -> Iterator[re.Match[AnyStr]]:
        return self.compiled.finditer(text)

    def findall(self, text: AnyStr) -> list[AnyStr]:
        return self.compiled.findall(text)

    def sub(self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], text: AnyStr,
            count: int = 0) -> AnyStr:
        return self.compiled.sub(repl, text, count)

    def split(self, text: AnyStr, maxsplit: int = 0) -> list[AnyStr]:
        return self.compiled.split(text, maxsplit)
