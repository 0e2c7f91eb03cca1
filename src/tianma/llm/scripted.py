"""A scripted chat model: canned or computed replies, for the demo and for tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

Responder = Callable[[Sequence[BaseMessage]], str]


class ScriptedChatModel(BaseChatModel):
    """Replies from a list (in order, cycling) or from a function of the prompt.

    Every prompt it receives is kept in ``prompts`` so a test can assert on it.
    A reply that is an ``Exception`` instance is raised instead of returned.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: list[str | Exception] = Field(default_factory=list)
    responder: Responder | None = None
    model: str = "scripted"
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.prompts.append(list(messages))
        if self.responder is not None:
            text = self.responder(messages)
        elif self.replies:
            reply = self.replies[(len(self.prompts) - 1) % len(self.replies)]
            if isinstance(reply, Exception):
                raise reply
            text = reply
        else:
            text = "OK"
        chars_in = sum(len(str(m.content)) for m in messages)
        message = AIMessage(
            text,
            usage_metadata={
                "input_tokens": chars_in // 2,
                "output_tokens": len(text) // 2,
                "total_tokens": chars_in // 2 + len(text) // 2,
            },
            response_metadata={"model_name": self.model, "done_reason": "stop"},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
