"""The review web UI at ``/ui`` (being built)."""

from __future__ import annotations

from starlette.routing import BaseRoute


def ui_routes() -> list[BaseRoute]:
    """Routes under ``/ui``."""
    return []
