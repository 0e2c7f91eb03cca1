"""``tianma chat`` as a user drives it, against the Ollama stand-in."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tianma.cli.app import app
from tianma.testing.ollama_standin import OllamaStandin

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture
def env(tmp_path: Path, ollama_standin: OllamaStandin) -> dict[str, str]:
    ollama_standin.reply = lambda messages: "好的，我记住了。"
    return {
        "TIANMA_HOME": str(tmp_path / "home"),
        "TIANMA_OLLAMA__BASE_URL": ollama_standin.base_url,
        "TIANMA_OLLAMA__MODEL": next(iter(ollama_standin.models)),
        "TIANMA_EMBEDDER__THREADS": "1",
    }


def test_a_chat_session_with_feedback_why_and_new(env: dict[str, str], ollama_standin: OllamaStandin) -> None:
    script = "\n".join(
        [
            "我养了一只叫豆豆的柯基。",
            "/like",
            "/new",
            "我的狗叫什么名字？",
            "/why",
            "/fix 它是柯基",
            "/memories",
            "/quit",
        ]
    )
    result = runner.invoke(app, ["chat", "--user", "ann"], input=script + "\n", env=env)
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.count("tianma> 好的，我记住了。") == 2
    assert "recorded like" in out and "recorded correction" in out and "new dialogue" in out
    why = out.split("why / 依据", 1)[1]
    assert "我养了一只叫豆豆的柯基。" in why.split("recorded correction", 1)[0]
    second_prompt = ollama_standin.requests_to("/api/chat")[-1].body["messages"][0]["content"]
    # in the data about the user: resident as a lasting statement (it is one: a fact about me)
    about_user = second_prompt.split("以下是关于这位用户的资料", 1)[1]
    assert "豆豆" in about_user and ("【用户偏好】" in about_user or "【已知用户信息】" in about_user)
    memories = out.split("last 2 of 2", 1)[1]
    assert "豆豆" in memories and "我的狗叫什么名字" in memories


def test_a_chat_model_failure_is_one_line_and_the_session_goes_on(
    env: dict[str, str], ollama_standin: OllamaStandin
) -> None:
    env = {**env, "TIANMA_OLLAMA__MODEL": "not-pulled:1b"}
    result = runner.invoke(app, ["chat"], input="你好\n/quit\n", env=env)
    assert result.exit_code == 0, result.output
    assert "ollama pull not-pulled:1b" in result.output and "your message was saved" in result.output
    assert "Traceback" not in result.output
