"""A training run's learning curves as one HTML page beside ``metrics.jsonl`` (``curves.html``).

People would rather look at a curve than read a JSON line per step. :func:`write_curves` draws,
from the rows of ``metrics.jsonl``, one chart per quantity a reader of an RL run looks at first:

* the training reward (``train/reward``);
* the invalid-move rate (``train/invalid_rate``);
* the return against each evaluation opponent (``eval/<game>/<opponent>/mean_return``, one line
  each, both seats together);
* the KL to the sampling policy and to the reference (``train/approx_kl``, ``train/kl_ref``);
* the policy's entropy (``train/entropy``).

A chart whose metrics no row has is left out. The page is self-contained: inline SVG, no script,
nothing fetched; every label (opponent names may come from a config or an endpoint) is
HTML-escaped. The trainer rewrites it at each checkpoint and at the end of a run; it is written
to a temporary file and renamed, so a reader never sees half a page.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: The page's file name, beside ``metrics.jsonl``.
CURVES_FILE = "curves.html"

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 760, 220, 64, 260, 16, 28
#: Characters of a legend label shown (the whole label is the line's tooltip).
LABEL_CHARS = 40
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")

_RETURN = re.compile(r"^eval/(?P<game>[^/]+)/(?P<opponent>.+)/mean_return$")


@dataclass(frozen=True)
class Chart:
    """One chart: a title and its series (label -> the metric's key)."""

    title: str
    series: dict[str, str]


def charts(keys: Sequence[str]) -> list[Chart]:
    """The charts of the module docstring that the logged ``keys`` can draw."""
    returns = {}
    for key in sorted(keys):
        match = _RETURN.match(key)
        if match is not None and "/seat" not in match["opponent"]:
            returns[f"{match['game']} vs {match['opponent']}"] = key
    wanted = [
        Chart("reward", {"train/reward": "train/reward"}),
        Chart("invalid-move rate", {"train/invalid_rate": "train/invalid_rate"}),
        Chart("evaluation return vs each opponent", returns),
        Chart("KL", {"approx_kl": "train/approx_kl", "kl_ref": "train/kl_ref"}),
        Chart("entropy", {"train/entropy": "train/entropy"}),
    ]
    present = set(keys)
    found = []
    for chart in wanted:
        series = {label: key for label, key in chart.series.items() if key in present}
        if series:
            found.append(Chart(chart.title, series))
    return found


def _points(rows: Sequence[Mapping[str, float]], key: str) -> list[tuple[float, float]]:
    """``(step, value)`` of the rows that have a finite ``key``."""
    return [
        (float(row["step"]), float(row[key]))
        for row in rows
        if key in row and "step" in row and math.isfinite(row[key])
    ]


def _scale(low: float, high: float, size: float, flip: bool) -> tuple[float, float]:
    """``(a, b)`` mapping ``[low, high]`` onto ``[0, size]`` (reversed when ``flip``)."""
    span = high - low if high > low else 1.0
    a = size / span
    return (-a, size + low * a) if flip else (a, -low * a)


def chart_svg(chart: Chart, rows: Sequence[Mapping[str, float]]) -> str:
    """One chart as an inline SVG: a line per series, the axes' ranges, a legend."""
    lines = {label: _points(rows, key) for label, key in chart.series.items()}
    every = [point for points in lines.values() for point in points]
    steps = [step for step, _ in every]
    values = [value for _, value in every]
    x_low, x_high = min(steps), max(steps)
    y_low, y_high = min(values), max(values)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    ax, bx = _scale(x_low, x_high, plot_w, flip=False)
    ay, by = _scale(y_low, y_high, plot_h, flip=True)
    body = [
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#bbb"/>',
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{y_high:.4g}</text>',
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end">{y_low:.4g}</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 8}">step {x_low:g}</text>',
        f'<text x="{LEFT + plot_w}" y="{HEIGHT - 8}" text-anchor="end">step {x_high:g}</text>',
    ]
    for index, (label, points) in enumerate(lines.items()):
        colour = COLOURS[index % len(COLOURS)]
        coordinates = " ".join(
            f"{LEFT + ax * x + bx:.1f},{TOP + ay * y + by:.1f}" for x, y in points
        )
        shown = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        body.append(
            f'<polyline points="{coordinates}" fill="none" stroke="{colour}" '
            f'stroke-width="1.5"><title>{html.escape(label)}</title></polyline>'
        )
        body.append(
            f'<text x="{LEFT + plot_w + 8}" y="{TOP + 12 + 16 * index}" fill="{colour}">'
            f"{html.escape(shown)}</text>"
        )
    title = html.escape(chart.title)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="{title}" font-size="11" '
        f'font-family="sans-serif"><title>{title}</title>{"".join(body)}</svg>'
    )


def curves_page(rows: Sequence[Mapping[str, float]], run_name: str) -> str:
    """The whole page: a heading and one titled chart per drawable quantity."""
    keys = sorted({key for row in rows for key in row if key != "step"})
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(run_name)}: learning curves</title>",
        "<style>body{font-family:sans-serif;margin:2em}h2{font-size:1.05em}</style>",
        "</head><body>",
        f"<h1>{html.escape(run_name)}: learning curves</h1>",
        f"<p>{len(rows)} logged steps, from <code>metrics.jsonl</code>.</p>",
    ]
    for chart in charts(keys):
        parts.append(f"<h2>{html.escape(chart.title)}</h2>{chart_svg(chart, rows)}")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_curves(rows: Sequence[Mapping[str, float]], output_dir: Path, run_name: str) -> Path:
    """Write ``curves.html`` under ``output_dir`` (atomically); returns its path."""
    path = output_dir / CURVES_FILE
    partial = path.with_suffix(".html.tmp")
    partial.write_text(curves_page(rows, run_name), encoding="utf-8")
    os.replace(partial, path)
    return path
