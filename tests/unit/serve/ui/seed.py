"""Two users' worth of real data for the review UI's tests (unit and browser): turns, signals,
a reflection run, an edited strategy, a pending review — each user's text names their own food,
so a page leaking another user's data is easy to spot."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tianma import Runtime
from tianma.memory.reviews import queue
from tianma.storage.records import Provenance
from tianma.telemetry.span_store import SqlSpanExporter

T0 = datetime(2026, 5, 4, 9, tzinfo=UTC)  # a Monday
KEYS: dict[str, Any] = {"api_keys": {"key-a": "alice", "key-b": "bob"}, "admin_keys": ["key-admin"]}
"""``serve`` settings: alice and bob each have a key; the admin key sees everyone."""
SETTINGS: dict[str, Any] = {"serve": KEYS, "policies": {"epsilon": 0.0}}
"""Settings of the seeded runtime: no exploration, so every turn applies the same strategies."""
FOOD = {"alice": "花生", "bob": "芒果"}
TOKEN = re.compile(r'name="token" value="([0-9a-f]+)"')


@dataclass(frozen=True, slots=True)
class Seeded:
    """Ids of one user's seeded data."""

    user: str
    food: str
    preference: str
    """An active preference (indexed, searchable)."""
    strategy: str
    """A strategy with two versions (edited once) that turns applied."""
    fact_turn: str
    """The turn that stated the allergy."""
    disliked_turn: str
    """A later turn the user disliked (a negative signal)."""
    run_id: str
    """The published reflection run."""
    pending_fact: str
    """The fact that reflection wrote as pending."""
    review: str
    """A pending review of a queued strategy."""
    review_record: str
    queued: str
    """The queued strategy's content."""


def seed_user(rt: Runtime, user: str, at: datetime = T0) -> Seeded:
    """Real data for ``user``: written through the runtime wherever the runtime can write it."""
    food = FOOD.get(user, "苹果")
    store = rt.memory.store
    pref = store.add_record(user, "preference", f"喜欢{food}味的零食", Provenance(source="test"),
                            at=at, confidence=0.8)  # fmt: skip
    rt.memory.index([pref])
    strategy = store.add_record(
        user, "strategy", f"回答零食问题时先提醒{food}过敏", Provenance(source="test"), at=at, confidence=0.6,
        data={"trigger": {"keywords": ["零食"]}, "priority": 1, "weight": 0.6, "zone": "caution"},
    )  # fmt: skip
    stated = rt.chat(user, f"我对{food}过敏。", dialogue_id=f"{user}-d1", at=at)
    asked = rt.chat(user, "推荐一些零食吧", dialogue_id=f"{user}-d2", at=at + timedelta(days=1))
    rt.feedback(asked.event_id, "dislike", at=at + timedelta(days=1, minutes=1))
    (report,) = rt.reflect(user, at=at + timedelta(days=1, hours=1))
    (fact,) = rt.memories(user, "fact", "pending")
    rt.edit(strategy.id, f"回答零食问题时先提醒{food}过敏，再推荐", "更具体", at=at + timedelta(days=2))
    queued = f"推荐零食时避开{food}"
    record = store.add_record(user, "strategy", queued, Provenance(source="test"), at=at, status="pending",
                              data={"trigger": {"keywords": ["零食"]}, "priority": 0, "zone": "caution"})  # fmt: skip
    with store.engine.begin() as conn:
        review = queue(
            conn, user_id=user, record_id=record.id, run_id=None, kind="strategy", content=queued,
            zone="caution", mode="confirm", reason="caution zone: changes how answers are given",
            preview={"before": [f"回答零食问题时先提醒{food}过敏，再推荐"],
                     "after": [f"回答零食问题时先提醒{food}过敏，再推荐", queued], "scope": "global"},
            evidence=[stated.event_id], at=at + timedelta(days=2),
        )  # fmt: skip
    return Seeded(user, food, pref.id, strategy.id, stated.event_id, asked.event_id, report.run_id,
                  fact.id, review, record.id, queued)  # fmt: skip


def token_of(html: str) -> str:
    """The form token a page carries (every POST needs it)."""
    found = TOKEN.search(html)
    assert found is not None, "no form token on the page"
    return found.group(1)


def store_spans(rt: Runtime, spans: InMemorySpanExporter) -> None:
    """What ``serve`` does with ``telemetry.local_store``: every finished span into the span store."""
    exporter = SqlSpanExporter(rt.settings.spans_path)
    exporter.export(spans.get_finished_spans())
    exporter.shutdown()
