"""Operations of ``tianma chat``: a turn, feedback on it, the end of a dialogue."""

from __future__ import annotations

from tianma.operations.operation import Home, operation
from tianma.turn import Turn


@operation("chat.turn")
def chat(home: Home, user_id: str, text: str, dialogue_id: str) -> Turn:
    """One turn (``Runtime.chat``).

    Raises:
        ChatModelUnavailableError: the model failed; the message is still recorded.
    """
    return home.runtime().chat(user_id, text, dialogue_id=dialogue_id)


@operation("chat.feedback")
def feedback(home: Home, event_id: str, kind: str, text: str | None = None) -> str:
    """Like, dislike or a correction on a turn (``Runtime.feedback``); the signal's id."""
    return home.runtime().feedback(event_id, kind, text=text)


@operation("chat.end")
def end_dialogue(home: Home, dialogue_id: str) -> bool:
    """Mark a dialogue finished (``Runtime.end_dialogue``)."""
    return home.runtime().end_dialogue(dialogue_id)
