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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from strategic_arena.door import read_text
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
from strategic_arena.leaderboard._replays_html import data_block, link_cell, links, replays_panel
from strategic_arena.leaderboard._transfer import transfer_panel

#: Headers that must not break inside (headers wrap between words to keep columns narrow).
CONSERVATIVE = "μ&nbsp;−&nbsp;3σ"
MU_SIGMA = "TrueSkill μ&nbsp;±&nbsp;σ"
INVALID = "invalid&nbsp;%"

#: (env id, player) -> (the id of the player's list of replays in that game, how many).
Links = Mapping[tuple[str, str], tuple[str, int]]

#: The last column of a game's tables when some of its games are replayed.
REPLAYS_COLUMN = Column("replays", descending=True, title="this player's games in the Replays tab")


def _asset(name: str) -> str:
    return read_text(Path(__file__).with_name(name), "package")


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


def _grouped(
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Any]],
    cells: Callable[[Mapping[str, Any]], list[Cell]],
    caption: str,
) -> str:
    """The ranked table of the models, then the baselines' table (each with its heading).

    Baselines (built-in solvers and bots) are reference points ranked among themselves
    (``data.build`` ranks the two groups apart), so they get their own table rather than places
    among the models.
    """
    groups = [
        ("Models", [row for row in rows if not row["baseline"]]),
        ("Baselines", [row for row in rows if row["baseline"]]),
    ]
    parts = []
    for heading, members in groups:
        if members:
            body = [cells(row) for row in members]
            parts.append(f'<h3 class="group">{heading}</h3>')
            parts.append(table(columns, body, f"{heading}: {caption}", ranked=True))
    return "\n".join(parts)


def _rated_columns(normalized: str) -> list[Column]:
    """The key columns of a TrueSkill-ranked table, first so they stay in view when it scrolls.

    Rank, player, the ranking score, μ ± σ, normalized score, invalid %, games, W/D/L.
    """
    return [
        Column("rank"),
        Column("player", text=True),
        Column(CONSERVATIVE, descending=True, title="conservative score: the ranking"),
        Column(MU_SIGMA, descending=True),
        Column(normalized, descending=True),
        Column(INVALID, descending=True),
        Column("games", descending=True),
        Column("W/D/L", descending=True, title="sorts by points share (draw = 1/2)"),
    ]


def _rated_cells(row: Mapping[str, Any], normalized: float | None) -> list[Cell]:
    """The cells of :func:`_rated_columns` for ``row``."""
    mu, conservative = trueskill_cells(row["trueskill"])
    return [
        rank_cell(row),
        player_cell(row["player"]),
        conservative,
        mu,
        number_cell(normalized, fmt.score(normalized)),
        number_cell(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
        number_cell(row["games"], str(row["games"])),
        number_cell(points(row), fmt.wdl(row)),
    ]


def _replay_columns(env: Mapping[str, Any], found: Links) -> list[Column]:
    """The replays column when some of the env's games are replayed, else none."""
    return [REPLAYS_COLUMN] if any(env_id == env["env_id"] for env_id, _ in found) else []


def _replay_cells(env: Mapping[str, Any], found: Links, row: Mapping[str, Any]) -> list[Cell]:
    """The cells of :func:`_replay_columns`: a link to the row's player's replays there."""
    return [link_cell(found, env["env_id"], row["player"]) for _ in _replay_columns(env, found)]


def _competitive(env: Mapping[str, Any], found: Links) -> str:
    norm = env["normalization"]
    opponents = env["reference_opponents"]
    # Key columns first (rank, player, the ranking score, normalized, invalid %): they stay in
    # view on a narrow screen; the per-opponent details follow and may scroll.
    columns = [
        *_rated_columns("normalized"),
        *(
            Column(
                f"vs {breakable(name)}", descending=True, title="mean return ± 95% CI", wide=True
            )
            for name in opponents
        ),
        *_replay_columns(env, found),
    ]

    def cells(row: Mapping[str, Any]) -> list[Cell]:
        versus = row["versus"]
        return [
            *_rated_cells(row, row["normalized"]),
            *(
                number_cell(
                    versus[name]["mean"],
                    fmt.mean_ci(versus[name]["mean"], versus[name]["ci95"]),
                )
                if name in versus
                else number_cell(None, fmt.MISSING)
                for name in opponents
            ),
            *_replay_cells(env, found, row),
        ]

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
        f"{norm['optimum']:g} = 100, over all the player's games here. "
        f'<a href="#about-ranking">How to read the ranking</a>.</p>'
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
            _grouped(columns, env["rows"], cells, f"{title}, ranked by TrueSkill μ − 3σ"),
            *env_coverage(env),
        ]
    )


def _cooperative(env: Mapping[str, Any], found: Links) -> str:
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
        Column(INVALID, descending=True),
        *_replay_columns(env, found),
    ]

    def cells(row: Mapping[str, Any]) -> list[Cell]:
        own, bot = row["self_play"], row["with_partner_bot"]
        return [
            rank_cell(row),
            player_cell(row["player"]),
            number_cell(own["mean"], fmt.mean_ci(own["mean"], own["ci95"]))
            if own
            else number_cell(None, fmt.MISSING),
            number_cell(bot["mean"], fmt.mean_ci(bot["mean"], bot["ci95"]))
            if bot
            else number_cell(None, fmt.MISSING),
            number_cell(row["games"], str(row["games"])),
            number_cell(own["normalized"] if own else None, fmt.score(own and own["normalized"])),
            number_cell(bot["normalized"] if bot else None, fmt.score(bot and bot["normalized"])),
            number_cell(row["invalid_rate"], fmt.percent(row["invalid_rate"])),
            *_replay_cells(env, found, row),
        ]

    bars: list[tuple[str, Sequence[Bar]]] = []
    for row in env["rows"]:
        own, bot = row["self_play"], row["with_partner_bot"]
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
    title = escape(env["title"])
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
            _grouped(columns, env["rows"], cells, f"{title}, ranked by self-play score"),
            *env_coverage(env),
        ]
    )


def _overall(data: Mapping[str, Any]) -> str:
    overall = data["overall"]
    envs = data["envs"]
    # Key columns first; the per-game columns follow and may scroll on a narrow screen.
    columns = [
        *_rated_columns("mean normalized"),
        *(
            Column(escape(env["title"]), descending=True, title="normalized score", wide=True)
            for env in envs
        ),
    ]

    def cells(row: Mapping[str, Any]) -> list[Cell]:
        return [
            *_rated_cells(row, row["mean_normalized"]),
            *(
                number_cell(
                    row["normalized"].get(env["env_id"]),
                    fmt.score(row["normalized"].get(env["env_id"])),
                )
                for env in envs
            ),
        ]

    intro = (
        f'<p class="note">One TrueSkill pool over the {overall["rated_matches"]} rated matches '
        f"of every competitive game (draw probability "
        f"{fmt.probability(overall['draw_probability'])}). Players without a rated match "
        "follow, by mean normalized score. W/D/L: competitive games. Game columns: normalized "
        f"score (Hanabi: self-play). {escape(fmt.BASELINES_NOTE)} "
        '<a href="#about-ranking">How to read the ranking</a>.</p>'
    )
    parts = [
        intro,
        rating_chart(overall["rows"], "Overall TrueSkill ratings"),
        grid_chart(overall["rows"], envs),
        _grouped(columns, overall["rows"], cells, "overall, ranked by TrueSkill μ − 3σ"),
    ]
    return "\n".join(parts + ([overall_coverage(data)] if data["coverage"] else []))


#: What a player's answers cost (its endpoint's reported tokens; money at the publisher's prices).
COST_COLUMNS = (
    Column("prompt tokens", descending=True, title="prompt tokens its endpoint reported"),
    Column("completion tokens", descending=True, title="completion tokens it reported"),
    Column("tokens / decision", descending=True),
    Column("model time", descending=True, title="seconds spent waiting on its endpoint"),
    Column("cost", descending=True, title="at the prices given to publish (--price)"),
)


def _cost_cells(cost: Mapping[str, Any] | None) -> list[Cell]:
    """The cost columns of a player (dashes for one that reports no tokens)."""
    if cost is None:
        return [number_cell(None, "—") for _ in COST_COLUMNS]
    money = cost["money"]
    return [
        number_cell(cost["prompt_tokens"], f"{cost['prompt_tokens']:,}"),
        number_cell(cost["completion_tokens"], f"{cost['completion_tokens']:,}"),
        number_cell(cost["tokens_per_decision"], f"{cost['tokens_per_decision']:.0f}"),
        number_cell(cost["model_time_s"], f"{cost['model_time_s']:.1f} s"),
        number_cell(money, "—" if money is None else f"{money:.4g}"),
    ]


def _players(data: Mapping[str, Any]) -> str:
    columns = [
        Column("player", text=True),
        Column("kind", text=True),
        Column("role", text=True),
        Column("parameters", True),
        *COST_COLUMNS,
    ]
    rows = [
        [
            player_cell(name),
            Cell(escape(player["kind"]), text=True),
            Cell("baseline" if player["baseline"] else "model", text=True),
            Cell(
                "<code>"
                + escape(json.dumps(player["params"], sort_keys=True, ensure_ascii=False))
                + "</code>",
                text=True,
                wrap=True,
            ),
            *_cost_cells(player.get("cost")),
        ]
        for name, player in data["players"].items()
    ]
    return "\n".join(
        [
            table(columns, rows, "Players and their public parameters"),
            '<h3 id="invalid-answers">Invalid answers</h3>',
            _samples(data["invalid_samples"]),
        ]
    )


#: Characters of an invalid answer shown before "show the rest".
SHOWN_CHARS = 600


def _response(text: str, truncated: bool) -> str:
    """An answer as written, wrapped at full width; a long one expands on demand."""
    tail = " …" if truncated else ""
    if len(text) <= SHOWN_CHARS:
        return f'<pre class="response">{escape(text + tail)}</pre>'
    head, rest = text[:SHOWN_CHARS], text[SHOWN_CHARS:]
    return (
        f'<pre class="response">{escape(head)}</pre>'
        f'<details class="more"><summary>show the other {len(rest)} characters</summary>'
        f'<pre class="response">{escape(rest + tail)}</pre></details>'
    )


def _samples(samples: Sequence[Mapping[str, Any]]) -> str:
    """Invalid answers as written, grouped by player and game, each full width and wrapped.

    Not a table: an answer is the most useful evidence of an LLM evaluation, and a table
    column squeezes it to a few characters beside the others. Each group is a ``<details>``
    (open) that a reader can fold.
    """
    if not samples:
        return '<p class="note">No invalid answers.</p>'
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for sample in samples:
        groups.setdefault((sample["player"], sample["env_id"]), []).append(sample)
    parts = [
        '<p class="note">A few invalid final answers per player and game, exactly as the model '
        "wrote them (shown as text).</p>"
    ]
    for (player, env_id), members in groups.items():
        items = "".join(
            '<li class="sample"><p class="sample-meta">'
            f"<span>{escape(sample['run'])} / {escape(sample['game_key'])} / ply "
            f"{escape(sample['ply'])}</span> · <strong>{escape(sample['error_kind'])}</strong>: "
            f"{escape(sample['error_detail'])}</p>"
            + _response(sample["response"], sample["truncated"])
            + "</li>"
            for sample in members
        )
        parts.append(
            f'<details class="samples" open><summary><strong>{escape(player)}</strong> · '
            f"{escape(env_id)} ({len(members)})</summary>"
            f'<ol class="samples">{items}</ol></details>'
        )
    return "\n".join(parts)


def _about(data: Mapping[str, Any]) -> str:
    source = data["source"]
    rating = data["rating"]
    runs = []
    for run in source["runs"]:
        command = run["command"]
        shown = (
            f'<pre class="command"><code>{escape(command)}</code></pre>'
            if command
            else '<p class="note">No command reproduces this run (it was not stored by '
            "<code>strategic-arena eval</code> or <code>ladder</code>).</p>"
        )
        settings = escape(json.dumps(run["settings"], sort_keys=True, ensure_ascii=False))
        runs.append(
            f"<li>run <strong>{escape(run['name'])}</strong>, seed {escape(run['seed'])}"
            f"{shown}<details><summary>stored settings</summary><code>{settings}</code>"
            "</details></li>"
        )
    return "\n".join(
        [
            '<h3 id="about-ranking">How to read the ranking</h3>',
            f"<p>{escape(fmt.CONSERVATIVE_NOTE)}</p>",
            f"<p>{escape(fmt.BASELINES_NOTE)}</p>",
            '<h3 id="definitions">Definitions</h3>',
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
            "<li>Grades (the Grades tab): a move is a <em>top move</em> when the exact solver "
            "values the position after it as the position before it, i.e. it is among the "
            "moves the solver ranks best (SPIN-Bench's per-move measure), a <em>blunder</em> when "
            "it turns a win into a draw or loss, or a draw into a loss; <em>accuracy</em> is "
            "the mean credit per move: 100 a top move, 50 a slower win or faster loss (Connect "
            "Four), 0 a blunder. A poker strategy's <em>exploitability</em> is what a best "
            "response wins against it, in chips per hand (0: an equilibrium). Full "
            f"definitions: {escape(fmt.GRADES_DOCS)} in the strategic-arena repository.</li>",
            "</ul>",
            '<h3 id="reproduce">Reproduce</h3>',
            "<p>Each run's command plays the same games again (same seeds, opponents, prompts and "
            "sampling) into a run of the same name, so it resumes or checks game for game. API "
            "keys are never stored: set the key's environment variable (<code>--api-key-env"
            "</code>, default <code>OPENAI_API_KEY</code>) yourself.</p>",
            f"<p>Games digest (SHA-256 over every game's content, independent of storage order): "
            f"<code>{escape(source['games_digest'])}</code></p>",
            "<ul>" + "".join(runs) + "</ul>",
        ]
    )


def _teams(teams: Sequence[Mapping[str, Any]]) -> str:
    """The team games' line-ups against the other teams (a sortable table)."""
    columns = [
        Column("Game", text=True),
        Column("Team", text=True, wide=True),
        Column("Against", text=True, wide=True),
        Column("Games", descending=True),
        Column("Mean return", descending=True),
        Column("W/D/L", descending=True),
    ]
    rows = [
        [
            Cell(escape(team["env_id"]), text=True),
            player_cell(" + ".join(team["players"])),
            player_cell(" + ".join(team["opponents"])),
            number_cell(team["games"], str(team["games"])),
            number_cell(team["mean_return"], f"{team['mean_return']:+.3f}"),
            number_cell(points(team), f"{team['wins']}/{team['draws']}/{team['losses']}"),
        ]
        for team in teams
    ]
    note = (
        "<p class=\"note\">A team's return is the mean of its seats' returns; W/D/L against "
        "the best other team.</p>"
    )
    return note + table(columns, rows, "team games: each line-up against the other teams")


def _panels(
    data: Mapping[str, Any], replays: Mapping[str, Any] | None
) -> list[tuple[str, str, str]]:
    """Each tab's key, title and panel body, in tab order."""
    found = links(replays)
    panels: list[tuple[str, str, str]] = [("overall", "Overall", _overall(data))]
    for index, env in enumerate(data["envs"], start=1):
        body = _cooperative(env, found) if env["cooperative"] else _competitive(env, found)
        panels.append((f"game-{index}", env["title"], body))
    if data.get("teams"):
        panels.append(("teams", "Teams", _teams(data["teams"])))
    if data.get("transfer"):
        panels.append(("transfer", "Transfer", transfer_panel(data["transfer"])))
    panels += [
        ("grades", "Grades", grades_panel(data)),
        ("players", "Players", _players(data)),
    ]
    if replays and replays["games"]:
        panels.append(("replays", "Replays", replays_panel(replays)))
    panels.append(("about", "About", _about(data)))
    return panels


def render(data: Mapping[str, Any], replays: Mapping[str, Any] | None = None) -> str:
    """``index.html`` for :func:`strategic_arena.leaderboard.build` output.

    With ``replays`` (:func:`strategic_arena.leaderboard.replays.build_replays`) that hold
    games, the page gets a Replays tab, its game tables a column linking each row to its
    player's replays, and the replays' frames as an inert JSON block.
    """
    # One script: the tabs and tables (page.js), then the replay viewer (replay.js).
    script = _asset("page.js") + "\n" + _asset("replay.js")
    style = _asset("page.css")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    panels = _panels(data, replays)
    frames = data_block(replays) + "\n" if replays and replays["games"] else ""
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
    page = data["page"]
    description = (
        f'<p class="description">{escape(page["description"])}</p>' if page["description"] else ""
    )
    warnings = "".join(
        f'<p class="note"><strong>Warning:</strong> {escape(line)}</p>'
        for line in fmt.prompt_mix_lines(data)
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{escape(page['title'])}</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n"
        f"<header><h1>{escape(page['title'])}</h1>{description}"
        f'<p class="meta">Generated by strategic-arena {escape(data["generator"]["version"])}'
        f"{database}: {source['games']} games in {len(source['runs'])} run(s) "
        '(<a href="#reproduce">reproduce</a>).</p>'
        f"{warnings}</header>\n"
        f'<nav role="tablist" aria-label="Leaderboards">{tabs}</nav>\n'
        f"<main>\n{sections}\n</main>\n"
        f"{frames}<script>{script}</script>\n</body>\n</html>\n"
    )
