"""The production chat model: ChatOllama against the configured daemon."""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel

from tianma.settings import OllamaSettings


def is_loopback(base_url: str) -> bool:
    """Whether the URL points at this machine (then no HTTP proxy should be involved)."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def http_options(base_url: str, timeout_s: float) -> dict[str, Any]:
    """httpx client options: the timeout, and a direct connection to a local daemon.

    httpx honours ``HTTP(S)_PROXY`` even for 127.0.0.1, which breaks a local Ollama for users
    who have a proxy configured; a loopback URL therefore ignores the proxy environment.
    """
    return {"timeout": timeout_s, "trust_env": not is_loopback(base_url)}


def create_ollama_chat_model(settings: OllamaSettings) -> BaseChatModel:
    """``ChatOllama`` with the settings' URL, model, timeout and temperature."""
    from langchain_ollama import ChatOllama

    return ChatOllama(
        model=settings.model,
        base_url=settings.base_url,
        temperature=settings.temperature,
        num_ctx=settings.num_ctx,
        client_kwargs=http_options(settings.base_url, settings.timeout_s),
    )


def close_chat_model(model: BaseChatModel) -> None:
    """Close the HTTP connection pool of a ChatOllama (other models are left alone)."""
    client = getattr(getattr(model, "_client", None), "_client", None)
    close = getattr(client, "close", None)
    if callable(close):
        close()
