"""Operations of ``tianma experiment start | stop | status`` (here, or inside ``tianma serve``)."""

from __future__ import annotations

from tianma.experiments.report import ExperimentReport
from tianma.operations.operation import Home, operation
from tianma.storage.experiments import Experiment


@operation("experiment.start")
def start(home: Home, name: str, arms: list[str], unit: str) -> Experiment:
    """Start an online experiment (refused while another runs)."""
    return home.runtime().start_experiment(name, arms, unit)


@operation("experiment.stop")
def stop(home: Home, name: str) -> Experiment:
    """Stop a running experiment: everyone is served by the baseline from the next turn."""
    return home.runtime().stop_experiment(name)


@operation("experiment.report")
def report(home: Home, name: str) -> ExperimentReport:
    """How each arm of an experiment did."""
    return home.runtime().experiment_report(name)
