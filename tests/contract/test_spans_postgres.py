"""The local span store on PostgreSQL: with the records there, every process's spans go to one
``spans`` table of that database — written, read back by the review UI's reader, pruned and
forgotten like the SQLite file."""

from __future__ import annotations

from datetime import timedelta

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tests.unit.telemetry.test_span_store import T0, fake_turn
from tianma import Settings
from tianma.telemetry.span_erase import erase_spans
from tianma.telemetry.span_store import SpanStore, SqlSpanExporter


def test_spans_are_kept_read_pruned_and_forgotten_in_the_stores_database(postgres_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(home=tmp_path / "home", sql={"url": postgres_url})
    assert settings.spans_target == postgres_url  # not a file of one process's home
    reader = SpanStore(settings.spans_target)
    assert reader.recent_turns() == [] and erase_spans(postgres_url, user_id="li") == 0  # no table yet
    first, second = SqlSpanExporter(postgres_url), SqlSpanExporter(postgres_url)  # two processes
    providers = []
    for exporter in (first, second):
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
    li = fake_turn(providers[0].get_tracer("a"), "li", "ev-li", dialogue="d-li")
    wang = fake_turn(providers[1].get_tracer("b"), "wang", "ev-wang", dialogue="d-wang", at=T0 + timedelta(days=1))
    assert [t.event_id for t in reader.recent_turns()] == ["ev-wang", "ev-li"]  # both processes' turns
    assert reader.trace_of_event("ev-li") == li and len(reader.trace(li)) == 4
    (chat,) = [s for s in reader.trace(li) if s.name == "chat m"]
    assert chat.events[0].attributes == {"k": "值"} and chat.kind == "CLIENT"
    assert erase_spans(postgres_url, texts=['"k": "值"']) == 8  # every trace quoting the text, whoever's
    assert reader.recent_turns() == []
    fake_turn(providers[0].get_tracer("a"), "li", "ev-old", at=T0)
    fake_turn(providers[1].get_tracer("b"), "wang", "ev-new", at=T0 + timedelta(days=3))
    assert first.prune(T0 + timedelta(days=1)) == 4
    assert [t.event_id for t in reader.recent_turns("wang")] == ["ev-new"]
    assert erase_spans(postgres_url, user_id="wang") == 4 and reader.recent_turns() == []
    assert wang not in {t.trace_id for t in reader.recent_turns()}
    for provider in providers:
        provider.shutdown()
