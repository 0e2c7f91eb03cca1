"""Server-rendered SVG charts: the geometry is computed here, the template draws it (no JS, no CDN)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 14, 30
MAX_X_LABELS = 8


@dataclass(frozen=True, slots=True)
class Series:
    """One line: a value per x position, None where there is none (the line breaks there)."""

    name: str
    css: str
    """CSS class of the line (its colour)."""
    values: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class Dot:
    x: float
    y: float
    title: str
    """Shown on hover (an SVG ``<title>``)."""


@dataclass(frozen=True, slots=True)
class Line:
    name: str
    css: str
    paths: tuple[str, ...]
    """``points`` of one polyline per unbroken stretch."""
    dots: tuple[Dot, ...]


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    title: str


@dataclass(frozen=True, slots=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    """Everything a template needs to draw one chart."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    """Edges of the plotting area, in SVG units."""
    lines: tuple[Line, ...]
    bars: tuple[Bar, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]


def nice_max(value: float, floor: float = 1.0) -> float:
    """The top of the y axis: at least ``floor``, rounded up to a quarter of a power of ten."""
    if value <= floor:
        return floor
    scale = 10 ** math.floor(math.log10(value))
    return float(math.ceil(value / scale * 4) / 4 * scale)


def _frame(count: int, pad: float = 0.0) -> tuple[float, float]:
    """x of the first position and the step between positions (``pad`` kept free at each end)."""
    inner = WIDTH - LEFT - RIGHT - 2 * pad
    if count <= 1:
        return LEFT + pad + inner / 2, 0.0
    return LEFT + pad, inner / (count - 1)


def _x_ticks(labels: Sequence[str], x0: float, step: float) -> tuple[Tick, ...]:
    every = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    return tuple(Tick(round(x0 + n * step, 1), label) for n, label in enumerate(labels) if n % every == 0)


def _y(value: float, top: float) -> float:
    return round(HEIGHT - BOTTOM - (HEIGHT - BOTTOM - TOP) * value / top, 1)


def _y_ticks(top: float, percent: bool) -> tuple[Tick, ...]:
    return tuple(
        Tick(_y(top * k / 4, top), f"{100 * top * k / 4:.0f}%" if percent else f"{top * k / 4:g}")
        for k in range(5)
    )


def line_chart(labels: Sequence[str], series: Sequence[Series], *, percent: bool = True) -> Chart:
    """Lines over shared x positions (one per label); y from 0 to at least 1 (100 %)."""
    values = [v for s in series for v in s.values if v is not None]
    top = nice_max(max(values, default=0.0))
    x0, step = _frame(len(labels))
    lines = []
    for s in series:
        paths: list[str] = []
        dots: list[Dot] = []
        stretch: list[str] = []
        for n, value in enumerate(s.values):
            if value is None:
                if stretch:
                    paths.append(" ".join(stretch))
                stretch = []
                continue
            x, y = round(x0 + n * step, 1), _y(value, top)
            stretch.append(f"{x},{y}")
            shown = f"{100 * value:.0f}%" if percent else f"{value:g}"
            dots.append(Dot(x, y, f"{s.name} {labels[n]}: {shown}"))
        if stretch:
            paths.append(" ".join(stretch))
        lines.append(Line(s.name, s.css, tuple(paths), tuple(dots)))
    return Chart(WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM, tuple(lines), (),
                 _x_ticks(labels, x0, step), _y_ticks(top, percent))  # fmt: skip


def bar_chart(labels: Sequence[str], values: Sequence[int], name: str) -> Chart:
    """One bar per label (counts); y from 0 to a rounded maximum."""
    top = nice_max(float(max(values, default=0)), floor=4.0)
    inner = WIDTH - LEFT - RIGHT
    width = max(1.0, min(24.0, 0.7 * inner / max(1, len(values))))
    x0, step = _frame(len(labels), pad=width / 2 + 4)
    bars = tuple(
        Bar(
            round(x0 + n * step - width / 2, 1),
            _y(v, top),
            round(width, 1),
            round(HEIGHT - BOTTOM - _y(v, top), 1),
            f"{name} {labels[n]}: {v}",
        )
        for n, v in enumerate(values)
    )
    return Chart(WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM, (), bars,
                 _x_ticks(labels, x0, step), _y_ticks(top, percent=False))  # fmt: skip
