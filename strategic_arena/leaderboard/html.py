"""``index.html``: the leaderboard's data (:mod:`.data`) as one static page that works offline.

The page is a single file: its stylesheet (``page.css``) and script (``page.js``) are inlined,
the charts are inline SVG (:mod:`._charts`), and nothing is fetched from a network. One tab per game
(plus Overall, Grades, Players and About); every table sorts by clicking a column header. Without
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
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from strategic_arena.leaderboard import _format as fmt
from strategic_arena.leaderboard._cells import (
    Cell,
    Column,
    breakable,
    escape,
    number_cell,
    player_cell,
    points,
    rank_cell,
    table,
    trueskill_cells,
)
from strategic_arena.leaderboard._charts import Bar, bar_chart, grid_chart, rating_chart
from strategic_arena.leaderboard._coverage_html import env_coverage, overall_coverage
from strategic_arena.leaderboard._grades_html import grades_panel


def _asset(name: str) -> str:
    return resources.files("strategic_arena.leaderboard").joinpath(name).read_text()


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode()).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


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
                f"vs {breakable(name)}", descending=True, title="mean return ± 95% CI", wide=True
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
                rank_cell(row),
                player_cell(row["player"]),
                *trueskill_cells(row["trueskill"]),
                number_cell(row["games"], str(row["games"])),
                number_cell(points(row), fmt.wdl(row)),
                *(
                    number_cell(
                        versus[name]["mean"],
                        fmt.mean_ci(versus[name]["mean"], versus[name]["ci95"]),
                    )
                    if name in versus
                    else number_cell(None, fmt.MISSING)
                    for name in opponents
                ),
                number_cell(row["normalized"], fmt.score(row["normalized"])),
                number_cell(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
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
            rating_chart(env["rows"], f"{env['title']}: TrueSkill ratings"),
            bar_chart(
                bars,
                f"{env['title']}: normalized score",
                "Normalized score over all games here; whiskers: 95% CI.",
            ),
            table(columns, rows, f"{title}: ranked by TrueSkill μ − 3σ"),
            *env_coverage(env),
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
                rank_cell(row),
                player_cell(row["player"]),
                number_cell(own and own["mean"], fmt.mean_ci(own["mean"], own["ci95"]))
                if own
                else number_cell(None, fmt.MISSING),
                number_cell(bot and bot["mean"], fmt.mean_ci(bot["mean"], bot["ci95"]))
                if bot
                else number_cell(None, fmt.MISSING),
                number_cell(row["games"], str(row["games"])),
                number_cell(
                    own["normalized"] if own else None, fmt.score(own and own["normalized"])
                ),
                number_cell(
                    bot["normalized"] if bot else None, fmt.score(bot and bot["normalized"])
                ),
                number_cell(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
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
            bar_chart(bars, f"{env['title']}: normalized score", caption),
            table(columns, rows, f"{escape(env['title'])}: ranked by self-play score"),
            *env_coverage(env),
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
            rank_cell(row),
            player_cell(row["player"]),
            *trueskill_cells(row["trueskill"]),
            number_cell(row["games"], str(row["games"])),
            number_cell(points(row), fmt.wdl(row)),
            *(
                number_cell(
                    row["normalized"].get(env["env_id"]),
                    fmt.score(row["normalized"].get(env["env_id"])),
                )
                for env in envs
            ),
            number_cell(row["mean_normalized"], fmt.score(row["mean_normalized"])),
            number_cell(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
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
    parts = [
        intro,
        rating_chart(overall["rows"], "Overall TrueSkill ratings"),
        grid_chart(overall["rows"], envs),
        table(columns, rows, "Overall: ranked by TrueSkill μ − 3σ"),
    ]
    return "\n".join(parts + ([overall_coverage(data)] if data["coverage"] else []))


def _players(data: Mapping[str, Any]) -> str:
    columns = [Column("player", text=True), Column("kind", text=True), Column("parameters", True)]
    rows = [
        [
            player_cell(name),
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
            player_cell(sample["player"]),
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
        table(columns, rows, "Players and their public parameters"),
        "<h3>Invalid answers</h3>",
    ]
    if sample_rows:
        parts.append(
            table(
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
    panels += [
        ("grades", "Grades", grades_panel(data)),
        ("players", "Players", _players(data)),
        ("about", "About", _about(data)),
    ]
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
