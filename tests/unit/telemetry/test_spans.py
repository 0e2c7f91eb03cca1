"""content_capture: what spans record of a text, by telemetry.capture_content and guardrails.pii_redaction."""

from __future__ import annotations

from tianma.settings import Settings
from tianma.telemetry.spans import content_capture

MESSAGE = "我的手机号是13812345678，邮箱 alice@example.com，周末提醒我给她回信"


def settings(capture: bool, pii_redaction: bool) -> Settings:
    return Settings(telemetry={"capture_content": capture}, guardrails={"pii_redaction": pii_redaction})


def test_nothing_is_captured_when_capture_content_is_off() -> None:
    assert content_capture(settings(False, True)) is None
    assert content_capture(settings(False, False)) is None


def test_captured_text_is_redacted_like_a_stored_event() -> None:
    capture = content_capture(settings(True, True))
    assert capture is not None
    assert capture(MESSAGE) == "我的手机号是[手机号/phone]，邮箱 [邮箱/email]，周末提醒我给她回信"


def test_the_user_asking_to_keep_a_detail_keeps_it_as_the_event_does() -> None:
    capture = content_capture(settings(True, True))
    assert capture is not None
    assert capture("记住我的手机号13812345678") == "记住我的手机号13812345678"


def test_with_redaction_off_the_text_is_captured_as_written() -> None:
    capture = content_capture(settings(True, False))
    assert capture is not None
    assert capture(MESSAGE) == MESSAGE
