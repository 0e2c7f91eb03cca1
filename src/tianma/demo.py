"""The scripted demo story: a user states their name and a rule, then asks about Saturday."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from tianma.llm.scripted import ScriptedChatModel


@dataclass(frozen=True, slots=True)
class DemoTurn:
    dialogue: str
    at: datetime
    text: str


STORY: tuple[DemoTurn, ...] = (
    DemoTurn("dialogue-1", datetime(2026, 11, 2, 20, 0, tzinfo=UTC), "你好，我叫李明，在杭州做软件工程师。"),
    DemoTurn(
        "dialogue-1", datetime(2026, 11, 2, 20, 1, tzinfo=UTC), "以后周末别给我安排提醒，我想好好休息。"
    ),
    DemoTurn("dialogue-1", datetime(2026, 11, 2, 20, 2, tzinfo=UTC), "今天先聊到这，谢谢。"),
    DemoTurn("dialogue-2", datetime(2026, 11, 6, 9, 0, tzinfo=UTC), "这周六帮我安排一下日程吧。"),
    DemoTurn("dialogue-2", datetime(2026, 11, 6, 9, 1, tzinfo=UTC), "对了，你还记得我叫什么名字吗？"),
)
"""Two dialogues four days apart; the second one never repeats what the first one said."""


def _memory_lines(system_prompt: str) -> list[str]:
    """The numbered lines under 【已知用户信息】 and 【用户偏好】 of a system prompt."""
    lines = []
    for heading in ("【已知用户信息】", "【用户偏好】"):
        block = system_prompt.split(heading, 1)
        for line in block[1].splitlines()[1:] if len(block) == 2 else []:
            if not re.match(r"^\d+\. ", line):
                break
            lines.append(line)
    return lines


def demo_reply(messages: Sequence[BaseMessage]) -> str:
    """A rule-based stand-in for an LLM that uses only what the prompt gives it."""
    system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
    question = next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")
    known = " ".join(_memory_lines(system))
    name = re.search(r"我叫([\u4e00-\u9fff]{2,3}?)[，,。 ]", known)
    if question.startswith("以后") or "别给我" in question:
        return "好的，记住了。"
    if "周六" in question or ("周末" in question and "安排" in question):
        if "周末别给我安排提醒" in known:
            return "你说过周末不要安排提醒，所以周六我不设任何提醒；需要的话我只列一份不带提醒的待办清单。"
        return "好的，周六上午 9 点提醒你晨跑，下午 3 点提醒你开会。"
    if "名字" in question:
        return f"记得，你叫{name.group(1)}。" if name else "抱歉，我还不知道你的名字。"
    return "你好！有什么可以帮你？" if "你好" in question else "好的。"


def create_demo_model() -> ScriptedChatModel:
    """The demo's scripted model (clearly not an LLM)."""
    return ScriptedChatModel(responder=demo_reply, model="tianma-demo-script")
