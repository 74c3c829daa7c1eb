"""What reading and validating a skill folder found: one problem per file and line, like a
compiler's, so the validator works as a pre-commit hook and in editors."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Problem:
    file: str
    line: int | None
    rule: str
    message: str
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message} [{self.rule}]"


@dataclass
class ValidationReport:
    path: str
    name: str
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


class ProblemCollector:
    """Gathers the problems found while reading a skill folder (errors and warnings)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.problems: list[Problem] = []

    def error(self, file: str, line: int | None, rule: str, message: str) -> None:
        self.problems.append(Problem(f"{self.display}/{file}", line, rule, message))

    def warn(self, file: str, line: int | None, rule: str, message: str) -> None:
        self.problems.append(Problem(f"{self.display}/{file}", line, rule, message, "warning"))
