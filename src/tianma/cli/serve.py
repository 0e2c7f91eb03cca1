"""``tianma serve``: the memory proxy for any Ollama or OpenAI client, with jobs and the review UI."""

from __future__ import annotations

from pathlib import Path

import typer

from tianma.cli.app import HomeOption, app, console, open_runtime, settings_from


@app.command()
def serve(
    host: str | None = typer.Option(None, "--host", help="Address to bind (default: serve.host, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", "-p", help="Port (default: serve.port, 11435)."),
    no_jobs: bool = typer.Option(False, "--no-jobs", help="Do not run the periodic jobs in this process."),
    home: Path | None = HomeOption,
) -> None:
    """Serve Ollama's API (and OpenAI's chat API) with memory; point your chat client here.

    把聊天客户端（Open WebUI、Chatbox……）的 Ollama 地址改成这里即可获得记忆。
    """
    import uvicorn

    from tianma.serve import create_app

    settings = settings_from(home)
    bind = host or settings.serve.host
    listen = port or settings.serve.port
    with open_runtime(settings) as rt:
        application = create_app(rt, host=bind, scheduler=False if no_jobs else None)
        console.print(
            f"tianma serve on http://{bind}:{listen} → Ollama at {settings.ollama.base_url}; "
            f"review UI: http://{bind}:{listen}/ui",
            markup=False, soft_wrap=True,
        )  # fmt: skip
        uvicorn.run(application, host=bind, port=listen, log_level="info", timeout_graceful_shutdown=30)
