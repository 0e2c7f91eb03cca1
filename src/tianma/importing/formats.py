"""Read an export file in any known format (told, or recognised from its content)."""

from __future__ import annotations

import json
import zipfile
from datetime import tzinfo
from pathlib import Path
from typing import Any, Literal

from tianma.errors import InvalidInputError
from tianma.importing import chatgpt, jsonl, openwebui
from tianma.importing.messages import Format, Parsed

Requested = Literal["auto", "chatgpt", "openwebui", "jsonl"]
CHATGPT_MEMBER = "conversations.json"


def read_export(path: Path, requested: Requested, zone: tzinfo) -> Parsed:
    """The messages of ``path``: a ChatGPT ``conversations.json`` (or the export's zip), an Open
    WebUI chat export, or the JSONL format (:mod:`tianma.importing.jsonl`).

    Raises:
        InvalidInputError: the file cannot be read, is no JSON, or is in no known format.
    """
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == CHATGPT_MEMBER]
                if not names:
                    raise InvalidInputError(f"{path}: a zip without {CHATGPT_MEMBER} / 压缩包里没有 {CHATGPT_MEMBER}")
                text = archive.read(names[0]).decode("utf-8-sig")
        else:
            text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(f"cannot read {path}: {exc} / 无法读取文件") from exc
    if requested == "jsonl" or (requested == "auto" and _looks_like_jsonl(path, text)):
        streamed = _export_lines(text) if requested == "auto" else None
        if streamed is None:
            return jsonl.parse(text.splitlines(), zone)
        text = json.dumps(streamed)  # Open WebUI's GET /api/v1/chats/all: one chat a line
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            f"{path} is not JSON (line {exc.lineno}: {exc.msg}); for one message per line use --format jsonl "
            "/ 文件不是 JSON"
        ) from exc
    fmt = requested if requested != "auto" else detect(data)
    if fmt is None:
        raise InvalidInputError(
            f"{path}: not a ChatGPT or Open WebUI export; name the format with --format "
            "/ 无法识别导出格式，请用 --format 指定"
        )
    return chatgpt.parse(data) if fmt == "chatgpt" else openwebui.parse(data)


def detect(data: Any) -> Format | None:
    """Which export a parsed JSON document is, from its first entries."""
    items = [data] if isinstance(data, dict) else data if isinstance(data, list) else []
    for item in items[:20]:
        if isinstance(item, dict) and "mapping" in item:
            return "chatgpt"
        if isinstance(item, dict) and isinstance(item.get("chat"), dict):
            return "openwebui"
    return None


def _looks_like_jsonl(path: Path, text: str) -> bool:
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return True
    head = text.lstrip()[:1]
    first = text.lstrip().split("\n", 1)[0].strip()
    return head == "{" and first.endswith("}") and "\n" in text.strip()


def _export_lines(text: str) -> list[Any] | None:
    """An export written one object a line (Open WebUI's API streams its chats so), or None when
    the lines are the JSONL message format (or not all JSON)."""
    first = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    try:
        if detect(json.loads(first)) is None:
            return None
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError:
        return None
