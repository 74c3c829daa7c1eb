"""`agentstate init`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentstate.cli import app
from agentstate.cli.common import JsonOption, emit, store_override

if TYPE_CHECKING:
    from rich.console import Console


@app.command()
def init(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Where to create the store (default: --dir / AGENTSTATE_DIR if set, else "
                 "the git work-tree root, or here)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Create .agentstate/ (config.toml, state.db, skills/ repository, .gitignore).

    Running it again creates whatever part is missing (a deleted skills registry comes back
    with the shipped skills restored; versions revoked here stay revoked) and otherwise
    changes nothing and says so.
    """
    from agentstate.maintenance.init import init_store
    from agentstate.maintenance.join import join, joinable

    # A clone whose .agentstate/ came with the repository: init is the same first use as
    # any other command's, shared facts imported (and checked before anything is made).
    committed = joinable(path if path is not None else store_override())
    joined = join(committed) if committed is not None else None
    result = init_store(target=path, override=store_override())
    if joined is not None:
        result.created = joined.created + [joined.facts()]
    from agentstate.tokens import warm_count_cache

    # The machine's token caches, built once (~0.5 s) here rather than by the first
    # `context` or `resume --budget`, which are meant to be quick.
    warm_count_cache()

    def human(console: Console, data: object) -> None:
        if result.changed:
            console.print(f"Initialised agentstate store in {result.path}")
            for item in result.created:
                console.print(f"  created {item}")
        else:
            console.print(f"agentstate store already initialised in {result.path}; nothing changed")

    emit({"path": str(result.path), "changed": result.changed, "created": result.created},
         as_json=as_json, human=human)
