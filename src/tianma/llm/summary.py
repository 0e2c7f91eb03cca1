"""The rolling five-key summary written by the chat model (with a deterministic fallback)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict

from tianma.llm.structured import at_low_temperature, call_structured
from tianma.memory.shortterm import summarise

SUMMARY_PROMPT = """把下面较早的对话压缩成滚动摘要，只输出 JSON，五个键：
topic（话题）、user_view（用户的观点和要求）、decision（助理的决定或给出的答案）、open_items（未解决的问题）、emotion（用户情绪：注意“算了”“就这样吧”通常是不耐烦，不是满意）。
Compress the earlier dialogue below into a rolling summary; JSON only, with these five keys. Keep each value short."""


class RollingSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    user_view: str
    decision: str
    open_items: str
    emotion: str


def summarise_with_model(
    model: BaseChatModel, turns: Sequence[Sequence[AnyMessage]], previous: dict[str, str] | None
) -> dict[str, str]:
    """The model's five-key summary of ``turns`` merged with ``previous``; the deterministic
    summary when the model fails or answers with anything but the five keys."""
    lines = []
    for turn in turns:
        for m in turn:
            who = "用户" if isinstance(m, HumanMessage) else "助理" if isinstance(m, AIMessage) else "system"
            lines.append(f"{who}: {' '.join(str(m.content).split())}")
    body = "\n".join(lines)
    if previous:
        body = f"此前的摘要 / previous summary: {previous}\n\n{body}"
    result = call_structured(at_low_temperature(model), [SystemMessage(SUMMARY_PROMPT), HumanMessage(body)],
                             RollingSummary, retries=1)  # fmt: skip
    if result.value is None:
        return summarise(turns, previous)
    return result.value.model_dump()
