"""``kill -9`` at random points of turns, ingests, feedback, reflections, aggregation passes and
forgets (tests/crash_worker.py), each followed by a restart: the store is intact, both indexes
hold exactly what SQL says (ids, not counts), no acknowledged event is lost, no turn lost its
injections, no message is stored twice, no weak signal is counted in two merges."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.crash_worker import OPS
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma import Runtime, Settings
from tianma.memory.index_check import pending_writes

KILLS = int(os.environ.get("TIANMA_CRASH_KILLS", "50"))
KILL_LATEST_S = 20.0
"""A worker whose focus operation never starts is killed after this anyway."""
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Ledger:
    """What the killed processes acknowledged, across runs."""

    events: dict[str, str] = field(default_factory=dict)  # event id -> user
    injected: dict[str, list[str]] = field(default_factory=dict)  # event id -> record ids
    gone: set[str] = field(default_factory=set)  # forgotten, or maybe (a forget was under way)
    in_flight: Counter[str] = field(default_factory=Counter)  # the op each kill interrupted

    def read(self, lines: list[dict[str, Any]]) -> None:
        begun: dict[str, Any] | None = None
        for line in lines:
            if "begin" in line:
                begun = line
                self.gone.update(line.get("targets", []))
            elif "ack" in line:
                begun = None
                for event_id in line.get("events", []):
                    self.events[event_id] = line["user"]
                if "injected" in line:
                    self.injected[line["events"][0]] = line["injected"]
        if begun is not None:
            self.in_flight[begun["begin"]] += 1


def run_and_kill(home: Path, seed: int, focus: str, rng: random.Random) -> list[dict[str, Any]]:
    """Run the worker and kill it a few milliseconds after the n-th start of a ``focus``
    operation (n random: its store is not empty by then), or after ``KILL_LATEST_S``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.crash_worker", str(home), str(seed), focus],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)  # fmt: skip
    assert proc.stdout is not None
    timer = threading.Timer(KILL_LATEST_S, proc.kill)
    timer.start()
    lines: list[dict[str, Any]] = []
    nth, seen = rng.randint(1, 6), 0
    try:
        for raw in proc.stdout:
            lines.append(json.loads(raw))
            if lines[-1].get("begin") == focus:
                seen += 1
                if seen == nth:
                    time.sleep(rng.uniform(0, 0.03))
                    break
    finally:
        proc.kill()  # SIGKILL: no cleanup, no flush, whatever was half-written stays so
        timer.cancel()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == -9, err
    assert lines and lines[0].get("ready"), err
    return lines + [json.loads(line) for line in out.splitlines() if line.strip()]


def check(home: Path, ledger: Ledger) -> None:
    with sqlite3.connect(home / "tianma.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with Runtime(Settings(home=home), chat_model=ScriptedChatModel(), embedder=CharacterEmbedder()) as rt:
        assert pending_writes(rt.memory) == 0  # the outbox a kill left was applied at start-up
        unclean = [d for d in rt.check_index() if not d.clean]
        assert unclean == []
        records = {r.id: r for user in ("u1", "u2") for r in rt.memories(user)}
        lost = [e for e in ledger.events if e not in records and e not in ledger.gone]
        assert lost == []
        for event_id, injected in ledger.injected.items():
            if event_id in records:
                kept = {row["record_id"] for row in rt.memory.store.injections_of(event_id)}
                assert set(injected) - ledger.gone <= kept, event_id
        said = Counter(r.content.split("]")[0] for r in records.values() if r.kind == "event")
        assert [tag for tag, n in said.items() if n > 1] == []
        merged_in: Counter[str] = Counter()
        for r in records.values():
            for part in r.data.get("merged", []) if r.kind == "signal" else []:
                merged_in[part] += 1
                if part in records:
                    assert records[part].data.get("merged_into") == r.id
        assert [p for p, n in merged_in.items() if n > 1] == []


def test_kill_9_at_random_points_then_restart(tmp_path: Path) -> None:
    home = tmp_path / "home"
    rng = random.Random(14)
    ledger = Ledger()
    for seed in range(KILLS):
        focus = OPS[seed % len(OPS)]
        lines = run_and_kill(home, seed, focus, rng)
        ledger.read(lines)
        check(home, ledger)
    assert len(ledger.events) > 100  # the processes did real work between kills
    print(f"kills landed in: {dict(ledger.in_flight)}")  # shown with -s
    interrupted = {op for op, n in ledger.in_flight.items() if n}
    assert {"chat", "ingest", "reflect", "forget"} <= interrupted, ledger.in_flight
