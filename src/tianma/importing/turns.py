"""Messages as the turns tianma records: a user message with the assistant's answer as its reply
(as a live turn is stored), in time order across dialogues, cut into batches for the store."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tianma.importing.messages import ImportedMessage

BATCH_TURNS = 200
BATCH_CHARS = 500_000
"""A batch stays under the admin API's body limit (``serve.max_body_bytes``, 4 MiB) even when
every character is sent as a six-byte JSON escape."""


@dataclass(frozen=True, slots=True)
class ImportTurn:
    """A user message and the answer that followed it (or an assistant message no user message
    preceded: a greeting)."""

    message: ImportedMessage
    reply: str | None = None
    reply_ids: tuple[str, ...] = ()
    """External ids of the assistant messages folded into ``reply``."""


def turns_of(messages: Sequence[ImportedMessage]) -> list[ImportTurn]:
    """Pair each user message with the assistant messages after it in its dialogue; oldest first
    (a stable sort: messages of one time keep their file order)."""
    turns: list[ImportTurn] = []
    open_turn: dict[str, int] = {}
    """dialogue → index in ``turns`` of its latest user message."""
    for message in messages:
        at = open_turn.get(message.dialogue_id)
        if message.role == "assistant" and at is not None:
            turn = turns[at]
            reply = message.text if turn.reply is None else f"{turn.reply}\n\n{message.text}"
            turns[at] = ImportTurn(turn.message, reply, (*turn.reply_ids, message.external_id))
            continue
        if message.role == "user":
            open_turn[message.dialogue_id] = len(turns)
        turns.append(ImportTurn(message))
    order = sorted(range(len(turns)), key=lambda i: turns[i].message.at)
    return [turns[i] for i in order]


def batches(turns: Sequence[ImportTurn]) -> Iterator[list[ImportTurn]]:
    """Consecutive runs of at most :data:`BATCH_TURNS` turns and about :data:`BATCH_CHARS` characters."""
    batch: list[ImportTurn] = []
    size = 0
    for turn in turns:
        length = len(turn.message.text) + len(turn.reply or "")
        if batch and (len(batch) >= BATCH_TURNS or size + length > BATCH_CHARS):
            yield batch
            batch, size = [], 0
        batch.append(turn)
        size += length
    if batch:
        yield batch
