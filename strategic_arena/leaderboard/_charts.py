"""Charts of the leaderboard page, drawn as inline SVG (no script, nothing fetched).

Every label from a user or a model is escaped with :func:`~._cells.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from strategic_arena.leaderboard._cells import escape

LABEL_W = 230
PLOT_W = 460
ROW_H = 24
TOP = 28


def clip(name: str, limit: int = 32) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def header_lines(title: str, width: float) -> list[str]:
    """``title`` on one line, or two when it is wider than a ``width``-pixel column.

    Column headers of the per-game grid would otherwise run into each other ("Kuhn
    PokerLeduc Hold'em"); at 12 px a character is about 7 px wide.
    """
    words = title.split()
    if len(title) * 7 <= width - 6 or len(words) < 2:
        return [clip(title, 18)]
    # Split where the two lines are the most even.
    cut = min(range(1, len(words)), key=lambda i: abs(len(" ".join(words[:i])) * 2 - len(title)))
    return [clip(" ".join(words[:cut]), 18), clip(" ".join(words[cut:]), 18)]


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]``."""
    span = high - low if high > low else 1.0
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def svg(height: int, label: str, body: list[str]) -> str:
    width = LABEL_W + PLOT_W + 60
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>" + "".join(body) + "</svg>"
    )


def name_class(row: Mapping[str, Any]) -> str:
    """The class attribute of a player's label: baselines (reference players) in grey italics."""
    return ' class="baseline"' if row["baseline"] else ""


#: The legend of :func:`name_class`, appended to a chart's caption when it shows a baseline.
BASELINE_LEGEND = " Names in grey italics: baselines (built-in solvers and bots)."


def axis(low: float, high: float, height: int, unit: str = "") -> list[str]:
    def x(value: float) -> float:
        return LABEL_W + (value - low) / (high - low) * PLOT_W

    parts = []
    for tick in ticks(low, high):
        parts.append(
            f'<line class="axis" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{TOP - 6}" '
            f'y2="{height - 8}"/><text class="muted" x="{x(tick):.1f}" y="{TOP - 10}" '
            f'text-anchor="middle">{tick:g}{unit}</text>'
        )
    return parts


def rating_chart(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    """Each rated player's mu (dot) with the range mu ± 3 sigma; the left end ranks."""
    rated = [row for row in rows if row["trueskill"] is not None]
    if not rated:
        return ""
    lows = [float(row["trueskill"]["mu"] - 3 * row["trueskill"]["sigma"]) for row in rated]
    highs = [float(row["trueskill"]["mu"] + 3 * row["trueskill"]["sigma"]) for row in rated]
    low, high = float(math.floor(min(lows))), float(math.ceil(max(highs)))
    high = high if high > low else low + 1.0
    height = TOP + ROW_H * len(rated) + 10

    def x(value: float) -> float:
        return LABEL_W + (value - low) / (high - low) * PLOT_W

    body = axis(low, high, height)
    for i, row in enumerate(rated):
        y = TOP + ROW_H * i + ROW_H / 2
        ts = row["trueskill"]
        left, right = ts["mu"] - 3 * ts["sigma"], ts["mu"] + 3 * ts["sigma"]
        tip = escape(
            f"{row['player']}: mu {ts['mu']:.2f}, sigma {ts['sigma']:.2f}, "
            f"mu - 3 sigma {ts['conservative']:.2f}"
        )
        body.append(
            f'<g><title>{tip}</title><text{name_class(row)} x="{LABEL_W - 8}" y="{y + 4:.1f}" '
            f'text-anchor="end">{escape(clip(row["player"]))}</text>'
            f'<line class="range" x1="{x(left):.1f}" x2="{x(right):.1f}" y1="{y:.1f}" '
            f'y2="{y:.1f}"/><rect class="floor" x="{x(left) - 1.5:.1f}" y="{y - 7:.1f}" '
            f'width="3" height="14"/><circle class="mu" cx="{x(ts["mu"]):.1f}" cy="{y:.1f}" '
            f'r="5"/></g>'
        )
    caption = (
        "TrueSkill: dot = μ, bar = μ ± 3σ; players are ranked by the bar's left end "
        "(μ − 3σ, marked)."
    ) + (BASELINE_LEGEND if any(row["baseline"] for row in rated) else "")
    return f"<figure>{svg(height, label, body)}<figcaption>{caption}</figcaption></figure>"


Bar = tuple[float | None, float | None, str]
"""A bar: normalized score, its CI half-width (both in percent) and its CSS class."""


def bar_chart(items: Sequence[tuple[str, Sequence[Bar]]], label: str, caption: str) -> str:
    """Horizontal bars on a 0-100 scale, one group of bars per player, with CI whiskers."""
    if not items:
        return ""
    per = max(len(bars) for _, bars in items)
    bar_h = 14 if per == 1 else 10
    group_h = max(ROW_H, per * (bar_h + 3) + 6)
    height = TOP + group_h * len(items) + 10
    low, high = 0.0, 100.0

    def x(value: float) -> float:
        clamped = min(high, max(low, value))
        return LABEL_W + (clamped - low) / (high - low) * PLOT_W

    body = axis(low, high, height)
    for i, (name, bars) in enumerate(items):
        top = TOP + group_h * i + (group_h - len(bars) * (bar_h + 3)) / 2
        body.append(
            f'<text x="{LABEL_W - 8}" y="{TOP + group_h * i + group_h / 2 + 4:.1f}" '
            f'text-anchor="end">{escape(clip(name))}<title>{escape(name)}</title></text>'
        )
        for j, (value, half, css) in enumerate(bars):
            if value is None:
                continue
            y = top + j * (bar_h + 3)
            tip = escape(f"{name}: {value:.1f}" + (f" ± {half:.1f}" if half is not None else ""))
            parts = [
                f'<g><title>{tip}</title><rect class="{css}" x="{LABEL_W}" y="{y:.1f}" '
                f'width="{x(value) - LABEL_W:.1f}" height="{bar_h}"/>'
            ]
            if half is not None:
                mid = y + bar_h / 2
                parts.append(
                    f'<line class="whisker" x1="{x(value - half):.1f}" '
                    f'x2="{x(value + half):.1f}" y1="{mid:.1f}" y2="{mid:.1f}"/>'
                )
            end = max(x(value), x(value + half) if half is not None else 0.0)
            parts.append(
                f'<text class="muted" x="{end + 4:.1f}" y="{y + bar_h - 2:.1f}">'
                f"{value:.1f}</text></g>"
            )
            body.append("".join(parts))
    return f"<figure>{svg(height, label, body)}<figcaption>{caption}</figcaption></figure>"


def grid_chart(rows: Sequence[Mapping[str, Any]], envs: Sequence[Mapping[str, Any]]) -> str:
    """Normalized score per game: one small 0-100 bar per player and game."""
    if not rows or not envs:
        return ""
    cell_w = max(60, min(140, PLOT_W // len(envs)))
    width = LABEL_W + cell_w * len(envs) + 20
    height = TOP + 12 + ROW_H * len(rows) + 10
    body = []
    for k, env in enumerate(envs):
        centre = LABEL_W + cell_w * k + cell_w / 2
        lines = header_lines(env["title"], cell_w)
        spans = "".join(
            f'<tspan x="{centre:.1f}" y="{TOP - 4 - 14 * (len(lines) - 1 - i)}">'
            f"{escape(line)}</tspan>"
            for i, line in enumerate(lines)
        )
        body.append(f'<text text-anchor="middle">{spans}</text>')
    for i, row in enumerate(rows):
        y = TOP + 12 + ROW_H * i
        body.append(
            f'<text{name_class(row)} x="{LABEL_W - 8}" y="{y + ROW_H / 2 + 4:.1f}" '
            f'text-anchor="end">{escape(clip(row["player"]))}<title>{escape(row["player"])}'
            "</title></text>"
        )
        for k, env in enumerate(envs):
            value = row["normalized"].get(env["env_id"])
            left = LABEL_W + cell_w * k + 4
            inner = cell_w - 34
            body.append(
                f'<line class="axis" x1="{left}" x2="{left}" y1="{y + 3}" y2="{y + ROW_H - 3}"/>'
            )
            if value is None:
                continue
            length = inner * min(100.0, max(0.0, value)) / 100
            tip = escape(f"{row['player']} at {env['title']}: {value:.1f}")
            body.append(
                f'<g><title>{tip}</title><rect class="bar" x="{left}" y="{y + 5}" '
                f'width="{length:.1f}" height="{ROW_H - 10}"/><text class="muted" '
                f'x="{left + length + 3:.1f}" y="{y + ROW_H / 2 + 4:.1f}">{value:.0f}</text></g>'
            )
    label = "Normalized score per game"
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>" + "".join(body) + "</svg>"
    )
    caption = "Normalized score per game, 0 (worst) to 100 (optimum); Hanabi: self-play."
    caption += BASELINE_LEGEND if any(row["baseline"] for row in rows) else ""
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


def interval_chart(
    items: Sequence[tuple[str, float, float, float]], label: str, caption: str
) -> str:
    """A dot per item at its value with a bar over its interval, on a scale from 0.

    Items are ``(name, value, low, high)`` with non-negative values (exploitability).
    """
    if not items:
        return ""
    high = max(max(value, top) for _, value, _, top in items)
    ticks = ticks_for(high)
    top_tick = ticks[-1]
    height = TOP + ROW_H * len(items) + 10

    def x(value: float) -> float:
        return LABEL_W + min(value, top_tick) / top_tick * PLOT_W

    body = axis(0.0, top_tick, height)
    for i, (name, value, low, top) in enumerate(items):
        y = TOP + ROW_H * i + ROW_H / 2
        tip = escape(f"{name}: {value:.4f} [{low:.4f}, {top:.4f}]")
        body.append(
            f'<g><title>{tip}</title><text x="{LABEL_W - 8}" y="{y + 4:.1f}" '
            f'text-anchor="end">{escape(clip(name))}</text>'
            f'<line class="range" x1="{x(low):.1f}" x2="{x(top):.1f}" y1="{y:.1f}" '
            f'y2="{y:.1f}"/><circle class="mu" cx="{x(value):.1f}" cy="{y:.1f}" r="5"/>'
            f'<text class="muted" x="{x(max(value, top)) + 8:.1f}" y="{y + 4:.1f}">'
            f"{value:.3g}</text></g>"
        )
    return f"<figure>{svg(height, label, body)}<figcaption>{caption}</figcaption></figure>"


def ticks_for(high: float) -> list[float]:
    """Round ticks from 0 whose last one reaches ``high`` (at least two ticks)."""
    found = ticks(0.0, high if high > 0 else 1.0)
    step = found[1] - found[0] if len(found) > 1 else (high or 1.0)
    while len(found) < 2 or found[-1] < high:
        found.append(found[-1] + step)
    return found
