"""Which package may import which: the storage and text layers import nothing above them, and
the policies import no memory service and no guardrail (only storage records, text and settings),
the guardrails no memory service, model client or graph."""

from __future__ import annotations

import ast
from pathlib import Path

import tianma

SRC = Path(tianma.__file__).parent
ALLOWED: dict[str, set[str]] = {
    "text": {"errors", "text"},
    "storage": {"errors", "text", "storage"},
    "policies": {"errors", "text", "storage", "policies", "settings"},
    "guardrails": {"errors", "text", "storage", "policies", "settings", "prompting", "guardrails"},
}
"""For each layer, the top-level tianma packages and modules its modules may import."""


def imported(path: Path) -> set[str]:
    """The top-level tianma names a module imports (anywhere in it, also inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        names.update(m.split(".")[1] for m in modules if m.startswith("tianma."))
    return names


def test_each_layer_imports_only_what_is_below_it() -> None:
    wrong = {
        str(path.relative_to(SRC)): sorted(imported(path) - allowed)
        for layer, allowed in ALLOWED.items()
        for path in sorted((SRC / layer).glob("*.py"))
        if imported(path) - allowed
    }
    assert wrong == {}


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from tianma.memory.service import Memory\nimport tianma.storage.records\n")
    assert imported(module) == {"memory", "storage"}


EDGES = ("serve", "cli", "operations", "scheduler.py")
"""What sits on Runtime: they read through ``Runtime.store`` and write through its methods."""


def runtime_internals(path: Path) -> list[str]:
    """Where a module reaches into a runtime's ``memory`` (its services, its store's writes)."""
    return [f"{path.name}:{node.lineno} {ast.unparse(node)}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and node.attr == "memory"]  # fmt: skip


def test_the_edges_use_the_runtime_not_its_memory() -> None:
    paths = [p for edge in EDGES for p in ([SRC / edge] if edge.endswith(".py") else sorted((SRC / edge).rglob("*.py")))]
    assert len(paths) > 30
    assert [hit for path in paths for hit in runtime_internals(path)] == []


def test_the_edge_check_sees_a_reach_into_memory(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f(page):\n    return page.runtime.memory.store.get('x')\n")
    assert runtime_internals(module) == ["m.py:2 page.runtime.memory"]
