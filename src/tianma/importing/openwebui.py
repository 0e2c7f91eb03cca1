"""Open WebUI's chat export: "Export chat (.json)" of one chat and "Export All Chats" of the
settings both write a JSON list of chats as its API returns them (``ChatResponse``: ``id``,
``title``, ``created_at`` in epoch seconds, and ``chat``, the client's document of the chat).

In ``chat.history`` the messages form a tree (``parentId``, ``childrenIds``: a regenerated
reply or an edited message is a sibling); the conversation the user last saw ends at
``history.currentId`` and is followed from there to the root. An old export without a history
has its ``chat.messages`` list in order.
"""

from __future__ import annotations

from typing import Any

from tianma.importing.messages import ImportedMessage, Parsed, Problem, content_id, epoch, oldest_first


def parse(data: Any) -> Parsed:
    """Every chat's current branch, oldest chat first."""
    out = Parsed("openwebui")
    if isinstance(data, dict) and isinstance(data.get("chat"), dict):
        data = [data]  # one chat object on its own
    if not isinstance(data, list):
        out.problems.append(Problem("file", "an Open WebUI export is a JSON list of chats"))
        return out
    dialogues: list[list[ImportedMessage]] = []
    for number, item in enumerate(data, start=1):
        where = f"chat {number}"
        if isinstance(item, dict) and isinstance(item.get("title"), str) and item["title"]:
            where = f"{where} ({item['title'][:40]})"
        chat = item.get("chat") if isinstance(item, dict) else None
        if not isinstance(chat, dict):
            out.problems.append(Problem(where, "not a chat (no `chat` object)"))
            continue
        messages = _chat(item, chat, where, out)
        owner = item.get("user_id") if isinstance(item, dict) else None
        if messages and isinstance(owner, str) and owner:
            out.owners.add(owner)
        dialogues.append(messages)
    out.messages.extend(oldest_first(dialogues))
    return out


def _branch(chat: dict[str, Any]) -> list[Any]:
    """The messages from the root to the current one."""
    history = chat.get("history")
    tree = history.get("messages") if isinstance(history, dict) else None
    if not isinstance(tree, dict) or not tree:
        listed = chat.get("messages")
        return listed if isinstance(listed, list) else []
    current = history.get("currentId") if isinstance(history, dict) else None
    if current not in tree:  # the newest message without children
        leaves = [m for m in tree.values() if isinstance(m, dict) and not m.get("childrenIds")]
        current = max(leaves, key=lambda m: _seconds(m.get("timestamp")), default={}).get("id")
    out, seen = [], set()
    while isinstance(current, str) and current in tree and current not in seen:
        seen.add(current)
        out.append(tree[current])
        node = tree[current]
        current = node.get("parentId") if isinstance(node, dict) else None
    return out[::-1]


def _chat(item: dict[str, Any], chat: dict[str, Any], where: str, out: Parsed) -> list[ImportedMessage]:
    title = next((t for t in (item.get("title"), chat.get("title")) if isinstance(t, str) and t), None)
    started = epoch(item.get("created_at")) or epoch(chat.get("timestamp"))
    ident = item.get("id") or chat.get("id")
    chat_id = str(ident) if isinstance(ident, str | int) and str(ident) else content_id(str(title), str(started))
    dialogue = f"openwebui-{chat_id}"[:64]
    messages = []
    for number, message in enumerate(_branch(chat), start=1):
        at = f"{where}, message {number}"
        if not isinstance(message, dict):
            out.problems.append(Problem(at, "the message is not an object"))
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            if role is None:
                out.problems.append(Problem(at, "the message has no role"))
            else:
                out.ignored += 1  # system
            continue
        text = _text(message.get("content"))
        if not text:
            out.ignored += 1
            continue
        when = epoch(message.get("timestamp")) or started
        if when is None:
            out.problems.append(Problem(at, "neither the message nor its chat has a time"))
            continue
        ident = message.get("id")
        key = str(ident) if isinstance(ident, str | int) and str(ident) else content_id(role, text, str(when))
        messages.append(ImportedMessage(f"openwebui:{chat_id}:{key}"[:255], dialogue, role, text, when, at, title))
    return messages


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)).strip()
    return ""


def _seconds(value: Any) -> float:
    when = epoch(value)
    return when.timestamp() if when else 0.0
