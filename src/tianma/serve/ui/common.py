"""What every page of the review UI shares: who is looking, whose data, templates, forms, links.

Each page is a sync function ``(page: Page) -> Response`` run in Starlette's thread pool (the
runtime is synchronous and takes a lock); :func:`ui_route` wraps it with authentication, the
form token check and the mapping of errors to pages (404 for a missing *or foreign* id).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from tianma.errors import ForbiddenError, InvalidInputError, RecordNotFoundError, UnauthorizedError
from tianma.serve.auth import Principal
from tianma.serve.context import context_of
from tianma.settings import describe_zone
from tianma.storage.records import MemoryRecord
from tianma.storage.schema import as_aware

if TYPE_CHECKING:
    from tianma.runtime import Runtime

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"
PER_PAGE = 50
TOKEN_FIELD = "token"

DONE: dict[str, str] = {
    "approved": "已批准 Approved",
    "rejected": "已拒绝 Rejected",
    "forgotten": "已彻底删除 Forgotten — really deleted",
    "edited": "已保存为新版本 Saved as a new version",
    "rolled_back": "已回滚（新版本）Rolled back, as a new version",
    "undone": "已撤销整次运行 The whole run was undone",
    "forgot_user": "已彻底删除这个用户的全部记录 Everything of this user was forgotten — really deleted",
}
"""Messages shown after a POST-redirect-GET (only these codes: no text comes from the URL)."""


class LoginRequiredError(UnauthorizedError):
    """Keys are configured and the request carries none (or an unknown one)."""


class FormTokenError(ForbiddenError):
    """A POST without this server's form token (another site, or a form from before a restart)."""


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking, and whose data the page shows."""

    principal: Principal
    user: str
    """The user whose data is shown: the caller's own, or the one an admin chose."""
    users: tuple[str, ...]
    """Users an admin may choose from (empty for everyone else)."""
    keyless: bool
    """No keys are configured (a loopback single-user server): no login, no logout."""

    def can_see(self, owner: str) -> bool:
        """Whether data of ``owner`` may be shown (an admin sees everyone's)."""
        return self.principal.admin or owner == self.principal.user_id


class Ui:
    """Templates and the form-token secret of one application (made by ``ui_routes``); times are
    shown in ``zone`` (the users' time zone, ``Settings.zone``), which every page names."""

    def __init__(self, zone: tzinfo = UTC) -> None:
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, undefined=jinja2.StrictUndefined
        )
        env.filters.update(
            dt=functools.partial(format_time, zone=zone), short=short_id, pct=percent, num=number
        )
        env.globals["zone_name"] = describe_zone(zone)
        self.zone = zone
        self.templates = Jinja2Templates(env=env)
        self._secret = secrets.token_bytes(32)

    def token(self, request: Request) -> str:
        """The form token of the caller's key: a POST must carry it (cross-site forms cannot read it)."""
        key = context_of(request).auth.key_of(request) or ""
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    def viewer(self, request: Request) -> Viewer:
        """The caller and the user whose data is shown.

        Raises:
            LoginRequiredError: keys are configured and none (or an unknown one) was sent.
        """
        ctx = context_of(request)
        try:
            principal = ctx.auth.authenticate(request)
        except UnauthorizedError as exc:
            raise LoginRequiredError(str(exc)) from exc
        if not principal.admin:
            return Viewer(principal, principal.user_id, (), ctx.auth.open)
        chosen = request.query_params.get("user", "").strip() or principal.user_id
        known = set(ctx.runtime.store.users())
        users = sorted(known | {principal.user_id, chosen})  # the chosen one too, also once forgotten
        return Viewer(principal, chosen, tuple(users), ctx.auth.open)


@dataclass(frozen=True)
class Page:
    """One request to a page of the UI, once its caller is known."""

    ui: Ui
    request: Request
    viewer: Viewer
    form: Mapping[str, str] = field(default_factory=dict)

    @property
    def runtime(self) -> Runtime:
        return context_of(self.request).runtime

    @property
    def base(self) -> str:
        """Where the UI is mounted (``/ui``, behind any root path)."""
        return str(self.request.scope.get("root_path", "")).rstrip("/")

    def link(self, path: str, **params: Any) -> str:
        """A URL of the UI; an admin's choice of user travels along."""
        query = {k: v for k, v in params.items() if v not in (None, "")}
        if self.viewer.principal.admin and "user" not in query:
            query["user"] = self.viewer.user
        return f"{self.base}{path}" + (f"?{urlencode(query)}" if query else "")

    def arg(self, name: str, default: str = "") -> str:
        return self.request.query_params.get(name, default).strip()

    def page_number(self) -> int:
        try:
            return max(1, int(self.arg("page", "1")))
        except ValueError:
            return 1

    def render(
        self, template: str, status_code: int = 200, *, done: str | None = None, **context: Any
    ) -> Response:
        """``template`` with ``context``; ``done``: the flash message (default: the one :data:`DONE`
        has for the ``done`` code in the URL)."""
        context.update(
            page=self, viewer=self.viewer, link=self.link, base=self.base,
            token=self.ui.token(self.request), token_field=TOKEN_FIELD, done=done or DONE.get(self.arg("done")),
        )  # fmt: skip
        response = self.ui.templates.TemplateResponse(
            self.request, template, context, status_code=status_code
        )
        response.headers["Cache-Control"] = "no-store"
        return response

    def redirect(self, path: str, **params: Any) -> Response:
        """POST-redirect-GET."""
        return RedirectResponse(self.link(path, **params), status_code=303)

    def record(self, record_id: str) -> MemoryRecord:
        """A record the viewer may see.

        Raises:
            RecordNotFoundError: no such record, or another user's (the same 404 either way).
        """
        record = self.runtime.store.get(record_id)
        if not self.viewer.can_see(record.user_id):
            raise RecordNotFoundError(record_id)
        return record

    def owned(self, owner: str | None) -> None:
        """Raises RecordNotFoundError unless the viewer may see data of ``owner``."""
        if owner is None or not self.viewer.can_see(owner):
            raise RecordNotFoundError("not found")

    def as_owner(self, owner: str) -> Page:
        """This page, looking at ``owner``'s data (an admin following an id of another user)."""
        if owner == self.viewer.user:
            return self
        viewer = Viewer(self.viewer.principal, owner, self.viewer.users, self.viewer.keyless)
        return Page(self.ui, self.request, viewer, self.form)


@dataclass(frozen=True, slots=True)
class Pager:
    """One page of a long list."""

    number: int
    total: int
    per_page: int = PER_PAGE
    exact: bool = True
    """False when ``total`` only says whether a next page exists (the count is not shown)."""

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.per_page


Handler = Callable[[Page], Response]


def ui_route(ui: Ui, path: str, handler: Handler, name: str, methods: Sequence[str] = ("GET",)) -> Route:
    """A route running ``handler`` in the thread pool once the caller is known (and, for a POST,
    once the form token checks out)."""

    async def endpoint(request: Request) -> Response:
        base = str(request.scope.get("root_path", "")).rstrip("/")
        try:
            viewer = await run_in_threadpool(ui.viewer, request)
            form: dict[str, str] = {}
            if request.method == "POST":
                async with request.form() as data:
                    form = {k: v for k, v in data.items() if isinstance(v, str)}
                if not hmac.compare_digest(form.get(TOKEN_FIELD, ""), ui.token(request)):
                    raise FormTokenError("the form token is missing or stale")
            return await run_in_threadpool(handler, Page(ui, request, viewer, form))
        except LoginRequiredError:
            return RedirectResponse(f"{base}/login", status_code=303)
        except FormTokenError:
            return error_page(
                ui,
                request,
                403,
                "表单已过期，请刷新页面后重试。The form expired: reload the page and try again.",
            )
        except RecordNotFoundError:
            return error_page(ui, request, 404, "找不到 Not found.")
        except InvalidInputError as exc:
            return error_page(ui, request, 400, str(exc))

    return Route(path, endpoint, methods=list(methods), name=name)


def error_page(ui: Ui, request: Request, status: int, message: str) -> Response:
    """A plain page saying what went wrong (no navigation data: the caller may be unknown)."""
    base = str(request.scope.get("root_path", "")).rstrip("/")
    return ui.templates.TemplateResponse(
        request, "error.html", {"status": status, "message": message, "base": base}, status_code=status
    )


def format_time(value: datetime | None, zone: tzinfo = UTC) -> str:
    """``2026-05-04 18:00``: a stored (UTC) time in ``zone``, or an em dash."""
    return "—" if value is None else as_aware(value).astimezone(zone).strftime("%Y-%m-%d %H:%M")


def short_id(value: str | None) -> str:
    return (value or "")[:8]


def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def number(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)
