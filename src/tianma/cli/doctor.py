"""``tianma doctor``: data home, a running server, store/index consistency, Ollama reachability and model.

Its exit status says what a script needs to know: 0 everything is fine; 1 the data home, the
store or the index needs attention (whatever Ollama's state); 3 memory is fine but Ollama is not
reachable or the chat model is missing (``tianma chat`` cannot answer; the memory commands and
``tianma demo`` work).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import httpx
import typer
from rich.table import Table
from rich.text import Text
from sqlalchemy.exc import SQLAlchemyError

from tianma.cli.app import HomeOption, app, console, plain, settings_from
from tianma.cli.connection import Connection, connect
from tianma.cli.home import Access, ReadOnlyHome, home_access
from tianma.errors import BackendError, BackendUnavailableError, ConfigError
from tianma.llm.ollama import http_options
from tianma.operations import memory as ops
from tianma.settings import Settings
from tianma.storage.backup import sqlite_file
from tianma.storage.schema import SCHEMA_VERSION, version_at


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fatal: bool = True
    """A failed fatal check (home, store, index) exits 1; a failed Ollama check alone exits 3."""


EXIT_OK, EXIT_MEMORY, EXIT_OLLAMA = 0, 1, 3
"""doctor's exit statuses (2 stays Click's: a wrong option)."""


def check_home(settings: Settings) -> tuple[Check, Access | None]:
    """Whether the home can be used (a writable folder, or one that can be created), and how."""
    home = settings.home.expanduser()
    try:
        access = home_access(settings)
    except ConfigError as exc:
        return Check("data home", False, str(exc)), None
    if access == "read-only":
        detail = (f"{home} is read-only: memory list, review and doctor work; chat, feedback, reflect and "
                  "serve need write access / 数据目录只读")  # fmt: skip
        return Check("data home", False, detail), access
    return Check("data home", True, str(home)), access


def schema_detail(settings: Settings) -> str:
    """The store's schema version against this tianma's (read without migrating anything)."""
    file = sqlite_file(settings.sql_url)
    if file is not None and not file.exists():
        return "not created yet / 尚未创建"
    try:
        found = version_at(settings.sql_url)
    except SQLAlchemyError as exc:
        return f"schema version unreadable ({exc.__class__.__name__})"
    if found is None:
        return f"empty (this tianma writes schema v{SCHEMA_VERSION})"
    if found < SCHEMA_VERSION:
        return f"schema v{found}: migrated to v{SCHEMA_VERSION} when opened for writing, after a backup / 打开时升级并先备份"
    return f"schema v{found}"


def index_detail(settings: Settings) -> str:
    """Which vector engine the home uses, and its library's version."""
    if settings.qdrant.url:
        return f"Qdrant server {settings.qdrant.url} (qdrant-client {_version('qdrant-client')})"
    return f"Qdrant Edge {settings.vectors_path} (qdrant-edge-py {_version('qdrant-edge-py')})"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def check_read_only_store(settings: Settings) -> list[Check]:
    """On a read-only home: whether the store can be read (the index is not checked: Qdrant's
    local mode takes a write lock on its folder)."""
    try:
        with ReadOnlyHome(settings) as home:
            users = home.store.users()
    except (ConfigError, BackendError) as exc:
        return [Check("memory store", False, str(exc))]
    return [
        Check("memory store", True, f"{settings.sql_url} (read-only, {len(users)} user(s)), {schema_detail(settings)}"),
        Check("index", False, "not checked: the data home is read-only / 只读，未检查索引", fatal=False),
    ]


def check_index(conn: Connection) -> list[Check]:
    """Per user: the ids SQL says both indexes hold against those they hold; vector writes left
    in the outbox."""
    checks = []
    for c in conn.call(ops.count_index):
        detail = f"{c.records} records, {c.vectors} vectors, {c.keywords} keyword entries"
        if not c.clean:
            wrong = {"missing vectors": c.missing_vectors, "orphan vectors": c.orphan_vectors,
                     "missing keyword entries": c.missing_keywords, "orphan keyword entries": c.orphan_keywords}  # fmt: skip
            shown = "; ".join(f"{len(ids)} {name} ({', '.join(i[:8] for i in ids[:3])}{'…' if len(ids) > 3 else ''})"
                              for name, ids in wrong.items() if ids)  # fmt: skip
            detail += f" — {shown} — run `tianma index repair`"
        checks.append(Check(f"index of {c.user_id}", c.clean, detail))
    pending = conn.call(ops.pending_vector_writes)
    if pending:
        checks.append(Check("vector outbox", False, f"{pending} vector write(s) not applied — run `tianma index repair`"))
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
    home, access = check_home(settings)
    checks = [home]
    if access == "read-only":
        checks.extend(check_read_only_store(settings))
    elif access == "writable":
        with connect(settings) as conn:
            if conn.server is not None:
                detail = f"{conn.server.url} (pid {conn.server.pid}); checked through it / 通过服务检查"
                checks.append(Check("tianma serve", True, detail))
            try:
                index = check_index(conn)  # opens the store first: created or migrated (after a backup)
            except BackendUnavailableError as exc:  # e.g. another process holds the vector index
                index = [Check("index", False, str(exc))]
            checks.append(Check("memory store", True, f"{settings.sql_url}, {schema_detail(settings)}"))
            checks.append(Check("vector index", True, index_detail(settings)))
            checks.extend(index)
    checks.extend(check_ollama(settings, transport))
    return checks


def exit_status(checks: list[Check]) -> int:
    """0 all passed; 1 a home, store or index check failed; 3 only Ollama or its model did."""
    if any(not c.ok and c.fatal for c in checks):
        return EXIT_MEMORY
    return EXIT_OLLAMA if any(not c.ok for c in checks) else EXIT_OK


@app.command()
def doctor(home: Path | None = HomeOption) -> None:
    """Check the data home, store/index consistency and Ollama.

    Exit status: 0 all is well; 1 the data home, store or index needs attention; 3 only Ollama
    is down or the chat model is missing (memory commands and `tianma demo` still work).
    退出码：0 正常；1 数据目录、记忆库或索引有问题；3 仅 Ollama 或模型不可用。
    """
    settings = settings_from(home)
    checks = run_checks(settings)
    table = Table(title="tianma doctor")
    for col in ("", "check", "detail"):
        table.add_column(col, overflow="fold")
    for c in checks:
        mark = Text("✓", style="green") if c.ok else Text("✗", "red") if c.fatal else Text("!", "yellow")
        table.add_row(mark, *plain(c.name, c.detail))
    console.print(table)
    status = exit_status(checks)
    if status != EXIT_OK:
        raise typer.Exit(status)
