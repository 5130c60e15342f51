"""Tables of the leaderboard page: escaped cells, sortable column headers, common cells.

Every string from a user or a model goes through :func:`escape` (quotes included, so it is safe
in attributes too) before it becomes a cell's content; control characters, bidi controls and
line breaks in it are first made visible escapes by
:func:`~strategic_arena.door.printable.printable`, so the page shows them rather than hiding them.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strategic_arena.door.printable import printable_line
from strategic_arena.leaderboard import _format as fmt


def escape(text: object) -> str:
    r"""``text`` as HTML text or attribute value, shown exactly as received.

    Control characters become visible escapes (``\x1b``, ``\u202e``, ``\n``), then ``<``,
    ``>``, ``&`` and quotes are escaped.
    """
    return html.escape(printable_line(text), quote=True)


def sort_value(value: float | int | None) -> str:
    return "" if value is None else repr(value)


@dataclass(frozen=True)
class Cell:
    """One table cell: HTML content (already escaped), its sort value and whether it is text.

    ``name`` cells hold a player's name: they wrap at the name's ``:`` and ``,`` and have a
    bounded width, so a long opponent spec does not push the other columns out of view.
    """

    content: str
    sort: str | None = None
    text: bool = False
    wrap: bool = False
    name: bool = False

    def render(self) -> str:
        """The ``<td>``."""
        flags = (("text", self.text), ("wrap", self.wrap), ("name", self.name))
        classes = " ".join(c for c, on in flags if on)
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


def table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    caption: str,
    *,
    ranked: bool = False,
) -> str:
    """A sortable table in its own horizontally scrolling container.

    ``ranked`` tables start with the rank and player columns, which stay in view (sticky)
    while the rest scrolls inside the container on a narrow screen.
    """
    head = "".join(column.render() for column in columns)
    body = "\n".join("<tr>" + "".join(cell.render() for cell in row) + "</tr>" for row in rows)
    classes = "sortable ranked" if ranked else "sortable"
    return (
        f'<div class="table-wrap"><table class="{classes}"><caption class="note">{caption}'
        f"</caption>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table></div>"
    )


def breakable(name: str) -> str:
    """``name`` escaped, with line-break opportunities after ``:`` and ``,`` (opponent specs)."""
    return escape(name).replace(":", ":<wbr>").replace(",", ",<wbr>")


def number_cell(value: float | int | None, text: str) -> Cell:
    return Cell(escape(text), sort_value(value))


def player_cell(name: str) -> Cell:
    return Cell(breakable(name), text=True, name=True)


def rank_cell(row: Mapping[str, Any]) -> Cell:
    return number_cell(row["rank"], fmt.MISSING if row["rank"] is None else str(row["rank"]))


def points(row: Mapping[str, Any]) -> float | None:
    """Share of points (win 1, draw 1/2) for sorting a W/D/L column."""
    if row.get("wins") is None:
        return None
    games = row["wins"] + row["draws"] + row["losses"]
    return (row["wins"] + row["draws"] / 2) / games if games else None


def trueskill_cells(trueskill: Mapping[str, Any] | None) -> list[Cell]:
    mu = trueskill["mu"] if trueskill else None
    low = trueskill["conservative"] if trueskill else None
    return [number_cell(mu, fmt.rating(trueskill)), number_cell(low, fmt.conservative(trueskill))]
