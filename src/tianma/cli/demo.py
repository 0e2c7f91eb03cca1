"""``tianma demo``: the scripted story through the real runtime, no Ollama needed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import typer
from rich.panel import Panel
from rich.text import Text

from tianma.cli.app import app, console, open_runtime, settings_from
from tianma.cli.chat import why_table
from tianma.cli.connection import require_no_server
from tianma.cli.home import require_writable
from tianma.cli.memory import records_table
from tianma.demo import STORY, create_demo_model


@app.command()
def demo(
    home: Path | None = typer.Option(
        None, "--home", help="Keep the demo's data here (default: a temporary folder)."
    ),
) -> None:
    """Show cross-dialogue memory with a scripted model (a demo, not a real LLM)."""
    console.print(
        Panel(
            "DEMO — replies come from a built-in script, not an LLM; memory, retrieval and the turn graph are real.\n"
            "演示 — 回复来自内置脚本而非大模型；记忆、检索与对话图都是真实运行的。",
            style="yellow",
        )
    )
    with tempfile.TemporaryDirectory(prefix="tianma-demo-") as tmp:
        settings = settings_from(home or Path(tmp))
        settings.telemetry.exporter = "none"
        require_no_server(settings, "tianma demo")  # its scripted model needs a runtime of its own
        require_writable(settings)
        with open_runtime(settings, chat_model=create_demo_model()) as rt:
            current = None
            for step in STORY:
                if step.dialogue != current:
                    if current is not None:
                        rt.end_dialogue(current, at=step.at)
                    current = step.dialogue
                    console.rule(Text(f"{step.dialogue}  {step.at:%Y-%m-%d}"))
                turn = rt.chat("demo-user", step.text, dialogue_id=step.dialogue, at=step.at)
                console.print(Text.assemble(("user>", "bold cyan"), " ", step.text))
                console.print(Text.assemble(("tianma>", "bold green"), " ", turn.reply))
                if turn.memories or turn.resident:
                    console.print(why_table(turn))
            console.rule("stored / 已存储")
            console.print(records_table(rt.memories("demo-user", kind="event"), "events of demo-user"))
