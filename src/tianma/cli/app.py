"""The Typer application, shared console and settings/runtime helpers for sub-commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from tianma.runtime import Runtime
from tianma.settings import Settings, load_settings

app = typer.Typer(
    name="tianma",
    help="tianma（天马）: a personal assistant that remembers you — local, private, no GPU.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
memory_app = typer.Typer(help="See, show and forget what is remembered.", no_args_is_help=True)
index_app = typer.Typer(help="The vector and keyword indexes (derived from SQL).", no_args_is_help=True)
app.add_typer(memory_app, name="memory")
app.add_typer(index_app, name="index")
console = Console(highlight=False)


def settings_from(home: Path | None) -> Settings:
    """Settings from the environment and ``tianma.toml``, with ``--home`` on top."""
    overrides: dict[str, Any] = {} if home is None else {"home": home}
    return load_settings(**overrides)


@contextmanager
def open_runtime(settings: Settings, **kwargs: Any) -> Iterator[Runtime]:
    """A Runtime for one command, tracing configured (spans kept in ``<home>/spans.db`` unless
    ``telemetry.local_store`` is off), closed afterwards."""
    from tianma.telemetry.setup import configure_tracing

    configure_tracing(settings.telemetry, settings.spans_path if settings.telemetry.local_store else None)
    with Runtime(settings, **kwargs) as rt:
        yield rt


HomeOption = typer.Option(None, "--home", help="Data home (default: $TIANMA_HOME or ~/.tianma).")
UserOption = typer.Option(None, "--user", "-u", help="User id (default: setting `user`).")
AllUsersOption = typer.Option(None, "--user", "-u", help="Only this user (default: every user).")
