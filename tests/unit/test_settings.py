from __future__ import annotations

from pathlib import Path

import pytest

from tianma import ConfigError, Settings, load_settings


def test_env_prefix_and_nesting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIANMA_HOME", str(tmp_path))
    monkeypatch.setenv("TIANMA_OLLAMA__MODEL", "qwen3:4b")
    monkeypatch.setenv("TIANMA_NODES__RERANK", "my_pkg:my_rerank")
    settings = Settings()
    assert settings.home == tmp_path
    assert settings.ollama.model == "qwen3:4b"
    assert settings.nodes.rerank == "my_pkg:my_rerank"
    assert settings.sql_url == f"sqlite:///{tmp_path / 'tianma.db'}"


def test_toml_in_home_is_read_and_env_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "tianma.toml").write_text(
        '[ollama]\nmodel = "from-toml"\nbase_url = "http://nas:11434"\n', encoding="utf-8"
    )
    monkeypatch.setenv("TIANMA_OLLAMA__MODEL", "from-env")
    settings = Settings(home=tmp_path)
    assert settings.ollama.base_url == "http://nas:11434"
    assert settings.ollama.model == "from-env"


def test_bad_setting_names_the_field_and_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIANMA_OLLAMA__TIMEOUT_S", "soon")
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert "ollama.timeout_s" in message
    assert "TIANMA_OLLAMA__TIMEOUT_S" in message
    assert "\n" not in message


def test_more_than_five_injected_memories_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrieval\.max_injected"):
        load_settings(home=tmp_path, retrieval={"max_injected": 6})


def test_unknown_setting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ollama\.modle"):
        load_settings(home=tmp_path, ollama={"modle": "x"})


def test_broken_toml_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "tianma.toml").write_text("[ollama\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"tianma\.toml"):
        load_settings(home=tmp_path)
