"""The page's coverage parts: games left out by the players' own servers, and why no rank.

:mod:`.coverage` states the rule. Every name goes through :func:`~._cells.escape`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from strategic_arena.leaderboard import _format as fmt
from strategic_arena.leaderboard._cells import Cell, Column, escape, player_cell, table


def _reasons(rows: Sequence[Mapping[str, Any]]) -> str:
    """A list of the rows the coverage rule leaves without a rank, saying why."""
    items = "".join(
        f"<li>Not ranked: <strong>{escape(name)}</strong>: {escape(why)}.</li>"
        for name, why in fmt.unranked_reasons(rows)
    )
    return f'<ul class="note">{items}</ul>' if items else ""


def _count_columns() -> list[Column]:
    columns = [Column(name, descending=True) for name in fmt.COVERAGE_HEADER[:3]]
    return [*columns, Column(fmt.COVERAGE_HEADER[3], text=True)]


def _cells(texts: Sequence[str]) -> list[Cell]:
    """The cells of :data:`fmt.COVERAGE_HEADER` (three numbers, then ranked)."""
    *numbers, ranked = texts
    cells = [Cell(escape(text), escape(text)) for text in numbers]
    return [*cells, Cell(escape(ranked), text=True)]


def overall_coverage(data: Mapping[str, Any]) -> str:
    """Under the overall table: why some players have no rank, and every player's counts."""
    if not data["coverage"]:
        return ""
    columns = [Column("player", text=True), *_count_columns()]
    rows = [
        [player_cell(row["player"]), *_cells(fmt.coverage_row(row))] for row in data["coverage"]
    ]
    note = escape(fmt.coverage_note(data["rating"]["max_left_out_share"]))
    caption = "Games left out by the players' own server failures"
    return (
        _reasons(data["overall"]["rows"])
        + f'\n<p class="note">{note}</p>\n'
        + table(columns, rows, caption)
    )


def env_coverage(env: Mapping[str, Any]) -> list[str]:
    """Under an env's table: why some players have no rank there, and the counts per opponent.

    A list of the page parts: empty when no player left games out there.
    """
    if not env["coverage"]:
        return []
    columns = [Column("player", text=True), Column("against", text=True), *_count_columns()]
    rows = [
        [player_cell(player), Cell(escape(against), text=True), *_cells(cells)]
        for player, against, cells in fmt.coverage_lines(env["coverage"])
    ]
    caption = f"{escape(env['title'])}: games left out by the players' own server failures"
    return [_reasons(env["rows"]) + "\n" + table(columns, rows, caption)]
