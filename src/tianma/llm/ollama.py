"""The production chat model: ChatOllama against the configured daemon."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from tianma.settings import OllamaSettings


def create_ollama_chat_model(settings: OllamaSettings) -> BaseChatModel:
    """``ChatOllama`` with the settings' URL, model, timeout and temperature."""
    from langchain_ollama import ChatOllama

    return ChatOllama(
        model=settings.model,
        base_url=settings.base_url,
        temperature=settings.temperature,
        num_ctx=settings.num_ctx,
        client_kwargs={"timeout": settings.timeout_s},
    )
