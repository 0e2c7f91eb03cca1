"""``tianma doctor``: data home, a running server, store/index consistency, Ollama reachability and model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx
import typer
from rich.table import Table

from tianma.cli.app import HomeOption, app, console, settings_from
from tianma.cli.connection import Connection, connect
from tianma.errors import BackendUnavailableError
from tianma.llm.ollama import http_options
from tianma.operations import memory as ops
from tianma.settings import Settings


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fatal: bool = True
    """A failed fatal check makes doctor exit non-zero; Ollama checks only warn."""


def check_home(settings: Settings) -> Check:
    home = settings.home.expanduser()
    probe = home / ".doctor-probe"
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        return Check("data home", False, f"{home} is not writable: {exc}")
    return Check("data home", True, str(home))


def check_index(conn: Connection) -> list[Check]:
    """Per user: active indexable records in SQL vs dense vectors vs keyword entries."""
    checks = []
    for c in conn.call(ops.count_index):
        ok = c.records == c.vectors == c.keywords
        detail = f"{c.records} records, {c.vectors} vectors, {c.keywords} keyword entries"
        checks.append(
            Check(f"index of {c.user_id}", ok, detail if ok else detail + " — run `tianma index rebuild`")
        )
    return checks or [Check("index", True, "empty store")]


def check_ollama(settings: Settings, transport: httpx.BaseTransport | None = None) -> list[Check]:
    base = settings.ollama.base_url
    model = settings.ollama.model
    try:
        with httpx.Client(base_url=base, transport=transport, **http_options(base, 5.0)) as client:
            version = client.get("/api/version").json().get("version", "?")
            tags = client.get("/api/tags").json().get("models", [])
    except (httpx.HTTPError, ValueError) as exc:
        hint = "start it with `ollama serve`, or set TIANMA_OLLAMA__BASE_URL; memory commands and `tianma demo` work without it"
        return [
            Check("ollama", False, f"not reachable at {base} ({exc.__class__.__name__}); {hint}", fatal=False)
        ]
    names = {str(m.get(key, "")).lower() for m in tags for key in ("name", "model")}
    present = model.lower() in names or f"{model.lower()}:latest" in names
    found = Check("ollama", True, f"{base}, version {version}", fatal=False)
    detail = f"{model} is installed" if present else f"{model} is missing: run `ollama pull {model}`"
    return [found, Check("chat model", present, detail, fatal=False)]


def run_checks(settings: Settings, transport: httpx.BaseTransport | None = None) -> list[Check]:
    """Every check, in order; the store and index checks go through a running server (it holds
    the index), else open the runtime."""
    checks = [check_home(settings)]
    if checks[0].ok:
        with connect(settings) as conn:
            if conn.server is not None:
                detail = f"{conn.server.url} (pid {conn.server.pid}); checked through it / 通过服务检查"
                checks.append(Check("tianma serve", True, detail))
            checks.append(Check("memory store", True, settings.sql_url))
            try:
                checks.extend(check_index(conn))
            except BackendUnavailableError as exc:  # e.g. another process holds the vector index
                checks.append(Check("index", False, str(exc)))
    checks.extend(check_ollama(settings, transport))
    return checks


@app.command()
def doctor(home: Path | None = HomeOption) -> None:
    """Check the data home, store/index consistency and Ollama."""
    settings = settings_from(home)
    checks = run_checks(settings)
    table = Table(title="tianma doctor")
    for col in ("", "check", "detail"):
        table.add_column(col, overflow="fold")
    for c in checks:
        mark = "[green]✓[/]" if c.ok else ("[red]✗[/]" if c.fatal else "[yellow]![/]")
        table.add_row(mark, c.name, c.detail)
    console.print(table)
    if any(not c.ok and c.fatal for c in checks):
        raise typer.Exit(1)
