"""The review web UI at ``/ui``: memories, pending changes, strategies, reflection runs, the
learning curve and the decision tree of each turn — server-rendered HTML forms, no JavaScript.

Same keys as the API: a user sees only their own data; an admin key chooses any user
(``?user=``). See :mod:`tianma.serve.ui.common` for how a page is served.
"""

from __future__ import annotations

from datetime import UTC, tzinfo

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from tianma.serve.ui import (
    pages_experiments,
    pages_learning,
    pages_login,
    pages_memory,
    pages_review,
    pages_turns,
)
from tianma.serve.ui.common import STATIC, Ui


def ui_routes(zone: tzinfo = UTC) -> list[BaseRoute]:
    """Routes under ``/ui`` (relative to the mount point), with the stylesheet at ``/ui/static``;
    times and days are shown in ``zone``."""
    ui = Ui(zone)
    return [
        *pages_login.routes(ui),
        *pages_memory.routes(ui),
        *pages_review.routes(ui),
        *pages_learning.routes(ui),
        *pages_turns.routes(ui),
        *pages_experiments.routes(ui),
        Mount("/static", app=StaticFiles(directory=STATIC), name="ui_static"),
    ]
