from __future__ import annotations

from datetime import datetime
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


def test_the_dialogue_idle_limit_is_at_least_a_minute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert Settings(home=tmp_path).serve.dialogue_idle_minutes == 30
    monkeypatch.setenv("TIANMA_SERVE__DIALOGUE_IDLE_MINUTES", "90")
    assert Settings(home=tmp_path).serve.dialogue_idle_minutes == 90
    with pytest.raises(ConfigError, match=r"serve\.dialogue_idle_minutes"):
        load_settings(home=tmp_path, serve={"dialogue_idle_minutes": 0})


def test_the_machine_zone_keeps_its_dst_rules_and_a_bad_zone_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    zone = Settings(home=tmp_path).zone
    assert datetime(2026, 1, 10, tzinfo=zone).utcoffset() != datetime(2026, 7, 10, tzinfo=zone).utcoffset()
    assert Settings(home=tmp_path).zone_name == "Europe/Berlin"
    monkeypatch.setenv("TZ", "CST-8")  # a POSIX rule, not a zone name: the C library's offset now
    assert Settings(home=tmp_path).zone.utcoffset(None) is not None
    with pytest.raises(ConfigError, match=r"timezone"):
        load_settings(home=tmp_path, timezone="Mars/Olympus")
