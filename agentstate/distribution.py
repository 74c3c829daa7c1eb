"""What agentstate is as a distribution: its version, its name on the package index, and how
to install an optional extra.

Apart from the package's `__init__` (the library face, at the top of the layers) so that any
layer can read the version without importing the package root."""

__version__ = "0.1.0"

# The distribution's name (pyproject.toml). The command and the import package are
# `agentstate`, but that name on the package index belongs to an unrelated project: an
# install line must never name it bare (tests/cli/test_install_docs.py checks the docs).
DISTRIBUTION = "agentstate-cli"


def install_hint(extra: str, requirement: str) -> str:
    """How to add an optional extra's requirement to the environment agentstate runs in."""
    import sys

    return (f"{sys.executable} -m pip install '{requirement}' (the {extra!r} extra of "
            f"{DISTRIBUTION}; pipx: pipx inject {DISTRIBUTION} '{requirement}'; from a clone: "
            f"pip install '.[{extra}]')")
