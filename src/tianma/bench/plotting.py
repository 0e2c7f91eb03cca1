"""matplotlib without a display: one place that picks the Agg backend and saves PNGs."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (import lazily: it is in the ``[bench]`` extra).

    Raises:
        InvalidInputError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        from tianma.errors import InvalidInputError

        raise InvalidInputError("plots need matplotlib: pip install -e '.[bench]'") from exc
    return plt


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` as a PNG (folder created), close it, return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot().close(fig)
    return path
