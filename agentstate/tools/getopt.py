"""Reading a program's options the way GNU getopt_long does, so a rule sees what the program sees.

GNU tools accept any unambiguous prefix of a long option (`--split-s=` is `--split-string=`,
`--ch` is `--chdir`), bundle short flags (`-iS'curl x'` is `-i -S 'curl x'`), take a short
option's value attached or from the next word, and (for the wrappers this module reads, all
of which stop at their first operand) end the options at `--` or at the first word that is not
an option. A rule that compares strings as written misses every one of these spellings; this
parser is the one place they are undone. An option it does not know is an error (`Unreadable`):
what would run is then unknown, and the caller refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Unreadable(Exception):
    """A command's arguments could not be read, so what it runs is unknown."""


FLAG, VALUE, OPTIONAL = "flag", "value", "optional"


@dataclass(frozen=True)
class Option:
    name: str  # the long name (or "-x" for a short-only option)
    value: str | None
    end: int  # index in the arguments just after this option (and its value)


@dataclass(frozen=True)
class Spec:
    """One program's options: long names (without `--`) and their kind, short letters and
    the long name each stands for (a short option with no long form names itself)."""

    long: dict[str, str] = field(default_factory=dict)
    short: dict[str, str] = field(default_factory=dict)

    def kind(self, name: str) -> str:
        return self.long[name]


def long_option(program: str, written: str, spec: Spec) -> str:
    """The long option `--written` names: exact, else its unique prefix (GNU's rule)."""
    if written in spec.long:
        return written
    matches = [name for name in spec.long if name.startswith(written)]
    if len(matches) == 1 and written:
        return matches[0]
    if matches:
        raise Unreadable(f"{program} option '--{written}' is ambiguous "
                         f"({', '.join('--' + m for m in sorted(matches))})")
    raise Unreadable(f"{program} option '--{written}' is not one agentstate can read")


def parse(program: str, args: list[str], spec: Spec,
          dash_alone: str | None = None) -> tuple[list[Option], int]:
    """The options at the start of `args` and the index of the first operand. `dash_alone`:
    the option a lone `-` stands for (env's `-` is `-i`)."""
    found: list[Option] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            return found, i + 1
        if word == "-" and dash_alone:
            i += 1
            found.append(Option(dash_alone, None, i))
            continue
        if not word.startswith("-") or word == "-":
            return found, i
        if word.startswith("--"):
            written, eq, value = word[2:].partition("=")
            name = long_option(program, written, spec)
            kind = spec.kind(name)
            if kind == VALUE and not eq:
                if i + 1 >= len(args):
                    raise Unreadable(f"{program} option '--{name}' needs a value")
                i += 2
                found.append(Option(name, args[i - 1], i))
                continue
            if kind == FLAG and eq:
                raise Unreadable(f"{program} option '--{name}' takes no value")
            i += 1
            found.append(Option(name, value if eq else None, i))
            continue
        # A cluster of short options: flags, then perhaps one that takes a value (the rest of
        # the word, or the next word).
        j, step = 1, 1
        cluster: list[tuple[str, str | None]] = []
        while j < len(word):
            letter = word[j]
            if letter not in spec.short:
                raise Unreadable(f"{program} option '-{letter}' is not one agentstate can read")
            name = spec.short[letter]
            kind = spec.long.get(name, FLAG)
            if kind == FLAG:
                cluster.append((name, None))
                j += 1
                continue
            rest = word[j + 1:]
            if kind == OPTIONAL:  # a short optional value is only ever attached
                cluster.append((name, rest or None))
            elif rest:
                cluster.append((name, rest))
            elif i + 1 < len(args):
                cluster.append((name, args[i + 1]))
                step = 2
            else:
                raise Unreadable(f"{program} option '-{letter}' needs a value")
            break
        i += step
        found.extend(Option(name, value, i) for name, value in cluster)
    return found, i


def spec(flags: str = "", values: str = "", optional: str = "",
         short: dict[str, str] | None = None) -> Spec:
    """A Spec from space-separated long names by kind and a short → long map. A short
    option with no long form is named "-x" in both (so no `--` spelling can reach it)."""
    long = {name: FLAG for name in flags.split()}
    long.update({name: VALUE for name in values.split()})
    long.update({name: OPTIONAL for name in optional.split()})
    short = dict(short or {})
    for name in short.values():
        long.setdefault(name, FLAG)  # a short-only flag ("-x": no long spelling)
    return Spec(long, short)
