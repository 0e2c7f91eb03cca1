"""Signing in to the review UI with an API key (kept in an HttpOnly, SameSite=Strict cookie)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from tianma.errors import UnauthorizedError
from tianma.serve.auth import KEY_COOKIE
from tianma.serve.context import context_of
from tianma.serve.ui.common import Page, Ui, ui_route

COOKIE_MAX_AGE_S = 30 * 24 * 3600
"""A NAS is used from a few trusted browsers: stay signed in for 30 days (logout clears it)."""


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def routes(ui: Ui) -> list[BaseRoute]:
    async def login(request: Request) -> Response:
        """GET: the key form; POST: check the key, set the cookie, go to the overview."""
        auth = context_of(request).auth
        base = _base(request)
        if auth.open:
            return RedirectResponse(f"{base}/", status_code=303)
        error = None
        if request.method == "POST":
            async with request.form() as form:
                value = form.get("key")
            key = value.strip() if isinstance(value, str) else ""
            try:
                auth.principal(key)
            except UnauthorizedError:
                error = "密钥无效 Unknown key." if key else "请输入密钥 Enter your key."
            else:
                response = RedirectResponse(f"{base}/", status_code=303)
                response.set_cookie(
                    KEY_COOKIE, key, max_age=COOKIE_MAX_AGE_S, path=base or "/", httponly=True,
                    samesite="strict", secure=request.url.scheme == "https",
                )  # fmt: skip
                return response
        else:
            try:
                auth.authenticate(request)
                return RedirectResponse(f"{base}/", status_code=303)
            except UnauthorizedError:
                pass
        return ui.templates.TemplateResponse(
            request, "login.html", {"base": base, "error": error}, status_code=401 if error else 200
        )

    def logout(page: Page) -> Response:
        response = RedirectResponse(f"{page.base}/login", status_code=303)
        response.delete_cookie(KEY_COOKIE, path=page.base or "/", httponly=True, samesite="strict")
        return response

    return [
        Route("/login", login, methods=["GET", "POST"], name="ui_login"),
        ui_route(ui, "/logout", logout, "ui_logout", methods=["POST"]),
    ]
