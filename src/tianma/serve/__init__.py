"""``tianma serve``: an Ollama- and OpenAI-compatible memory proxy, the scheduler and the review UI."""

from __future__ import annotations

from tianma.serve.app import create_app

__all__ = ["create_app"]
