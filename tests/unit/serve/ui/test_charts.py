"""SVG chart geometry (pure): axes, gaps in lines, bars."""

from __future__ import annotations

import pytest

from tianma.serve.ui.charts import (
    BOTTOM,
    HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    Series,
    bar_chart,
    line_chart,
    nice_max,
)


@pytest.mark.parametrize(
    ("value", "top"), [(0.0, 1.0), (0.4, 1.0), (1.0, 1.0), (1.3, 1.5), (7.0, 7.0), (13, 15.0)]
)
def test_nice_max(value: float, top: float) -> None:
    assert nice_max(value) == top


def test_lines_break_where_there_is_no_value_and_span_the_plot() -> None:
    chart = line_chart(["a", "b", "c", "d"], [Series("hit", "hit", (0.0, 1.0, None, 0.5))])
    (line,) = chart.lines
    assert line.paths == (f"{LEFT}.0,{HEIGHT - BOTTOM}.0 {LEFT + (WIDTH - LEFT - RIGHT) / 3:.1f},{TOP}.0",
                          f"{WIDTH - RIGHT}.0,{(HEIGHT - BOTTOM + TOP) / 2:.1f}")  # fmt: skip
    assert [d.title for d in line.dots] == ["hit a: 0%", "hit b: 100%", "hit d: 50%"]
    assert [t.label for t in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    assert [t.label for t in chart.x_ticks] == ["a", "b", "c", "d"]


def test_a_rate_above_one_raises_the_axis_and_many_labels_are_thinned() -> None:
    labels = [f"d{n}" for n in range(30)]
    chart = line_chart(labels, [Series("neg", "neg", tuple([1.2] + [0.1] * 29))])
    assert chart.y_ticks[-1].label == "125%" and len(chart.x_ticks) <= 8
    assert chart.x_ticks[0].label == "d0"


def test_a_single_point_sits_in_the_middle_and_bars_start_at_zero() -> None:
    (line,) = line_chart(["only"], [Series("x", "x", (0.5,))]).lines
    assert line.dots[0].x == LEFT + (WIDTH - LEFT - RIGHT) / 2
    bars = bar_chart(["a", "b"], [0, 8], "turns").bars
    assert bars[0].height == 0 and bars[1].y == TOP and bars[1].title == "turns b: 8"
    assert bar_chart([], [], "turns").bars == ()
