from __future__ import annotations

import tianma


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(tianma) if not name.startswith("_")}
    modules = {
        "errors",
        "memory",
        "runtime",
        "settings",
        "turn",
        "graph",
        "llm",
        "nodes",
        "policies",
        "guardrails",
        "telemetry",
        "prompting",
        "plugins",
        "annotations",
        "demo",
        "cli",
        "bench",
        "scheduler",
        "learning_worker",
        "queue_worker",
        "runtime_jobs",
        "runtime_experiments",
        "serve",
        "testing",
        "operations",
        "integrations",
        "erasure",
        "chat_history",
        "storage",
        "text",
        "results",
        "importing",
        "backups",
        "experiments",
    }
    assert set(tianma.__all__) == public - modules
    for name in tianma.__all__:
        assert getattr(tianma, name) is not None


def test_error_tree() -> None:
    assert issubclass(tianma.ConfigError, ValueError)
    assert issubclass(tianma.ChatModelUnavailableError, tianma.BackendUnavailableError)
    for name in ("ConfigError", "InvalidInputError", "RecordNotFoundError", "ChatModelUnavailableError"):
        assert issubclass(getattr(tianma, name), tianma.TianmaError)
