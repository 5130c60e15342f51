"""The Grades panel of the leaderboard page: move grades and poker exploitability, with charts.

Reads the ``grades`` of :func:`strategic_arena.leaderboard.data.build` (``docs/grading.md``):
a chart of accuracy and blunder rate per player and game, one of exploitability per player in
each poker game, and the tables behind them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from strategic_arena.leaderboard import _format as fmt
from strategic_arena.leaderboard._cells import Cell, Column, escape, number_cell, player_cell, table
from strategic_arena.leaderboard._charts import Bar, bar_chart, interval_chart


def _share(share: Mapping[str, Any]) -> Cell:
    return number_cell(share["share"], fmt.share_ci(share))


def _moves(rows: Sequence[Mapping[str, Any]]) -> str:
    bars: list[tuple[str, Sequence[Bar]]] = []
    for row in rows:
        blunders = row["blunders"]["share"]
        accuracy = row["accuracy"]
        bars.append(
            (
                f"{row['player']} · {row['env_id'].removesuffix('-v0')}",
                [
                    (accuracy["mean"], accuracy["ci95"], "bar"),
                    (None if blunders is None else 100 * blunders, None, "bar-alt"),
                ],
            )
        )
    caption = (
        '<span class="legend-swatch bar"></span>accuracy (whiskers: 95% CI)'
        '<span class="legend-swatch bar-alt"></span>blunder rate, % of graded moves.'
    )
    columns = [
        Column("game", text=True),
        Column("player", text=True),
        Column("graded", descending=True),
        Column(
            "top-move %",
            descending=True,
            title="moves the exact solver ranks best (SPIN-Bench's measure), 95% Wilson interval",
        ),
        Column("blunders %", title="with its 95% Wilson interval"),
        Column("missed wins"),
        Column("accuracy", descending=True, title="± 95% CI"),
        Column("value loss", title="solver units ± 95% CI"),
        Column("invalid"),
        Column("unknown", title="past the Connect Four solver's node budget"),
    ]
    cells = [
        [
            Cell(escape(row["env_id"]), text=True),
            player_cell(row["player"]),
            number_cell(row["graded"], str(row["graded"])),
            _share(row["optimal"]),
            _share(row["blunders"]),
            number_cell(row["missed_wins"]["count"], str(row["missed_wins"]["count"])),
            number_cell(
                row["accuracy"]["mean"],
                fmt.mean_ci(row["accuracy"]["mean"], row["accuracy"]["ci95"], 1).lstrip("+"),
            ),
            number_cell(
                row["value_loss"]["mean"],
                fmt.mean_ci(row["value_loss"]["mean"], row["value_loss"]["ci95"]).lstrip("+"),
            ),
            number_cell(row["invalid"], str(row["invalid"])),
            number_cell(row["unknown"], str(row["unknown"])),
        ]
        for row in rows
    ]
    return "\n".join(
        [
            bar_chart(bars, "Accuracy and blunder rate per player and game", caption),
            table(columns, cells, "Move grades against the exact solvers, all opponents pooled"),
        ]
    )


def _strategies(rows: Sequence[Mapping[str, Any]]) -> str:
    charts = []
    for env_id in dict.fromkeys(row["env_id"] for row in rows):
        items = [
            (row["player"], row["exploitability"], *row["ci95"])
            for row in sorted(rows, key=lambda r: r["exploitability"])
            if row["env_id"] == env_id
        ]
        charts.append(
            interval_chart(
                items,
                f"{env_id}: exploitability",
                f"{escape(env_id)}: exploitability in chips per hand (dot) and its bootstrap "
                "95% interval (bar); 0 is an equilibrium.",
            )
        )
    columns = [
        Column("game", text=True),
        Column("player", text=True),
        Column("K", descending=True, title="answers per information set"),
        Column("exploitability", title="chips per hand, bootstrap 95% interval"),
        Column("BR vs seat 0", title="what a best response wins against seat 0"),
        Column("BR vs seat 1", title="what a best response wins against seat 1"),
        Column("distance", title="mean total variation from the shipped equilibrium"),
        Column("invalid %"),
    ]
    cells = [
        [
            Cell(escape(row["env_id"]), text=True),
            player_cell(row["player"]),
            number_cell(row["samples"], str(row["samples"])),
            number_cell(row["exploitability"], fmt.exploitability(row)),
            number_cell(row["best_response"][0], f"{row['best_response'][0]:+.4f}"),
            number_cell(row["best_response"][1], f"{row['best_response'][1]:+.4f}"),
            number_cell(row["distance"], f"{row['distance']:.3f}"),
            number_cell(row["invalid"], fmt.percent(row["invalid"])),
        ]
        for row in rows
    ]
    return "\n".join([*charts, table(columns, cells, "Poker strategies")])


def grades_panel(data: Mapping[str, Any]) -> str:
    """The panel's HTML ('not graded' when the database has no grades)."""
    grades = data["grades"]
    moves = [row for row in grades["moves"] if row["opponent"] == "all"]
    if not moves and not grades["strategies"]:
        return '<p class="note">Not graded: run <code>strategic-arena grade</code>.</p>'
    parts = [
        f'<p class="note">{escape(fmt.GRADES_NOTE)} <a href="#definitions">Definitions</a> '
        f"(in full: {escape(fmt.GRADES_DOCS)}).</p>"
    ]
    if moves:
        parts.append(_moves(moves))
    if grades["strategies"]:
        parts.append(_strategies(grades["strategies"]))
    return "\n".join(parts)
