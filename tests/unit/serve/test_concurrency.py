"""32 dialogues at once through the proxy: every event and signal lands in its own dialogue;
and the scheduler inside serve runs each job's slot once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.unit.serve.conftest import MODEL, ServeFactory
from tianma.scheduler import Scheduler
from tianma.serve import create_app
from tianma.storage import job_runs
from tianma.testing.ollama_standin import OllamaStandin
from tianma.testing.server import ServerThread

DIALOGUES = 32


def _dialogue(url: str, n: int) -> tuple[str, str]:
    """Two turns of one conversation; the second corrects the first. Returns both event ids."""
    with httpx.Client(base_url=url, timeout=60) as client:
        first_msgs = [{"role": "user", "content": f"第{n}号问题：帮我订{n}点的闹钟"}]
        first = client.post("/api/chat", json={"model": MODEL, "stream": False, "messages": first_msgs})
        first.raise_for_status()
        history = [*first_msgs, first.json()["message"], {"role": "user", "content": f"不对，我说的是{n}点半"}]
        with client.stream("POST", "/api/chat", json={"model": MODEL, "messages": history}) as second:
            second.raise_for_status()
            lines = list(second.iter_lines())
            second_id = second.headers["x-tianma-event-id"]
        assert '"done":true' in lines[-1].replace(" ", "")
        return first.headers["x-tianma-event-id"], second_id


def test_32_concurrent_dialogues_lose_nothing(serve: ServeFactory) -> None:
    standin = OllamaStandin(delay=0.05).start()  # a model that takes a moment: turns overlap
    s = serve(standin, serve={"max_concurrent": 8, "max_queue": 64})
    with ThreadPoolExecutor(DIALOGUES) as pool:
        pairs = list(pool.map(lambda n: _dialogue(s.url, n), range(DIALOGUES)))
    store = s.runtime.memory.store
    events = {e.id: e for e in s.runtime.memories("me", "event")}
    assert len(events) == 2 * DIALOGUES
    for n, (first, second) in enumerate(pairs):
        assert events[first].content == f"第{n}号问题：帮我订{n}点的闹钟"
        assert events[second].content == f"不对，我说的是{n}点半"
        assert events[first].dialogue_id == events[second].dialogue_id
        assert events[first].reply == f"你说：第{n}号问题：帮我订{n}点的闹钟"
    assert len({e.dialogue_id for e in events.values()}) == DIALOGUES
    corrections = [sig for sig in store.list_records("me", "signal", None) if sig.data["type"] == "correction"]
    assert sorted(sig.data["target_event_id"] for sig in corrections) == sorted(p[0] for p in pairs)
    for sig in corrections:  # each judged its own dialogue's first turn, from its second
        assert sig.dialogue_id == events[sig.data["target_event_id"]].dialogue_id
    assert standin.errors == []


def test_the_scheduler_in_serve_runs_each_slot_once(make_runtime) -> None:  # type: ignore[no-untyped-def]
    with OllamaStandin() as standin:
        rt = make_runtime(ollama={"base_url": standin.base_url})
        engine = rt.memory.store.engine
        slotted = [j.name for j in Scheduler(rt).jobs if j.period != "continuous"]
        with ServerThread(create_app(rt, scheduler=True, scheduler_poll_s=0.05)):
            deadline = time.monotonic() + 30
            while len(job_runs.runs(engine)) < len(slotted) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.3)  # several more polls
            rerun = Scheduler(rt).run_due()  # cron at the same time
        runs = job_runs.runs(engine)
    assert sorted(r["job"] for r in runs) == sorted(slotted)  # no dialogue went idle: dialogue_end idles
    assert all(r["status"] == "ok" for r in runs), runs
    assert [r.status for r in rerun] == ["idle"] + ["skipped"] * len(slotted)


def test_a_full_wait_line_is_ollamas_503(serve: ServeFactory) -> None:
    standin = OllamaStandin(delay=1.0).start()
    s = serve(standin, serve={"max_concurrent": 1, "max_queue": 0})
    body = {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "慢慢想"}]}
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(httpx.post, f"{s.url}/api/chat", json=body, timeout=30)
        time.sleep(0.3)
        busy = httpx.post(f"{s.url}/api/chat", json=body, timeout=30)
        assert slow.result().status_code == 200
    assert busy.status_code == 503
    assert busy.json()["error"].startswith("server busy")
