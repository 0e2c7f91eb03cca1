"""The runtime's online-experiment commands (:mod:`tianma.experiments.online`), kept apart from
:mod:`tianma.runtime` so that module stays about turns and memory."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from tianma.errors import InvalidInputError
from tianma.experiments.online import LiveArms, arm_settings
from tianma.experiments.report import ExperimentReport, experiment_report
from tianma.experiments.variants import parse_variant
from tianma.storage import experiments as experiments_store
from tianma.storage.experiments import Experiment
from tianma.storage.schema import as_aware
from tianma.telemetry.span_store import SpanStore

if TYPE_CHECKING:
    from typing import Any

    from tianma.memory.service import Memory
    from tianma.settings import Settings


class ExperimentCommands:
    """Mixed into :class:`tianma.runtime.Runtime`."""

    memory: Memory
    settings: Settings
    _arms: LiveArms[Any, Any]

    def start_experiment(self, name: str, arms: list[str], unit: str = "user", at: datetime | None = None) -> Experiment:
        """Start an online experiment: each user (``unit="dialogue"``: each dialogue) is served by
        the baseline or one of ``arms`` (``NAME=slot:impl[,section.name=value…]``), by a stable
        hash, in every process within :data:`~tianma.experiments.online.POLL_S`.

        Raises:
            InvalidInputError: a malformed arm, two arms of one name, a wrong unit, or another
                experiment running.
        """
        if not name.strip():
            raise InvalidInputError("name must not be empty")
        if unit not in ("user", "dialogue"):
            raise InvalidInputError(f"unit must be user or dialogue, not {unit!r}")
        variants = [parse_variant(a) for a in arms]
        if not variants or len({v.name for v in variants}) != len(variants):
            raise InvalidInputError("give one or more arms with distinct names / 至少一个名称各异的实验组")
        for v in variants:
            arm_settings(self.settings, v.overrides)  # refused now, not at a user's turn
        started = experiments_store.start(self.memory.store.engine, name, unit, {v.name: list(v.items) for v in variants},
                                          as_aware(at))  # fmt: skip
        self._arms.refresh()
        return started

    def stop_experiment(self, name: str, at: datetime | None = None) -> Experiment:
        """Stop an online experiment: from the next turn everyone is served by the baseline.
        Nothing is lost — memory was never kept per arm.

        Raises:
            RecordNotFoundError: no running experiment of that name.
        """
        stopped = experiments_store.stop(self.memory.store.engine, name, as_aware(at))
        self._arms.refresh()
        return stopped

    def experiments(self) -> list[Experiment]:
        """Every online experiment, running or stopped, the newest first."""
        return experiments_store.all_experiments(self.memory.store.engine)

    def experiment_report(self, name: str) -> ExperimentReport:
        """How each arm did: units, turns, negative-signal, repeat and memory-use rates with
        intervals over units, median latency from the span store.

        Raises:
            RecordNotFoundError: no experiment of that name.
        """
        exp = experiments_store.get(self.memory.store.engine, name)
        durations = SpanStore(self.settings.spans_target).turn_durations(name) if self.settings.telemetry.local_store else {}
        return experiment_report(self.memory.store.engine, exp, durations)

