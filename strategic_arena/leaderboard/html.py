"""``index.html``: the leaderboard's data (:mod:`.data`) as one static page that works offline.

The page is a single file: its stylesheet (``page.css``) and script (``page.js``) are inlined,
the charts are inline SVG drawn here, and nothing is fetched from a network. One tab per game
(plus Overall, Players and About); every table sorts by clicking a column header. Without
JavaScript, all panels show one after the other in ranking order.

Safety: every string that came from a user or a model -- player names, parameters, answers --
goes through :func:`html.escape` (quotes included, for attributes) and so shows as text. As a
second line of defence the page carries a Content-Security-Policy that allows only its own
inline script and stylesheet, by SHA-256 hash: a script that slipped through escaping would
still not run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from strategic_arena.leaderboard import _format as fmt


def escape(text: object) -> str:
    """``text`` as HTML text or attribute value (``<``, ``>``, ``&`` and quotes escaped)."""
    return html.escape(str(text), quote=True)


def _asset(name: str) -> str:
    return resources.files("strategic_arena.leaderboard").joinpath(name).read_text()


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def _sort_value(value: float | int | None) -> str:
    return "" if value is None else repr(value)


# ------------------------------------------------------------------------------------------
# tables


@dataclass(frozen=True)
class Cell:
    """One table cell: HTML content (already escaped), its sort value and whether it is text."""

    content: str
    sort: str | None = None
    text: bool = False
    wrap: bool = False

    def render(self) -> str:
        """The ``<td>``."""
        classes = " ".join(c for c, on in (("text", self.text), ("wrap", self.wrap)) if on)
        attributes = f' class="{classes}"' if classes else ""
        if self.sort is not None:
            attributes += f' data-sort="{escape(self.sort)}"'
        return f"<td{attributes}>{self.content}</td>"


@dataclass(frozen=True)
class Column:
    """A column header: its label (already escaped), alignment and first sort direction.

    ``wide`` headers (named after players) may wrap anywhere, so long names do not stretch
    the table.
    """

    label: str
    text: bool = False
    descending: bool = False
    title: str = ""
    wide: bool = False

    def render(self) -> str:
        """The ``<th>`` with its sort button."""
        attributes = ' scope="col" aria-sort="none"'
        classes = " ".join(c for c, on in (("text", self.text), ("wide", self.wide)) if on)
        if classes:
            attributes += f' class="{classes}"'
        if self.descending:
            attributes += ' data-first="descending"'
        if self.title:
            attributes += f' title="{self.title}"'
        return f'<th{attributes}><button type="button">{self.label}</button></th>'


def _table(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], caption: str) -> str:
    head = "".join(column.render() for column in columns)
    body = "\n".join("<tr>" + "".join(cell.render() for cell in row) + "</tr>" for row in rows)
    return (
        f'<div class="table-wrap"><table class="sortable"><caption class="note">{caption}'
        f"</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>"
    )


def _breakable(name: str) -> str:
    """``name`` escaped, with line-break opportunities after ``:`` and ``,`` (opponent specs)."""
    return escape(name).replace(":", ":<wbr>").replace(",", ",<wbr>")


def _number(value: float | int | None, text: str) -> Cell:
    return Cell(escape(text), _sort_value(value))


def _player(name: str) -> Cell:
    return Cell(escape(name), text=True)


def _rank(row: Mapping[str, Any]) -> Cell:
    return _number(row["rank"], fmt.MISSING if row["rank"] is None else str(row["rank"]))


def _points(row: Mapping[str, Any]) -> float | None:
    """Share of points (win 1, draw 1/2) for sorting a W/D/L column."""
    if row.get("wins") is None:
        return None
    games = row["wins"] + row["draws"] + row["losses"]
    return (row["wins"] + row["draws"] / 2) / games if games else None


def _trueskill_cells(trueskill: Mapping[str, Any] | None) -> list[Cell]:
    mu = trueskill["mu"] if trueskill else None
    low = trueskill["conservative"] if trueskill else None
    return [_number(mu, fmt.rating(trueskill)), _number(low, fmt.conservative(trueskill))]


# ------------------------------------------------------------------------------------------
# charts (inline SVG)

_LABEL_W = 230
_PLOT_W = 460
_ROW_H = 24
_TOP = 28


def _clip(name: str, limit: int = 32) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``[low, high]``."""
    span = high - low if high > low else 1.0
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw), default=raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _svg(height: int, label: str, body: list[str]) -> str:
    width = _LABEL_W + _PLOT_W + 60
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>" + "".join(body) + "</svg>"
    )


def _axis(low: float, high: float, height: int, unit: str = "") -> list[str]:
    def x(value: float) -> float:
        return _LABEL_W + (value - low) / (high - low) * _PLOT_W

    parts = []
    for tick in _ticks(low, high):
        parts.append(
            f'<line class="axis" x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{_TOP - 6}" '
            f'y2="{height - 8}"/><text class="muted" x="{x(tick):.1f}" y="{_TOP - 10}" '
            f'text-anchor="middle">{tick:g}{unit}</text>'
        )
    return parts


def _rating_chart(rows: Sequence[Mapping[str, Any]], label: str) -> str:
    """Each rated player's mu (dot) with the range mu ± 3 sigma; the left end ranks."""
    rated = [row for row in rows if row["trueskill"] is not None]
    if not rated:
        return ""
    lows = [float(row["trueskill"]["mu"] - 3 * row["trueskill"]["sigma"]) for row in rated]
    highs = [float(row["trueskill"]["mu"] + 3 * row["trueskill"]["sigma"]) for row in rated]
    low, high = float(math.floor(min(lows))), float(math.ceil(max(highs)))
    high = high if high > low else low + 1.0
    height = _TOP + _ROW_H * len(rated) + 10

    def x(value: float) -> float:
        return _LABEL_W + (value - low) / (high - low) * _PLOT_W

    body = _axis(low, high, height)
    for i, row in enumerate(rated):
        y = _TOP + _ROW_H * i + _ROW_H / 2
        ts = row["trueskill"]
        left, right = ts["mu"] - 3 * ts["sigma"], ts["mu"] + 3 * ts["sigma"]
        tip = escape(
            f"{row['player']}: mu {ts['mu']:.2f}, sigma {ts['sigma']:.2f}, "
            f"mu - 3 sigma {ts['conservative']:.2f}"
        )
        body.append(
            f'<g><title>{tip}</title><text x="{_LABEL_W - 8}" y="{y + 4:.1f}" '
            f'text-anchor="end">{escape(_clip(row["player"]))}</text>'
            f'<line class="range" x1="{x(left):.1f}" x2="{x(right):.1f}" y1="{y:.1f}" '
            f'y2="{y:.1f}"/><rect class="floor" x="{x(left) - 1.5:.1f}" y="{y - 7:.1f}" '
            f'width="3" height="14"/><circle class="mu" cx="{x(ts["mu"]):.1f}" cy="{y:.1f}" '
            f'r="5"/></g>'
        )
    caption = (
        "TrueSkill: dot = μ, bar = μ ± 3σ; players are ranked by the bar's left end "
        "(μ − 3σ, marked)."
    )
    return f"<figure>{_svg(height, label, body)}<figcaption>{caption}</figcaption></figure>"


Bar = tuple[float | None, float | None, str]
"""A bar: normalized score, its CI half-width (both in percent) and its CSS class."""


def _bar_chart(items: Sequence[tuple[str, Sequence[Bar]]], label: str, caption: str) -> str:
    """Horizontal bars on a 0-100 scale, one group of bars per player, with CI whiskers."""
    if not items:
        return ""
    per = max(len(bars) for _, bars in items)
    bar_h = 14 if per == 1 else 10
    group_h = max(_ROW_H, per * (bar_h + 3) + 6)
    height = _TOP + group_h * len(items) + 10
    low, high = 0.0, 100.0

    def x(value: float) -> float:
        clamped = min(high, max(low, value))
        return _LABEL_W + (clamped - low) / (high - low) * _PLOT_W

    body = _axis(low, high, height)
    for i, (name, bars) in enumerate(items):
        top = _TOP + group_h * i + (group_h - len(bars) * (bar_h + 3)) / 2
        body.append(
            f'<text x="{_LABEL_W - 8}" y="{_TOP + group_h * i + group_h / 2 + 4:.1f}" '
            f'text-anchor="end">{escape(_clip(name))}<title>{escape(name)}</title></text>'
        )
        for j, (value, half, css) in enumerate(bars):
            if value is None:
                continue
            y = top + j * (bar_h + 3)
            tip = escape(f"{name}: {value:.1f}" + (f" ± {half:.1f}" if half is not None else ""))
            parts = [
                f'<g><title>{tip}</title><rect class="{css}" x="{_LABEL_W}" y="{y:.1f}" '
                f'width="{x(value) - _LABEL_W:.1f}" height="{bar_h}"/>'
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
    return f"<figure>{_svg(height, label, body)}<figcaption>{caption}</figcaption></figure>"


def _grid_chart(rows: Sequence[Mapping[str, Any]], envs: Sequence[Mapping[str, Any]]) -> str:
    """Normalized score per game: one small 0-100 bar per player and game."""
    if not rows or not envs:
        return ""
    cell_w = max(60, min(140, _PLOT_W // len(envs)))
    width = _LABEL_W + cell_w * len(envs) + 20
    height = _TOP + 12 + _ROW_H * len(rows) + 10
    body = []
    for k, env in enumerate(envs):
        body.append(
            f'<text x="{_LABEL_W + cell_w * k + cell_w / 2:.1f}" y="{_TOP - 4}" '
            f'text-anchor="middle">{escape(_clip(env["title"], 18))}</text>'
        )
    for i, row in enumerate(rows):
        y = _TOP + 12 + _ROW_H * i
        body.append(
            f'<text x="{_LABEL_W - 8}" y="{y + _ROW_H / 2 + 4:.1f}" text-anchor="end">'
            f"{escape(_clip(row['player']))}<title>{escape(row['player'])}</title></text>"
        )
        for k, env in enumerate(envs):
            value = row["normalized"].get(env["env_id"])
            left = _LABEL_W + cell_w * k + 4
            inner = cell_w - 34
            body.append(
                f'<line class="axis" x1="{left}" x2="{left}" y1="{y + 3}" y2="{y + _ROW_H - 3}"/>'
            )
            if value is None:
                continue
            length = inner * min(100.0, max(0.0, value)) / 100
            tip = escape(f"{row['player']} at {env['title']}: {value:.1f}")
            body.append(
                f'<g><title>{tip}</title><rect class="bar" x="{left}" y="{y + 5}" '
                f'width="{length:.1f}" height="{_ROW_H - 10}"/><text class="muted" '
                f'x="{left + length + 3:.1f}" y="{y + _ROW_H / 2 + 4:.1f}">{value:.0f}</text></g>'
            )
    label = "Normalized score per game"
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{label}">'
        f"<title>{label}</title>" + "".join(body) + "</svg>"
    )
    caption = "Normalized score per game, 0 (worst) to 100 (optimum); Hanabi: self-play."
    return f"<figure>{svg}<figcaption>{caption}</figcaption></figure>"


# ------------------------------------------------------------------------------------------
# panels


def _half_normalized(env: Mapping[str, Any], half: float | None) -> float | None:
    """A return CI half-width as normalized-score points."""
    if half is None:
        return None
    norm = env["normalization"]
    return float(100 * half / (norm["optimum"] - norm["worst"]))


def _competitive(env: Mapping[str, Any]) -> str:
    norm = env["normalization"]
    opponents = env["reference_opponents"]
    columns = [
        Column("rank"),
        Column("player", text=True),
        Column("TrueSkill μ ± σ", descending=True),
        Column("μ − 3σ", descending=True, title="conservative score: the ranking"),
        Column("games", descending=True),
        Column("W/D/L", descending=True, title="sorts by points share (draw = 1/2)"),
        *(
            Column(
                f"vs {_breakable(name)}", descending=True, title="mean return ± 95% CI", wide=True
            )
            for name in opponents
        ),
        Column("normalized", descending=True),
        Column("invalid %", descending=True),
    ]
    rows = []
    for row in env["rows"]:
        versus = row["versus"]
        rows.append(
            [
                _rank(row),
                _player(row["player"]),
                *_trueskill_cells(row["trueskill"]),
                _number(row["games"], str(row["games"])),
                _number(_points(row), fmt.wdl(row)),
                *(
                    _number(
                        versus[name]["mean"],
                        fmt.mean_ci(versus[name]["mean"], versus[name]["ci95"]),
                    )
                    if name in versus
                    else _number(None, fmt.MISSING)
                    for name in opponents
                ),
                _number(row["normalized"], fmt.score(row["normalized"])),
                _number(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
            ]
        )
    title = escape(env["title"])
    bars = [
        (
            row["player"],
            [
                (
                    row["normalized"],
                    _half_normalized(env, row["mean_return"]["ci95"]),
                    "bar",
                )
            ],
        )
        for row in env["rows"]
    ]
    intro = (
        f'<p class="note">Rated matches: {env["rated_matches"]}'
        f"{fmt.DUPLICATE if env['duplicate_matches'] else ''}; TrueSkill draw probability "
        f"{fmt.probability(env['draw_probability'])}. <em>vs X</em>: mean return against X "
        f"± 95% CI (Student t), both seats. Normalized score: {norm['worst']:g} = 0, "
        f"{norm['optimum']:g} = 100, over all the player's games here.</p>"
    )
    return "\n".join(
        [
            intro,
            _rating_chart(env["rows"], f"{env['title']}: TrueSkill ratings"),
            _bar_chart(
                bars,
                f"{env['title']}: normalized score",
                "Normalized score over all games here; whiskers: 95% CI.",
            ),
            _table(columns, rows, f"{title}: ranked by TrueSkill μ − 3σ"),
        ]
    )


def _cooperative(env: Mapping[str, Any]) -> str:
    norm = env["normalization"]
    bots = ", ".join(escape(name) for name in env["partner_bots"]) or "none"
    columns = [
        Column("rank"),
        Column("player", text=True),
        Column("self-play score", descending=True, title="mean shared return ± 95% CI"),
        Column("with partner bot", descending=True, title="mean shared return ± 95% CI"),
        Column("games", descending=True),
        Column("normalized (self-play)", descending=True),
        Column("normalized (with bot)", descending=True),
        Column("invalid %", descending=True),
    ]
    rows = []
    bars: list[tuple[str, Sequence[Bar]]] = []
    for row in env["rows"]:
        own, bot = row["self_play"], row["with_partner_bot"]
        rows.append(
            [
                _rank(row),
                _player(row["player"]),
                _number(own and own["mean"], fmt.mean_ci(own["mean"], own["ci95"]))
                if own
                else _number(None, fmt.MISSING),
                _number(bot and bot["mean"], fmt.mean_ci(bot["mean"], bot["ci95"]))
                if bot
                else _number(None, fmt.MISSING),
                _number(row["games"], str(row["games"])),
                _number(own["normalized"] if own else None, fmt.score(own and own["normalized"])),
                _number(bot["normalized"] if bot else None, fmt.score(bot and bot["normalized"])),
                _number(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
            ]
        )
        bars.append(
            (
                row["player"],
                [
                    (
                        own["normalized"] if own else None,
                        _half_normalized(env, own["ci95"]) if own else None,
                        "bar",
                    ),
                    (
                        bot["normalized"] if bot else None,
                        _half_normalized(env, bot["ci95"]) if bot else None,
                        "bar-alt",
                    ),
                ],
            )
        )
    intro = (
        '<p class="note">Cooperative: ranked by mean self-play score, then by mean score with '
        f"the partner bot ({bots}); not rated by TrueSkill. Normalized: {norm['worst']:g} = 0, "
        f"{norm['optimum']:g} = 100.</p>"
    )
    caption = (
        'Normalized score: <span class="legend-swatch bar"></span>self-play'
        '<span class="legend-swatch bar-alt"></span>with the partner bot; whiskers: 95% CI.'
    )
    return "\n".join(
        [
            intro,
            _bar_chart(bars, f"{env['title']}: normalized score", caption),
            _table(columns, rows, f"{escape(env['title'])}: ranked by self-play score"),
        ]
    )


def _overall(data: Mapping[str, Any]) -> str:
    overall = data["overall"]
    envs = data["envs"]
    columns = [
        Column("rank"),
        Column("player", text=True),
        Column("TrueSkill μ ± σ", descending=True),
        Column("μ − 3σ", descending=True, title="conservative score: the ranking"),
        Column("games", descending=True),
        Column("W/D/L", descending=True, title="sorts by points share (draw = 1/2)"),
        *(Column(escape(env["title"]), descending=True, title="normalized score") for env in envs),
        Column("mean normalized", descending=True),
        Column("invalid %", descending=True),
    ]
    rows = [
        [
            _rank(row),
            _player(row["player"]),
            *_trueskill_cells(row["trueskill"]),
            _number(row["games"], str(row["games"])),
            _number(_points(row), fmt.wdl(row)),
            *(
                _number(
                    row["normalized"].get(env["env_id"]),
                    fmt.score(row["normalized"].get(env["env_id"])),
                )
                for env in envs
            ),
            _number(row["mean_normalized"], fmt.score(row["mean_normalized"])),
            _number(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
        ]
        for row in overall["rows"]
    ]
    intro = (
        f'<p class="note">One TrueSkill pool over the {overall["rated_matches"]} rated matches '
        f"of every competitive game (draw probability "
        f"{fmt.probability(overall['draw_probability'])}). Players without a rated match "
        "follow, by mean normalized score. W/D/L: competitive games. Game columns: normalized "
        "score (Hanabi: self-play).</p>"
    )
    return "\n".join(
        [
            intro,
            _rating_chart(overall["rows"], "Overall TrueSkill ratings"),
            _grid_chart(overall["rows"], envs),
            _table(columns, rows, "Overall: ranked by TrueSkill μ − 3σ"),
        ]
    )


def _players(data: Mapping[str, Any]) -> str:
    columns = [Column("player", text=True), Column("kind", text=True), Column("parameters", True)]
    rows = [
        [
            _player(name),
            Cell(escape(player["kind"]), text=True),
            Cell(
                "<code>"
                + escape(json.dumps(player["params"], sort_keys=True, ensure_ascii=False))
                + "</code>",
                text=True,
                wrap=True,
            ),
        ]
        for name, player in data["players"].items()
    ]
    samples = data["invalid_samples"]
    sample_columns = [
        Column("player", text=True),
        Column("game", text=True),
        Column("where", text=True),
        Column("error", text=True),
        Column("response (as written)", text=True),
    ]
    sample_rows = [
        [
            _player(sample["player"]),
            Cell(escape(sample["env_id"]), text=True),
            Cell(
                escape(f"{sample['run']} / {sample['game_key']} / ply {sample['ply']}"), text=True
            ),
            Cell(escape(f"{sample['error_kind']}: {sample['error_detail']}"), text=True, wrap=True),
            Cell(
                '<pre class="response">'
                + escape(sample["response"] + (" …" if sample["truncated"] else ""))
                + "</pre>",
                text=True,
                wrap=True,
            ),
        ]
        for sample in samples
    ]
    parts = [
        _table(columns, rows, "Players and their public parameters"),
        "<h3>Invalid answers</h3>",
    ]
    if sample_rows:
        parts.append(
            _table(
                sample_columns,
                sample_rows,
                "A few invalid final answers per player and game, exactly as written",
            )
        )
    else:
        parts.append('<p class="note">No invalid answers.</p>')
    return "\n".join(parts)


def _about(data: Mapping[str, Any]) -> str:
    source = data["source"]
    rating = data["rating"]
    runs = []
    for run in source["runs"]:
        command = run["settings"].get("command")
        shown = f"<pre><code>{escape(command)}</code></pre>" if isinstance(command, str) else ""
        settings = escape(json.dumps(run["settings"], sort_keys=True, ensure_ascii=False))
        runs.append(
            f"<li>run <strong>{escape(run['name'])}</strong>, seed {escape(run['seed'])}"
            f"{shown}<details><summary>settings</summary><code>{settings}</code></details></li>"
        )
    return "\n".join(
        [
            "<ul>",
            "<li>Competitive games are ranked by TrueSkill's conservative score μ − 3σ "
            f"(μ₀ {rating['mu']:g}, σ₀ {rating['sigma']:.3f}, β {rating['beta']:.3f}, "
            f"τ {rating['tau']:.4f}; draw probability: {escape(rating['draw_probability'])}). "
            f"TrueSkill depends on the order of games, so the ratings are the mean of "
            f"{rating['passes']} passes over the games in random orders (seed {rating['seed']}): "
            "they do not depend on the order games were stored in.</li>",
            "<li>Cooperative games (Hanabi) are ranked by mean self-play score, then by mean "
            "score with the partner bot.</li>",
            "<li>Mean returns carry 95% confidence intervals (Student t over games).</li>",
            "<li>Normalized score: 100 × (mean return − worst) / (optimum − worst), with each "
            "game's fixed worst and optimum.</li>",
            "<li>Invalid %: invalid answers over all answers, retries included.</li>",
            "</ul>",
            "<h3>Reproduce</h3>",
            f"<p>Games digest (SHA-256 over every game's content, independent of storage order): "
            f"<code>{escape(source['games_digest'])}</code></p>",
            "<ul>" + "".join(runs) + "</ul>",
        ]
    )


def render(data: Mapping[str, Any]) -> str:
    """``index.html`` for :func:`strategic_arena.leaderboard.build` output."""
    script, style = _asset("page.js"), _asset("page.css")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    panels: list[tuple[str, str, str]] = [("overall", "Overall", _overall(data))]
    for index, env in enumerate(data["envs"], start=1):
        body = _cooperative(env) if env["cooperative"] else _competitive(env)
        panels.append((f"game-{index}", env["title"], body))
    panels += [("players", "Players", _players(data)), ("about", "About", _about(data))]
    tabs = "".join(
        f'<button type="button" role="tab" id="tab-{key}" aria-controls="panel-{key}" '
        f'aria-selected="{str(i == 0).lower()}">{escape(title)}</button>'
        for i, (key, title, _) in enumerate(panels)
    )
    sections = "\n".join(
        f'<section role="tabpanel" id="panel-{key}" aria-labelledby="tab-{key}">'
        f"<h2>{escape(title)}</h2>\n{body}\n</section>"
        for key, title, body in panels
    )
    source = data["source"]
    database = f" from <code>{escape(source['database'])}</code>" if source["database"] else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<link rel="icon" href="data:,">\n'
        "<title>strategic-arena leaderboards</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n"
        "<header><h1>Leaderboards</h1>"
        f'<p class="meta">Generated by strategic-arena {escape(data["generator"]["version"])}'
        f"{database}: {source['games']} games in {len(source['runs'])} run(s).</p></header>\n"
        f'<nav role="tablist" aria-label="Leaderboards">{tabs}</nav>\n'
        f"<main>\n{sections}\n</main>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )
