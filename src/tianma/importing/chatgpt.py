"""ChatGPT's data export (``conversations.json``, alone or in the export's zip).

The file is a list of conversations. Each holds a tree of ``mapping`` nodes (``parent``,
``children``, ``message``) because a regenerated or edited message starts a new branch; the
conversation as the user last saw it is the branch that ends at ``current_node``, followed from
there to the root. Only text the user or the assistant wrote is read: system prompts, custom
instructions, tool output, hidden context and reasoning summaries are no part of the dialogue.
"""

from __future__ import annotations

from typing import Any

from tianma.importing.messages import ImportedMessage, Parsed, Problem, content_id, epoch, oldest_first

TEXT_TYPES = frozenset({"text", "multimodal_text"})
"""Content types whose string ``parts`` are what was written (images and files are skipped)."""


def parse(data: Any) -> Parsed:
    """Every conversation's current branch, oldest conversation first."""
    out = Parsed("chatgpt")
    if not isinstance(data, list):
        out.problems.append(Problem("file", "a ChatGPT export is a JSON list of conversations"))
        return out
    dialogues: list[list[ImportedMessage]] = []
    for number, conversation in enumerate(data, start=1):
        where = f"conversation {number}"
        if not isinstance(conversation, dict) or not isinstance(conversation.get("mapping"), dict):
            out.problems.append(Problem(where, "not a conversation (no `mapping` of message nodes)"))
            continue
        messages = _conversation(conversation, where, out)
        dialogues.append(messages)
    out.messages.extend(oldest_first(dialogues))
    return out


def _branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to ``current`` (or to the newest leaf when it is missing)."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [n for n in mapping.values() if isinstance(n, dict) and not n.get("children")]
        newest = max(leaves, key=lambda n: _seconds((n.get("message") or {}).get("create_time")), default={})
        current = newest.get("id")
    nodes, seen = [], set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        if not isinstance(node, dict):
            break
        nodes.append(node)
        current = node.get("parent")
    return nodes[::-1]


def _conversation(conversation: dict[str, Any], where: str, out: Parsed) -> list[ImportedMessage]:
    title = conversation.get("title") if isinstance(conversation.get("title"), str) else None
    if title:
        where = f"{where} ({title[:40]})"
    ident = conversation.get("conversation_id") or conversation.get("id")
    started = epoch(conversation.get("create_time"))
    dialogue = f"chatgpt-{ident}" if isinstance(ident, str) and ident else "chatgpt-" + content_id(
        str(title), str(started)
    )
    messages = []
    for node in _branch(conversation["mapping"], conversation.get("current_node")):
        message = node.get("message")
        if message is None:  # the root of the tree
            continue
        at = where + f", message {node.get('id', '?')}"
        if not isinstance(message, dict):
            out.problems.append(Problem(at, "the message is not an object"))
            continue
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if role not in ("user", "assistant"):
            if role is None:
                out.problems.append(Problem(at, "the message has no author role"))
            else:
                out.ignored += 1  # system, tool
            continue
        meta = message.get("metadata")
        content = message.get("content")
        hidden = isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation")
        if hidden or not isinstance(content, dict):
            out.ignored += 1
            continue
        if content.get("content_type") not in TEXT_TYPES:
            out.ignored += 1  # code run, browsing, reasoning, custom instructions
            continue
        parts = content.get("parts")
        text = "\n".join(p for p in parts if isinstance(p, str)).strip() if isinstance(parts, list) else ""
        if not text:
            out.ignored += 1  # an image alone, an empty turn
            continue
        when = epoch(message.get("create_time")) or started
        if when is None:
            out.problems.append(Problem(at, "neither the message nor its conversation has a time"))
            continue
        ident = message.get("id") or node.get("id") or content_id(dialogue, role, text, str(when))
        messages.append(ImportedMessage(f"chatgpt:{ident}", dialogue, role, text, when, at, title))
    return messages


def _seconds(value: Any) -> float:
    """For ordering: an epoch time, or 0 when there is none."""
    when = epoch(value)
    return when.timestamp() if when else 0.0
