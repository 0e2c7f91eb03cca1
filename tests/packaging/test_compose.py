"""compose.yaml, checked statically (no container runtime works on this machine): Ollama, tianma
and Open WebUI wired to each other with settings that exist, started in order of health."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from starlette.routing import Route

from tests.packaging.files import COMPOSE, ROOT, dockerfile_instructions, interpolate, setting_of, tool
from tianma.errors import ConfigError
from tianma.serve import openai_api
from tianma.serve.auth import Authenticator
from tianma.settings import ServeSettings, load_settings

KEY = "k3y" * 14
COMPOSE_DATA: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE_DATA["services"]


def environment(service: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """A service's environment as the container gets it, ``.env`` holding ``TIANMA_ADMIN_KEY``."""
    given = {"TIANMA_ADMIN_KEY": KEY} if env is None else env
    return {name: interpolate(str(value), given) for name, value in SERVICES[service]["environment"].items()}


def test_three_services_named_volumes_and_restart_policies() -> None:
    assert set(SERVICES) == {"ollama", "tianma", "open-webui"}
    declared = set(COMPOSE_DATA["volumes"])
    for name, service in SERVICES.items():
        assert service["restart"] == "unless-stopped", name
        used = {mount.split(":", 1)[0] for mount in service["volumes"]}
        assert used and used <= declared, f"{name} mounts {used - declared}, not named volumes"
    assert "tianma-data:/data" in SERVICES["tianma"]["volumes"]
    assert "ollama-models:/root/.ollama" in SERVICES["ollama"]["volumes"]
    assert "open-webui-data:/app/backend/data" in SERVICES["open-webui"]["volumes"]


def test_each_starts_once_what_it_calls_is_healthy() -> None:
    assert SERVICES["tianma"]["depends_on"] == {"ollama": {"condition": "service_healthy"}}
    assert SERVICES["open-webui"]["depends_on"] == {"tianma": {"condition": "service_healthy"}}
    assert SERVICES["ollama"]["healthcheck"]["test"][:2] == ["CMD", "ollama"]
    assert SERVICES["tianma"]["build"] == "."  # its healthcheck is the Dockerfile's
    assert any(i.keyword == "HEALTHCHECK" for i in dockerfile_instructions())


def test_every_tianma_variable_is_a_real_setting() -> None:
    names = [name for name in environment("tianma") if name.startswith("TIANMA_")]
    assert len(names) == 4
    for name in names:
        assert setting_of(name) is not None, f"{name} is no tianma setting"
    assert setting_of("TIANMA_OLLAMA__BASEURL") is None  # the check catches a misspelt one


def test_tianma_reads_the_compose_settings_and_may_listen_on_all_addresses(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:  # fmt: skip
    for name, value in environment("tianma").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TIANMA_HOME", str(tmp_path))
    settings = load_settings()
    assert settings.ollama.base_url == "http://ollama:11434"
    assert settings.ollama.model == "qwen2.5:7b"
    assert settings.serve.admin_keys == [KEY] and settings.serve.trust_openwebui_user is True
    Authenticator(settings.serve, settings.user, "0.0.0.0")  # the Dockerfile's --host: keys make it allowed
    with pytest.raises(ConfigError, match="needs API keys"):
        Authenticator(ServeSettings(), settings.user, "0.0.0.0")


def test_tianma_reaches_ollama_by_its_service_name_and_port() -> None:
    url = urlsplit(environment("tianma")["TIANMA_OLLAMA__BASE_URL"])
    assert (url.hostname, url.port) == ("ollama", 11434) and url.hostname in SERVICES


def test_open_webui_talks_to_tianma_with_its_key_and_forwards_chat_and_user() -> None:
    env = environment("open-webui")
    url = urlsplit(env["OPENAI_API_BASE_URL"])
    port = ServeSettings().port
    assert (url.hostname, url.port, url.path) == ("tianma", port, "/v1")
    assert SERVICES["tianma"]["ports"] == [f"{port}:{port}"]
    paths = [r for r in openai_api.routes() if isinstance(r, Route)]
    for path in ("/v1/chat/completions", "/v1/models"):  # what Open WebUI's OpenAI connection calls
        assert any(r.path_regex.fullmatch(path) for r in paths), path
    assert env["OPENAI_API_KEY"] == KEY  # the key tianma has as its admin key
    assert env["ENABLE_OPENAI_API"] == "true" and env["ENABLE_OLLAMA_API"] == "false"
    assert env["ENABLE_FORWARD_USER_INFO_HEADERS"] == "true"  # X-OpenWebUI-Chat-Id, X-OpenWebUI-User-Id
    assert SERVICES["open-webui"]["image"].startswith("ghcr.io/open-webui/open-webui:v0.12.")  # the version tested


def test_no_key_no_start() -> None:
    with pytest.raises(KeyError, match="TIANMA_ADMIN_KEY"):
        environment("tianma", env={})
    assert environment("tianma", env={"TIANMA_ADMIN_KEY": "x", "TIANMA_MODEL": "llama3"})["TIANMA_OLLAMA__MODEL"] == "llama3"


def test_docker_compose_accepts_the_file() -> None:
    exe = tool("docker-compose", "Debian: apt-get install docker-compose")
    env = {"PATH": "/usr/bin:/bin", "TIANMA_ADMIN_KEY": KEY}
    done = subprocess.run([exe, "-f", str(COMPOSE), "config"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    resolved = yaml.safe_load(done.stdout)
    assert resolved["services"]["tianma"]["environment"]["TIANMA_SERVE__ADMIN_KEYS"] == f'["{KEY}"]'
    unset = subprocess.run([exe, "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, env={"PATH": "/usr/bin:/bin"},
                           capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert unset.returncode != 0 and "TIANMA_ADMIN_KEY" in unset.stderr
