"""Number formats shared by the markdown and HTML pages (one place, so they always agree)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: What the pages show for a missing value.
MISSING = "—"

#: The note on rated matches in games with chance.
DUPLICATE = " (a deal played in both seatings is one duplicate match)"


def mean_ci(mean: float | None, ci95: float | None, digits: int = 2) -> str:
    """``+0.72 ± 0.11`` (``+0.72`` without a CI, :data:`MISSING` without a mean)."""
    if mean is None:
        return MISSING
    text = f"{mean:+.{digits}f}"
    return text if ci95 is None else f"{text} ± {ci95:.{digits}f}"


def rating(trueskill: Mapping[str, Any] | None) -> str:
    """``31.2 ± 1.1`` (TrueSkill mu ± sigma)."""
    if trueskill is None:
        return MISSING
    return f"{trueskill['mu']:.1f} ± {trueskill['sigma']:.1f}"


def conservative(trueskill: Mapping[str, Any] | None) -> str:
    """``27.9`` (mu - 3 sigma)."""
    return MISSING if trueskill is None else f"{trueskill['conservative']:.1f}"


def percent(value: float | None, digits: int = 1) -> str:
    """``12.5`` for 0.125 (no sign)."""
    return MISSING if value is None else f"{100 * value:.{digits}f}"


def score(value: float | None) -> str:
    """A normalized score, already in percent: ``87.5``."""
    return MISSING if value is None else f"{value:.1f}"


def wdl(row: Mapping[str, Any]) -> str:
    """``12/3/5`` (wins/draws/losses)."""
    if row.get("wins") is None:
        return MISSING
    return f"{row['wins']}/{row['draws']}/{row['losses']}"


def probability(value: float | None) -> str:
    """``0.31``."""
    return MISSING if value is None else f"{value:.2f}"


def share_ci(share: Mapping[str, Any]) -> str:
    """``53.4 [49.0–57.8]``: a grade's share in percent with its 95% Wilson interval."""
    if share["share"] is None:
        return MISSING
    return f"{100 * share['share']:.1f} [{100 * share['low']:.1f}–{100 * share['high']:.1f}]"


def exploitability(row: Mapping[str, Any]) -> str:
    """``0.2511 [0.2674–0.4743]``: exploitability with its bootstrap interval."""
    low, high = row["ci95"]
    return f"{row['exploitability']:.4f} [{low:.4f}–{high:.4f}]"


#: One line on what the grades are, for both pages.
GRADES_NOTE = (
    "Every Tic-Tac-Toe and Connect Four move graded against the exact solvers, all opponents "
    "pooled (95% intervals): the top-move share is SPIN-Bench's per-move measure, the share of "
    "moves among those the solver ranks best; poker strategies queried K times at every "
    "information set: exploitability of the measured policy in chips per hand, and a "
    "bias-corrected bootstrap 95% interval for the strategy's own (few answers make a mixed "
    "strategy look more exploitable, so the estimate can sit above its interval)."
)

#: Where the grades are defined, for both pages (each renders it as a link).
GRADES_DOCS = "docs/grading.md"

#: What separates baselines from models, for both pages.
BASELINES_NOTE = (
    "Baselines are the built-in solvers and bots (random, MCTS, minimax, Nash, CFR, the Hanabi "
    "bot, ...): reference points, ranked among themselves and apart from the models, so a "
    "baseline that met only a weak model is never listed above the models."
)

#: Why TrueSkill's conservative rank can surprise, for both pages.
CONSERVATIVE_NOTE = (
    "TrueSkill estimates a skill μ with an uncertainty σ; players are ranked by μ − 3σ, a "
    "skill the player has shown with high confidence. Few games, or results that disagree, "
    "leave σ large and pull the rank down, so the ranking rewards evidence as well as skill. "
    "Two players that never met are compared only through the opponents they share: the "
    "checkpoints of a training run (a trainer's eval.db) each play the same fixed opponents, "
    "so step 20 can rank above step 40 when their μ differ by less than about 2σ (noise of a "
    "few dozen games) or when step 40 really plays worse. Before reading an order into two "
    "close rows, compare their mean returns against each opponent and the 95% intervals in "
    "the game tables."
)


def coverage_note(max_left_out: float) -> str:
    """Why games a player's own server failures stopped are counted apart, and the rank rule."""
    return (
        "Games stopped by a player's own server failures (and never scored on a replay) are in "
        "no score, so a server that failed on purpose in lost positions would hide its losses. "
        f"A player with more than {percent(max_left_out)}% of its games left out this way is "
        "shown without a rank: in a game where that holds for its games there or against one "
        "opponent, and overall where it holds for all its games or in any game."
    )


def coverage_counts(row: Mapping[str, Any]) -> list[str]:
    """Scored games, left-out games and their share."""
    return [str(row["scored_games"]), str(row["left_out_games"]), percent(row["left_out_share"])]


def coverage_row(row: Mapping[str, Any]) -> list[str]:
    """Scored games, left-out games, their share and whether the player is ranked."""
    return [*coverage_counts(row), "yes" if row["ranked"] else "no"]


#: The column headers of :func:`coverage_row`.
COVERAGE_HEADER = ("scored games", "left out", "left out %", "ranked")


def coverage_lines(env_coverage: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """An env's coverage as table lines: (player, against, cells of :data:`COVERAGE_HEADER`).

    A line per player over all its opponents (``all``, with whether it is ranked), then one per
    opponent it left games out against (``self``: self-play).
    """
    lines = []
    for row in env_coverage:
        lines.append((row["player"], "all", coverage_row(row)))
        for opponent in row["opponents"]:
            lines.append((row["player"], opponent["opponent"], [*coverage_counts(opponent), ""]))
    return lines


def unranked_reasons(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(player, why) for each row the coverage rule leaves without a rank."""
    return [(row["player"], row["unranked_reason"]) for row in rows if row["unranked_reason"]]


def prompt_mix_lines(data: Mapping[str, Any]) -> list[str]:
    """One plain-text warning per row that pools prompt versions (none: an empty list)."""
    lines = []
    for mix in data.get("prompt_mixes", []):
        versions = ", ".join(f"{v['version']} ({v['games']} games)" for v in mix["versions"])
        lines.append(
            f"{mix['player']} on {mix['env_id']} pools {len(mix['versions'])} prompt versions: "
            f"{versions}; its rows average different prompts (publish the runs apart with --run)"
        )
    return lines
