"""Online experiments (an admin's page: arms serve every user of the home): each experiment, and
per arm its units, turns, negative-signal, repeat and memory-use rates with 95 % intervals, and
median latency (:mod:`tianma.experiments.report`)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import BaseRoute

from tianma.errors import RecordNotFoundError
from tianma.serve.ui.common import Page, Ui, ui_route


def experiments(page: Page) -> Response:
    """Every experiment, the running one first, with how each arm did."""
    if not page.viewer.principal.admin:
        raise RecordNotFoundError("experiments are the home's: an admin's page / 实验页面仅管理员可见")
    rt = page.runtime
    reports = [rt.experiment_report(e.name) for e in rt.experiments()]
    reports.sort(key=lambda r: r.experiment.stopped_at is not None)
    return page.render("experiments.html", reports=reports)


def routes(ui: Ui) -> list[BaseRoute]:
    return [ui_route(ui, "/experiments", experiments, "ui_experiments")]
