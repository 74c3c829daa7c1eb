"""`make bench`: run every bench/bench_*.py module's `main()` in one process run.

Benchmarks measure; tests assert behaviour. Each module prints its own table, with ratios
taken in the same run (these machines are shared and noisy).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

HERE = Path(__file__).parent


def precompile() -> None:
    """Byte-compile the package first, as an installed wheel is.

    With PYTHONDONTWRITEBYTECODE set (some shells and CI images set it) an editable checkout
    never gets .pyc files, and every measured command would pay ~70 ms of compiling source
    that a real installation does not.
    """
    import compileall

    compileall.compile_dir(str(HERE.parent / "agentstate"), quiet=1)


def main() -> int:
    sys.path.insert(0, str(HERE.parent))
    precompile()
    selected = set(sys.argv[1:])
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem
        if selected and name.removeprefix("bench_") not in selected:
            continue
        print(f"== {name}")
        module = importlib.import_module(f"bench.{name}")
        module.main()
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
