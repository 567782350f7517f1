"""The report's SVG charts as geometry (the templates' chart macros draw them): horizontal bars with 95%
whiskers on a labelled value axis, and a calibration plot."""

from __future__ import annotations

import math
from typing import Any, Sequence, TypedDict

from proctor.scoring.stats import is_proportion, wilson_interval

Z95 = 1.959963984540054


class CalibrationBin(TypedDict):
    bin: list[float]  # the confidence range [low, high)
    n: int  # samples whose top probability fell in it
    confidence: float  # their mean top probability
    accuracy: float  # the share of them whose top choice was a gold one


class Calibration(TypedDict):
    """A task's calibration (``report_data.calibration``): its non-empty bins and the expected calibration error."""

    bins: list[CalibrationBin]
    ece: float
    n: int  # samples with a distribution and a gold answer


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5 or 5 times a power of ten apart)."""
    span = hi - lo if hi > lo else 1.0
    raw = span / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    ticks = [round(first, 10)]
    while ticks[-1] < hi - step * 1e-9:  # the last tick reaches hi
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def interval(value: float, stderr: float | None, n: int | None) -> tuple[tuple[float, float] | None, bool]:
    """A bar's 95% interval and whether it is a proportion's: Wilson's for a mean of 0/1 values (it stays in
    [0, 1]: a part of two questions no longer draws from -0.5 to 1.5), else ``value +- 1.96 * stderr``."""
    if n is not None and is_proportion(value, stderr, n):
        return wilson_interval(value, n), True
    return ((value - Z95 * stderr, value + Z95 * stderr) if stderr else None), False


def bar_chart(items: Sequence[tuple[Any, ...]], title: str) -> dict[str, object] | None:
    """Geometry of horizontal bars with 95% whiskers on a labelled value axis; labels are never cut. Each item is
    (label, value, stderr) or (label, value, stderr, n): with n a proportion's whisker is its Wilson interval and a
    chart of proportions only has the axis [0, 1]."""
    values = []
    for item in items:
        label, v, s = item[:3]
        n = item[3] if len(item) > 3 else None
        if isinstance(v, (int, float)) and math.isfinite(v):
            values.append((str(label), float(v), s, n, *interval(float(v), s, n)))
    if not values:
        return None
    lows = [span[0] if span else v for _, v, _, _, span, _ in values] + [0.0]
    highs = [span[1] if span else v for _, v, _, _, span, _ in values] + [0.0]
    ticks = nice_ticks(min(lows), max(highs))
    if all(proportion for *_, proportion in values):  # a proportion's axis is its range: [0, 1]
        ticks = [t for t in ticks if 0 <= t <= 1] or [0.0, 1.0]
        ticks = sorted({0.0, *ticks, 1.0} if max(highs) > ticks[-1] else {0.0, *ticks})
    lo, hi = ticks[0], ticks[-1]
    if hi - lo < 1e-12:
        hi = lo + 1
    bar_h, top, plot = 18, 24, 300
    left = 16 + 6.5 * max(len(label) for label, *_ in values)  # room for the longest label
    bottom = top + (bar_h + 6) * len(values)

    def x(v: float) -> float:
        return round(left + (v - lo) / (hi - lo) * plot, 1)

    bars = []
    for i, (label, v, s, n, span, proportion) in enumerate(values):
        y = top + i * (bar_h + 6)
        x0, x1 = sorted((x(0), x(v)))
        bars.append(
            {
                "label": label,
                "y": y,
                "x0": x0,
                "width": max(round(x1 - x0, 1), 1),
                "value": v,
                "stderr": s,
                "n": n,
                "interval": span,
                "interval_kind": "Wilson" if proportion else "normal",
                "whisker": (x(span[0]), x(span[1])) if span else None,
                "value_x": max(x1, x(span[1]) if span else x1) + 4,
            }
        )
    return {
        "title": title,
        "width": int(max(left + plot + 170, 7 * len(title) + 12)),  # the value, its stderr and n at the bar's end
        "height": bottom + 22,
        "left": left,
        "plot": plot,
        "top": top,
        "bottom": bottom,
        "bar_h": bar_h,
        "zero": x(0),
        "ticks": [{"x": x(t), "label": f"{t:.4g}"} for t in ticks],
        "bars": bars,
    }


def calibration_chart(cal: Calibration, size: int = 260, pad: int = 40) -> dict[str, object]:
    inner = size - 2 * pad

    def px(v: float) -> float:
        return round(pad + v * inner, 1)

    def py(v: float) -> float:
        return round(size - pad - v * inner, 1)

    return {
        "size": size,
        "pad": pad,
        "inner": inner,
        "ece": cal["ece"],
        "n": cal["n"],
        "ticks": [{"label": f"{t:.1f}", "x": px(t), "y": py(t)} for t in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)],
        "x0": px(0),
        "y0": py(0),
        "x1": px(1),
        "y1": py(1),
        "points": [
            {"x": px(b["confidence"]), "y": py(b["accuracy"]), "r": round(2 + min(6, math.sqrt(b["n"])), 1), **b}
            for b in cal["bins"]
        ],
    }
