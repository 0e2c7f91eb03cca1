"""The Typer application, shared console and settings/runtime helpers for sub-commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from tianma.backups import package_version
from tianma.errors import ConfigError
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
console = Console(highlight=False, emoji=False)
"""The CLI's console. No emoji codes: a stored ``:smile:`` is printed as typed, like the rest."""


def _print_version(requested: bool) -> None:
    if requested:
        console.print(f"tianma {package_version()}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False, "--version", "-V", callback=_print_version, is_eager=True, help="Print tianma's version and exit / 显示版本号。"
    ),
) -> None:
    """The options of ``tianma`` itself, before any command (the app's help text is the Typer's)."""


def plain(*values: object) -> tuple[Text, ...]:
    """Each value as literal text, for table cells and other renderables: user messages, model
    replies and stored memories may hold ``[/b]``, ``[x]`` or ``list[i]``, which Rich would read as
    markup (a crash, or text that silently vanishes) if they were passed as strings."""
    return tuple(Text(str(value)) for value in values)


def settings_from(home: Path | None) -> Settings:
    """Settings from the environment and ``tianma.toml``, with ``--home`` on top.

    Raises:
        ConfigError: a setting is invalid, or ``<home>/tianma.toml`` cannot be read.
    """
    overrides: dict[str, Any] = {} if home is None else {"home": home}
    try:
        return load_settings(**overrides)
    except OSError as exc:  # the home's folder (or its tianma.toml) this user may not read
        raise ConfigError(
            f"cannot read {exc.filename or 'the settings'}: {exc.strerror or exc}; point --home or "
            "TIANMA_HOME at a folder you can use / 无法读取数据目录"
        ) from exc


@contextmanager
def open_runtime(settings: Settings, **kwargs: Any) -> Iterator[Runtime]:
    """A Runtime for one command, tracing configured (spans kept in ``<home>/spans.db`` unless
    ``telemetry.local_store`` is off), closed afterwards."""
    from tianma.telemetry.setup import configure_tracing

    configure_tracing(settings.telemetry, settings.spans_target if settings.telemetry.local_store else None)
    with MoveProgress() as progress, Runtime(settings, index_progress=progress, **kwargs) as rt:
        progress.close()
        yield rt


class MoveProgress:
    """A progress bar shown only if the runtime brings an older home up to date (its vectors
    moved into Qdrant Edge, its records tagged)."""

    def __init__(self) -> None:
        self._shown: tuple[Progress, TaskID] | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._shown is None:
            columns = (TextColumn("updating the data home / 正在升级数据目录"), BarColumn(),
                       MofNCompleteColumn(), TimeElapsedColumn())  # fmt: skip
            bar = Progress(*columns, console=console)
            bar.start()
            self._shown = (bar, bar.add_task("update", total=total))
        bar, task = self._shown
        bar.update(task, completed=done, total=total)

    def close(self) -> None:
        if self._shown is not None:
            self._shown[0].stop()
            self._shown = None

    def __enter__(self) -> MoveProgress:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


HomeOption = typer.Option(None, "--home", help="Data home (default: $TIANMA_HOME or ~/.tianma).")
UserOption = typer.Option(None, "--user", "-u", help="User id (default: setting `user`).")
AllUsersOption = typer.Option(None, "--user", "-u", help="Only this user (default: every user).")
