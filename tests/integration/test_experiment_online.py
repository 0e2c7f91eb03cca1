"""An online experiment on a real runtime: users are served by their arm's implementations, the
arm is on the turn, its spans and its event; stopping it is one call and loses nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RuntimeFactory
from tests.fakes import CharacterEmbedder, ScriptedChatModel
from tianma.errors import InvalidInputError, RecordNotFoundError
from tianma.experiments.online import arm_names, assign
from tianma.telemetry import semconv as sc

T0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)


def test_each_user_is_served_by_their_arm_until_the_experiment_stops(
    make_runtime: RuntimeFactory, spans: InMemorySpanExporter
) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]), embedder=CharacterEmbedder())
    rt.start_experiment("mmr-test", ["mmr=rerank:rerank_mmr"], at=T0)
    users = [f"u{i}" for i in range(12)]
    expected = {u: assign("mmr-test", u, arm_names(["mmr"])) for u in users}
    assert set(expected.values()) == {"baseline", "mmr"}  # both arms get someone
    turns = {u: rt.chat(u, "我每天早上喝黑咖啡。", dialogue_id=f"{u}-d1", at=T0 + timedelta(minutes=1)) for u in users}
    assert {u: t.arm for u, t in turns.items()} == expected and {t.experiment for t in turns.values()} == {"mmr-test"}
    again = rt.chat("u0", "早上喝什么", dialogue_id="u0-d2", at=T0 + timedelta(days=1))
    assert again.arm == expected["u0"]  # a user keeps their arm
    by_trace = {t.trace_id: t for t in [*turns.values(), again]}
    seen = set()
    for s in spans.get_finished_spans():
        trace = format(s.context.trace_id, "032x") if s.context else None
        if trace in by_trace:  # every span of the turn: root, nodes, the model call, embeddings, memory
            arm = by_trace[trace].arm
            attrs = s.attributes or {}
            assert (attrs.get(sc.TIANMA_EXPERIMENT), attrs.get(sc.TIANMA_ARM)) == ("mmr-test", arm), s.name
            seen.add(s.name.split(" ")[0])
            if attrs.get(sc.TIANMA_NODE_NAME) == "rerank":
                assert attrs[sc.TIANMA_NODE_IMPL] == ("rerank_mmr" if arm == "mmr" else "builtin")
    assert {"invoke_agent", "tianma.node", "chat"} <= seen
    event = rt.memory.store.get(turns["u1"].event_id)
    assert event.data["experiment"] == {"name": "mmr-test", "arm": expected["u1"]}
    report = rt.experiment_report("mmr-test")
    assert [(a.arm, a.units, a.turns) for a in report.arms] == [
        ("baseline", sum(v == "baseline" for v in expected.values()), sum(v == "baseline" for v in expected.values())
         + (expected["u0"] == "baseline")),
        ("mmr", sum(v == "mmr" for v in expected.values()), sum(v == "mmr" for v in expected.values())
         + (expected["u0"] == "mmr")),
    ]  # fmt: skip
    learnt_before = {r.id for r in rt.memories("u0")}
    rt.stop_experiment("mmr-test", at=T0 + timedelta(days=2))
    after = rt.chat("u0", "早上喝什么", dialogue_id="u0-d3", at=T0 + timedelta(days=2))
    assert after.arm is None and after.experiment is None
    assert learnt_before <= {r.id for r in rt.memories("u0")}  # nothing an arm learnt is lost
    with pytest.raises(RecordNotFoundError):
        rt.stop_experiment("mmr-test")


def test_a_bad_experiment_is_refused_before_anyone_is_served_by_it(make_runtime: RuntimeFactory) -> None:
    rt = make_runtime(chat_model=ScriptedChatModel(replies=["好的。"]), embedder=CharacterEmbedder())
    for arms, needle in ((["x=ranker:mmr"], "no slot"), (["a=rerank:rerank_mmr", "a=retrieve:retrieve_dense"], "distinct"),
                         (["x=retrieval.min_relevance=3"], "min_relevance"), ([], "one or more")):  # fmt: skip
        with pytest.raises(InvalidInputError, match=needle):
            rt.start_experiment("bad", arms, at=T0)
    rt.start_experiment("one", ["mmr=rerank:rerank_mmr"], at=T0)
    with pytest.raises(InvalidInputError, match="running"):
        rt.start_experiment("two", ["mmr=rerank:rerank_mmr"], at=T0)
    rt.stop_experiment("one", at=T0)
    with pytest.raises(InvalidInputError, match="ran before"):
        rt.start_experiment("one", ["mmr=rerank:rerank_mmr"], at=T0)


def test_the_commands_start_report_and_stop_an_experiment(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from tianma.cli.app import app

    runner = CliRunner(env={"COLUMNS": "200", "TIANMA_EMBEDDER__THREADS": "1"})
    home = ["--home", str(tmp_path / "home")]
    started = runner.invoke(app, ["experiment", "start", "exp-a", "--arm", "mmr=rerank:rerank_mmr", *home])
    assert started.exit_code == 0, started.output
    assert "arms baseline, mmr, by user" in started.output
    status = runner.invoke(app, ["experiment", "status", "exp-a", *home])
    assert status.exit_code == 0 and "experiment exp-a (running; by user" in status.output
    assert "baseline | 0 | 0 |" in status.output and "mmr | 0 | 0 |" in status.output
    stopped = runner.invoke(app, ["experiment", "stop", "exp-a", *home])
    assert stopped.exit_code == 0 and "stopped" in stopped.output
    again = runner.invoke(app, ["experiment", "stop", "exp-a", *home])
    assert isinstance(again.exception, RecordNotFoundError)
