"""The ``tianma`` command line: the edge that reads Settings and wires everything."""

from __future__ import annotations

import sys

from tianma.cli import (  # noqa: F401  (sub-commands register on import)
    backup,
    bench,
    chat,
    demo,
    doctor,
    experiment,
    export,
    importing,
    jobs,
    learning,
    memory,
    migrate,
    openwebui,
    review,
    serve,
    worker,
)
from tianma.cli.app import app, console
from tianma.errors import TianmaError

__all__ = ["app", "main"]


def main() -> None:
    """Entry point: one clear line for expected failures, never a traceback."""
    try:
        app()
    except TianmaError as exc:
        console.print(f"tianma: {exc}", style="red", soft_wrap=True, markup=False)
        sys.exit(1)
