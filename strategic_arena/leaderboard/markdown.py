r"""``LEADERBOARD.md``: the leaderboard's data (:mod:`.data`) as GitHub-flavoured markdown tables.

Every string that came from a user or a model (player names, parameters, answers) goes through
:func:`escape`, which keeps it inside its table cell and shows it literally: first
:func:`~strategic_arena.door.printable` turns control bytes (ESC, NUL), bidi controls, line
breaks and lone surrogates into visible escapes (``\x1b``, ``\n``), so the file never holds a
byte a terminal or an editor would act on; then ``<``, ``>`` and ``&`` become entities, and
``|``, backslashes, backticks, brackets (code spans, links), ``*`` and ``_`` (emphasis), ``~``
(strikethrough) and ``$`` (GitHub's math) are backslash-escaped: an endpoint's ``**b**`` is
shown as written, not in bold.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from strategic_arena.door.printable import printable_line
from strategic_arena.leaderboard import _format as fmt
from strategic_arena.leaderboard._transfer import transfer_markdown

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
#: Markdown syntax in a cell: code, table, link and emphasis marks, GitHub's strikethrough
#: and math; an underscore only where it could open or close emphasis (``kuhn_poker`` stays).
_SPECIAL = re.compile(r"[\\`|\[\]*~$]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def escape(text: object) -> str:
    """``text`` safe inside a markdown table cell: shown literally, never as HTML or a link.

    Control characters and line breaks are shown as escapes (one line, no raw control byte),
    markup as entities, markdown syntax backslash-escaped; runs of blanks become one space.
    """
    value = "".join(_ENTITIES.get(char, char) for char in printable_line(text))
    value = _SPECIAL.sub(lambda mark: "\\" + mark.group(0), value)
    return " ".join(value.split())  # runs of blanks: one space


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right: int = 0) -> list[str]:
    """A markdown table; the columns from index ``right`` on are right-aligned."""
    align = ["---" if i < right else "---:" for i in range(len(header))] if right else None
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join(align or ["---"] * len(header)) + " |")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _anchor(title: str) -> str:
    """GitHub's heading anchor of a heading made of ``title`` (for the contents list)."""
    slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    return "#" + slug


def _grouped(
    header: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    cells: Callable[[Mapping[str, Any]], list[str]],
) -> list[str]:
    """The models' table, then the baselines' (ranked apart by ``data.build``), each titled."""
    lines: list[str] = []
    for title, baseline in (("Models", False), ("Baselines", True)):
        members = [row for row in rows if row["baseline"] == baseline]
        if members:
            lines += ([""] if lines else []) + [f"**{title}**", ""]
            lines += _table(header, [cells(row) for row in members], right=2)
    return lines


def _rank(row: Mapping[str, Any]) -> str:
    return fmt.MISSING if row["rank"] is None else str(row["rank"])


def _rated(row: Mapping[str, Any]) -> list[str]:
    """Rank, player, μ ± σ, μ − 3σ, games and W/D/L of a TrueSkill-ranked row."""
    return [
        _rank(row),
        escape(row["player"]),
        fmt.rating(row["trueskill"]),
        fmt.conservative(row["trueskill"]),
        str(row["games"]),
        fmt.wdl(row),
    ]


def _competitive(env: Mapping[str, Any]) -> list[str]:
    norm = env["normalization"]
    lines = [
        f"Rated matches: {env['rated_matches']}"
        f"{fmt.DUPLICATE if env['duplicate_matches'] else ''}; TrueSkill draw probability "
        f"{fmt.probability(env['draw_probability'])}; normalized score: worst "
        f"{norm['worst']:g} = 0, optimum {norm['optimum']:g} = 100. Columns *vs X*: mean "
        "return against X ± 95% CI, both seats.",
        "",
    ]
    columns = env["reference_opponents"]
    header = [
        "rank",
        "player",
        "TrueSkill μ ± σ",
        "μ − 3σ",
        "games",
        "W/D/L",
        *(f"vs {escape(name)}" for name in columns),
        "normalized",
        "invalid %",
    ]

    def cells(row: Mapping[str, Any]) -> list[str]:
        versus = row["versus"]
        return [
            *_rated(row),
            *(
                fmt.mean_ci(versus[name]["mean"], versus[name]["ci95"])
                if name in versus
                else fmt.MISSING
                for name in columns
            ),
            fmt.score(row["normalized"]),
            fmt.percent(row["invalid_rate"]),
        ]

    return lines + _grouped(header, env["rows"], cells)


def _cooperative(env: Mapping[str, Any]) -> list[str]:
    norm = env["normalization"]
    bots = ", ".join(escape(name) for name in env["partner_bots"]) or "none"
    lines = [
        "Cooperative: ranked by mean self-play score, then by mean score with the partner bot "
        f"({bots}), not by TrueSkill. Scores are shared returns ± 95% CI; normalized: "
        f"{norm['worst']:g} = 0, {norm['optimum']:g} = 100.",
        "",
    ]
    header = [
        "rank",
        "player",
        "self-play score",
        "with partner bot",
        "games",
        "normalized (self-play)",
        "normalized (with bot)",
        "invalid %",
    ]

    def cells(row: Mapping[str, Any]) -> list[str]:
        own, bot = row["self_play"], row["with_partner_bot"]
        return [
            _rank(row),
            escape(row["player"]),
            fmt.mean_ci(own["mean"], own["ci95"]) if own else fmt.MISSING,
            fmt.mean_ci(bot["mean"], bot["ci95"]) if bot else fmt.MISSING,
            str(row["games"]),
            fmt.score(own["normalized"]) if own else fmt.MISSING,
            fmt.score(bot["normalized"]) if bot else fmt.MISSING,
            fmt.percent(row["invalid_rate"]),
        ]

    return lines + _grouped(header, env["rows"], cells)


def _overall(data: Mapping[str, Any]) -> list[str]:
    overall = data["overall"]
    envs = data["envs"]
    lines = [
        f"One TrueSkill pool over the {overall['rated_matches']} rated matches of every "
        f"competitive game (draw probability {fmt.probability(overall['draw_probability'])}); "
        "players without a rated match are listed after, by mean normalized score. W/D/L: "
        "competitive games. Per-game columns: normalized score (cooperative games: self-play).",
        "",
    ]
    header = [
        "rank",
        "player",
        "TrueSkill μ ± σ",
        "μ − 3σ",
        "games",
        "W/D/L",
        *(escape(env["title"]) for env in envs),
        "mean normalized",
        "invalid %",
    ]

    def cells(row: Mapping[str, Any]) -> list[str]:
        return [
            *_rated(row),
            *(fmt.score(row["normalized"].get(env["env_id"])) for env in envs),
            fmt.score(row["mean_normalized"]),
            fmt.percent(row["invalid_rate"]),
        ]

    return lines + _grouped(header, overall["rows"], cells)


def _reasons(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """A line per row the coverage rule leaves without a rank, saying why (none: nothing)."""
    reasons = fmt.unranked_reasons(rows)
    return ["", *(f"- Not ranked: {escape(name)}: {escape(why)}." for name, why in reasons)]


def _coverage(data: Mapping[str, Any]) -> list[str]:
    """The players whose server failures left games unscored (nothing when there are none)."""
    if not data["coverage"]:
        return []
    rows = [[escape(row["player"]), *fmt.coverage_row(row)] for row in data["coverage"]]
    note = fmt.coverage_note(data["rating"]["max_left_out_share"])
    lines = [*_reasons(data["overall"]["rows"]), "", note, ""]
    return lines + _table(["player", *fmt.COVERAGE_HEADER], rows, right=1)


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (so it cannot close early)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _env_coverage(env: Mapping[str, Any]) -> list[str]:
    """An env's players with games left out, per opponent, and why some are not ranked."""
    if not env["coverage"]:
        return []
    rows = [
        [escape(player), escape(against), *cells]
        for player, against, cells in fmt.coverage_lines(env["coverage"])
    ]
    lines = [*_reasons(env["rows"]), "", "Games left out by the players' own server failures:", ""]
    return lines + _table(["player", "against", *fmt.COVERAGE_HEADER], rows, right=2)


def _reproduce(data: Mapping[str, Any]) -> list[str]:
    source = data["source"]
    lines = [
        f"Games digest (SHA-256 over every game's run, key, seed, seats, returns and history, "
        f"independent of storage order): `{source['games_digest']}`.",
        "",
    ]
    for run in source["runs"]:
        lines.append(f"- run {escape(run['name'])}, seed {run['seed']}")
        command = run["command"]
        if command is None:
            lines += ["", "  No command reproduces this run (not stored by `eval` or `ladder`)."]
        else:
            line = " ".join(printable_line(command).split())
            fence = _fence(line)
            lines += ["", f"  {fence}bash", f"  {line}", f"  {fence}"]
    rating = data["rating"]
    lines += [
        "",
        f"Ratings: TrueSkill (μ₀ {rating['mu']:g}, σ₀ {rating['sigma']:.3f}, β "
        f"{rating['beta']:.3f}, τ {rating['tau']:.4f}); {rating['passes']} passes over the "
        f"games in random orders (seed {rating['seed']}), averaged, so the ratings do not "
        "depend on the order games were stored in.",
    ]
    return lines


def _seat_means(env: Mapping[str, Any]) -> list[str]:
    """Each player's mean return per seat, in games of more than two seats (else nothing)."""
    if not env.get("seats"):
        return []
    rows = [
        [
            escape(row["player"]),
            str(row["seat"]),
            str(row["games"]),
            fmt.mean_ci(row["mean_return"]["mean"], row["mean_return"]["ci95"], digits=3),
        ]
        for row in env["seats"]
    ]
    return [
        "",
        "Per seat (every opponent together):",
        "",
        *_table(["Player", "Seat", "Games", "Mean return"], rows, right=1),
    ]


def _teams(teams: Sequence[Mapping[str, Any]]) -> list[str]:
    """The team games' line-ups against the other teams."""
    rows = [
        [
            escape(team["env_id"]),
            " + ".join(escape(p) for p in team["players"]),
            " + ".join(escape(p) for p in team["opponents"]),
            str(team["games"]),
            f"{team['mean_return']:+.3f}",
            f"{team['wins']}/{team['draws']}/{team['losses']}",
        ]
        for team in teams
    ]
    header = ["Game", "Team", "Against", "Games", "Mean return", "W/D/L"]
    note = "A team's return is the mean of its seats' returns; W/D/L against the best other team."
    return [note, "", *_table(header, rows, right=3)]


def render(data: Mapping[str, Any]) -> str:
    """``LEADERBOARD.md`` for :func:`strategic_arena.leaderboard.build` output."""
    source = data["source"]
    runs = ", ".join(f"{escape(run['name'])} (seed {run['seed']})" for run in source["runs"])
    database = f" from `{escape(source['database'])}`" if source["database"] else ""
    sections: list[tuple[str, list[str]]] = [("Overall", _overall(data) + _coverage(data))]
    for env in data["envs"]:
        kind = ", cooperative" if env["cooperative"] else ""
        title = f"{escape(env['title'])} ({escape(env['env_id'])}{kind})"
        body = _cooperative(env) if env["cooperative"] else _competitive(env)
        sections.append((title, body + _env_coverage(env) + _seat_means(env)))
    if data.get("teams"):
        sections.append(("Teams", _teams(data["teams"])))
    if data.get("transfer"):
        sections.append(("Transfer evaluation", transfer_markdown(data["transfer"], escape)))
    sections.append(("Grades against exact solvers", _grades(data["grades"])))
    sections.append(("Players", _players(data["players"])))
    sections.append(("Invalid answers (samples)", _samples(data["invalid_samples"])))
    sections.append(("Reproduce", _reproduce(data)))
    page = data["page"]
    description = [escape(page["description"]), ""] if page["description"] else []
    lines = [
        f"# {escape(page['title'])}",
        "",
        "<!-- Generated by `strategic-arena publish`; do not edit by hand. -->",
        "",
        *description,
        f"Generated by strategic-arena {escape(data['generator']['version'])}{database}: "
        f"{source['games']} games; runs: {runs or 'none'}.",
        "",
        f"- Competitive games are ranked by TrueSkill's conservative score μ − 3σ. "
        f"{fmt.CONSERVATIVE_NOTE}",
        f"- {fmt.BASELINES_NOTE}",
        "- *vs X*: mean return against X with its 95% confidence interval (Student t).",
        "- Normalized score: 100 × (mean return − worst) / (optimum − worst), with each game's "
        "fixed worst and optimum.",
        "- Invalid %: invalid answers over all answers, retries included.",
        "",
        *(f"> **Warning:** {escape(line)}\n" for line in fmt.prompt_mix_lines(data)),
        "Contents: " + ", ".join(f"[{title}]({_anchor(title)})" for title, _ in sections),
    ]
    for title, body in sections:
        lines += ["", f"## {title}", "", *body]
    return "\n".join(lines) + "\n"


def _players(players: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = [
        [
            escape(name),
            escape(player["kind"]),
            escape(json.dumps(player["params"], sort_keys=True, ensure_ascii=False)),
        ]
        for name, player in players.items()
    ]
    return _table(["player", "kind", "parameters"], rows)


#: Characters of an invalid answer shown in a markdown table cell (the page shows them all).
SAMPLE_CHARS = 300


def _samples(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    if not samples:
        return ["No invalid answers."]
    rows = []
    for sample in samples:
        response = sample["response"]
        cut = sample["truncated"] or len(response) > SAMPLE_CHARS
        rows.append(
            [
                escape(sample["player"]),
                escape(sample["env_id"]),
                escape(f"{sample['run']} / {sample['game_key']} / ply {sample['ply']}"),
                escape(f"{sample['error_kind']}: {sample['error_detail']}"),
                escape(response[:SAMPLE_CHARS] + (" …" if cut else "")) or fmt.MISSING,
            ]
        )
    note = (
        f"Line breaks shown as spaces and answers cut at {SAMPLE_CHARS} characters here; "
        "index.html shows them as written (and leaderboard.json holds them)."
    )
    return [note, "", *_table(["player", "game", "where", "error", "response (as written)"], rows)]


def _grades(grades: Mapping[str, Any]) -> list[str]:
    moves = [row for row in grades["moves"] if row["opponent"] == "all"]
    if not moves and not grades["strategies"]:
        return ["Not graded (run `strategic-arena grade`, then publish again)."]
    # LEADERBOARD.md is published in the repository's leaderboards/ folder by default.
    lines = [f"{fmt.GRADES_NOTE} Definitions: [{fmt.GRADES_DOCS}](../{fmt.GRADES_DOCS}).", ""]
    if moves:
        rows = [
            [
                escape(row["env_id"]),
                escape(row["player"]),
                str(row["graded"]),
                fmt.share_ci(row["optimal"]),
                fmt.share_ci(row["blunders"]),
                str(row["missed_wins"]["count"]),
                fmt.mean_ci(row["accuracy"]["mean"], row["accuracy"]["ci95"], 1).lstrip("+"),
                fmt.mean_ci(row["value_loss"]["mean"], row["value_loss"]["ci95"]).lstrip("+"),
                str(row["invalid"]),
                str(row["unknown"]),
            ]
            for row in moves
        ]
        header = ["game", "player", "graded", "top-move %", "blunders %", "missed wins"]
        header += ["accuracy", "value loss", "invalid", "unknown"]
        lines += [*_table(header, rows, right=2), ""]
    if grades["strategies"]:
        rows = [
            [
                escape(row["env_id"]),
                escape(row["player"]),
                str(row["samples"]),
                fmt.exploitability(row),
                f"{row['best_response'][0]:+.4f}",
                f"{row['best_response'][1]:+.4f}",
                f"{row['distance']:.3f}",
                fmt.percent(row["invalid"]),
            ]
            for row in grades["strategies"]
        ]
        header = ["game", "player", "K", "exploitability", "BR vs seat 0", "BR vs seat 1"]
        header += ["distance", "invalid %"]
        lines += _table(header, rows, right=2)
    return lines
