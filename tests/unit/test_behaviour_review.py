"""The weekly behaviour review: topic statistics, proposals queued for review, the weekly job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder
from tianma import BehaviourReport, Runtime
from tianma.policies.behaviour import Turn, analyse, topic_of
from tianma.scheduler import Scheduler, builtin_jobs, current_slot, due_jobs
from tianma.settings import SchedulerSettings, Settings
from tianma.storage import job_runs

SUNDAY = datetime(2026, 3, 8, 3, tzinfo=UTC)  # the default weekly slot: Sunday 03:00 UTC
MONDAY = datetime(2026, 3, 2, tzinfo=UTC)  # 00:00 of the week's Monday
TOPICS = {
    "finance": ["股票和基金怎么选？", "基金收益怎么算？"],
    "health": ["医生说睡眠不够怎么办？", "体检前要注意什么？"],
    "food": ["附近有好的咖啡餐厅吗？", "咖啡喝多了好吗？"],
    "travel": ["机票和酒店哪里订便宜？", "出差住哪个酒店？"],
}


def weekly_review(rt: Runtime, user_id: str, at: datetime) -> list[BehaviourReport]:
    return rt.weekly_review(user_id, at)


@pytest.fixture
def rt(make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder) -> Runtime:
    return make_runtime(embedder=char_embedder)


def dialogue(rt: Runtime, dialogue_id: str, texts: list[str], start: datetime, user: str = "u") -> list[str]:
    """Ingest a dialogue of user turns one minute apart; returns the event ids."""
    events = [{"role": "user", "text": x, "at": start + timedelta(minutes=i), "dialogue_id": dialogue_id}
              for i, x in enumerate(texts)]  # fmt: skip
    return rt.ingest(user, events)


def signal(rt: Runtime, kind: str, target: str, source: str, dialogue_id: str, at: datetime) -> None:
    rt.memory.add_signal("u", kind, 0.5, target_event_id=target, source_event_id=source,
                         dialogue_id=dialogue_id, at=at)  # fmt: skip


def a_week(rt: Runtime, repeats: dict[str, int]) -> None:
    """Two dialogues per topic in the daytime, with ``repeats[topic]`` repeat signals in the second."""
    for n, (topic, texts) in enumerate(TOPICS.items()):
        day = MONDAY + timedelta(days=n, hours=10)
        first = dialogue(rt, f"{topic}-1", texts, day)
        second = dialogue(rt, f"{topic}-2", texts, day + timedelta(days=1))
        for i in range(repeats.get(topic, 0)):
            signal(
                rt, "repeat", first[i % 2], second[i % 2], f"{topic}-2", day + timedelta(days=1, minutes=i)
            )


def test_a_topic_asked_again_and_again_gets_one_pending_caution_proposal(rt: Runtime) -> None:
    a_week(rt, {"finance": 4})
    [report] = weekly_review(rt, "u", SUNDAY)
    assert report.language == "zh" and report.turns == 16 and report.dialogues == 8
    finance = next(x for x in report.topics if x.topic == "finance")
    assert finance.repeats == 4 and finance.dialogues == 2 and finance.avg_turns == 2
    assert finance.emotion == {"positive": 0, "negative": 0, "neutral": 4} and finance.hours == {10: 4}
    assert sorted(x.topic for x in report.topics) == sorted(TOPICS)
    [proposal] = report.proposals
    assert proposal.content == "在「理财」话题上先给结论，再展开细节" and proposal.status == "queued"
    assert (
        proposal.zone == "caution"
        and proposal.mode == "confirm"
        and proposal.scope == "domain:finance"
    )
    [review] = rt.pending("u")
    assert (
        review.id == proposal.review_id and review.kind == "strategy" and review.zone == "caution"
    )
    assert review.preview["after"] == [proposal.content] and review.preview["before"] == []
    assert "asked again 4 times" in review.reason and len(review.evidence) == 4
    strategy = rt.memory.store.get(proposal.record_id)
    assert strategy.status == "pending" and strategy.data["trigger"] == {"domains": ["finance"]}

    again = weekly_review(rt, "u", SUNDAY + timedelta(hours=1))[0]
    assert [p.status for p in again.proposals] == ["already_open"] and again.run_id is None
    assert len(rt.pending("u")) == 1 and len(rt.memories("u", "strategy")) == 1

    rt.approve(review.id, "yes")
    assert rt.memory.store.get(proposal.record_id).status == "active"
    later = weekly_review(rt, "u", SUNDAY + timedelta(hours=2))[0]
    assert [p.status for p in later.proposals] == ["already_active"] and not rt.pending("u")


def test_a_balanced_week_proposes_nothing(rt: Runtime) -> None:
    a_week(rt, dict.fromkeys(TOPICS, 2))
    [report] = weekly_review(rt, "u", SUNDAY)
    assert report.proposals == () and report.run_id is None and not rt.pending("u")
    assert all(x.repeats == 2 for x in report.topics)
    assert weekly_review(rt, "nobody", SUNDAY) == []


def test_late_night_irritation_proposes_brief_answers(rt: Runtime) -> None:
    question = ["How do I fix this python code?", "The server still fails, why?"]
    for n in range(4):
        late = MONDAY + timedelta(days=n, hours=23)
        ids = dialogue(rt, f"late-{n}", question, late)
        signal(rt, "impatience", ids[0], ids[1], f"late-{n}", late + timedelta(minutes=1))
    for n in range(2):
        dialogue(rt, f"day-{n}", question, MONDAY + timedelta(days=n, hours=14))
    [report] = weekly_review(rt, "u", SUNDAY)
    assert report.language == "en" and report.late.late_share == pytest.approx(8 / 12, abs=1e-3)
    assert report.late.late_negative_rate > report.late.other_negative_rate == 0
    [tech] = report.topics
    assert tech.topic == "tech" and tech.interruption_rate == pytest.approx(4 / 12, abs=1e-3)
    assert tech.emotion["negative"] == 4 and tech.hours == {14: 4, 23: 8}
    [proposal] = report.proposals
    assert proposal.content == "After 22:00, answer briefly" and proposal.zone == "caution"
    assert proposal.mode == "manual" and proposal.trigger == {"hours": [22, 6]}
    [review] = rt.pending("u")
    assert (
        review.content == "After 22:00, answer briefly" and "negative signals per turn" in review.reason
    )


def test_topics_without_a_domain_use_their_most_frequent_noun() -> None:
    assert topic_of(["基金收益怎么算？"]) == "finance"
    assert topic_of(["My guitar strings break", "new guitar strings for my guitar"]) == "guitar"
    assert topic_of(["ok"]) == "general"
    at = SUNDAY
    week = analyse([Turn(f"e{i}", "d", "hello", at) for i in range(3)], [], UTC)
    assert week.proposals == [] and week.late["turns"] == 3


def test_the_weekly_job_is_registered_and_due_on_the_configured_weekday(
    make_runtime: RuntimeFactory, char_embedder: CharacterEmbedder
) -> None:
    settings = Settings(scheduler=SchedulerSettings(daily_hour=5, weekly_day=2))
    [job] = [j for j in builtin_jobs(settings) if j.name == "behaviour_review"]
    assert (job.period, job.at_hour, job.weekday) == ("weekly", 5, 2)
    wednesday = datetime(2026, 3, 4, 6, tzinfo=UTC)
    assert current_slot(job, wednesday) == wednesday.replace(hour=5)
    assert current_slot(job, wednesday + timedelta(days=6)) == wednesday.replace(hour=5)
    assert "behaviour_review" in SchedulerSettings().enabled_jobs

    rt = make_runtime(embedder=char_embedder, scheduler={"daily_hour": 3})
    a_week(rt, {"finance": 4})
    scheduler = Scheduler(rt)
    assert [j.name for j in scheduler.jobs][-1] == "behaviour_review"
    assert ("behaviour_review", SUNDAY) in [
        (j.name, s) for j, s in due_jobs(rt.memory.store.engine, scheduler.jobs, SUNDAY)
    ]
    run = scheduler.run("behaviour_review", SUNDAY + timedelta(minutes=5))
    assert run.status == "ok" and run.slot == SUNDAY and run.report["proposals"] == 1
    assert run.report["review_ids"] == [r.id for r in rt.pending("u")]
    assert scheduler.run("behaviour_review", SUNDAY + timedelta(days=1)).status == "skipped"
    assert [r["job"] for r in job_runs.runs(rt.memory.store.engine, "behaviour_review")] == [
        "behaviour_review"
    ]
