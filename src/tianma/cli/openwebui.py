"""``tianma openwebui function``: the Open WebUI Function that sends its 👍/👎 to tianma."""

from __future__ import annotations

from importlib import resources

import typer

from tianma.cli.app import app

openwebui_app = typer.Typer(help="What tianma ships for Open WebUI.", no_args_is_help=True)
app.add_typer(openwebui_app, name="openwebui")
FUNCTION = "openwebui_feedback.py"


def function_source() -> str:
    """The Event Function's code, as installed with tianma (:mod:`tianma.integrations.openwebui_feedback`)."""
    return resources.files("tianma.integrations").joinpath(FUNCTION).read_text(encoding="utf-8")


@openwebui_app.command("function")
def function() -> None:
    """Print the Open WebUI Event Function that sends each 👍/👎 and its comment to tianma.

    Paste it in Open WebUI as admin: Admin Panel → Functions → New Function, save, and switch it on.
    """
    typer.echo(function_source(), nl=False)
