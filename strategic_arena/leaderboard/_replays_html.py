"""The Replays panel of the leaderboard page: a viewer that steps through sampled games.

Reads the replays of :func:`strategic_arena.leaderboard.replays.build_replays`. The panel holds
the viewer (a game picker, buttons, the board, the move and its answer, the moves so far: the
page's script, ``replay.js``, fills them as text) and, per game and player, the list of that
player's replayed games; each game table links its rows to these lists (:func:`links`).

The frames travel in the page as one ``<script type="application/json">`` block
(:func:`data_block`): a data block is never run, so the page's Content-Security-Policy, which
runs only its own script by hash, stays as strict as before, and the page works opened from
disk (a browser refuses to ``fetch`` a sibling file there).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from strategic_arena.door.printable import printable_line
from strategic_arena.leaderboard._cells import Cell, escape, number_cell, sort_value

#: Characters a JSON text may hold that would end or confuse an HTML data block, and their
#: JSON escapes (they can only occur inside JSON strings, where the escapes mean the same).
_BLOCK_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def data_block(replays: Mapping[str, Any]) -> str:
    """The replays as an inert JSON block: no ``</script>`` or ``<!--`` can occur in it."""
    text = json.dumps(replays, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in _BLOCK_ESCAPES.items():
        text = text.replace(char, escaped)
    return f'<script type="application/json" id="replay-data">{text}</script>'


def _lists(replays: Mapping[str, Any]) -> dict[str, dict[str, list[int]]]:
    """Env id -> player -> the indexes of its replayed games, in page order."""
    lists: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for index, game in enumerate(replays["games"]):
        for player in dict.fromkeys(game["players"]):
            lists[game["env_id"]][player].append(index)
    return lists


def _anchor(env: int, player: int) -> str:
    return f"replays-{env}-{player}"


def links(replays: Mapping[str, Any] | None) -> dict[tuple[str, str], tuple[str, int]]:
    """(env id, player name) -> (the id of the player's list of replays there, its length).

    Player names are looked up as stored (:func:`link_cell` passes them through
    :func:`~strategic_arena.door.printable.printable_line`, as the replays do).
    """
    found: dict[tuple[str, str], tuple[str, int]] = {}
    if not replays:
        return found
    for env, (env_id, players) in enumerate(_lists(replays).items()):
        for player, (name, games) in enumerate(sorted(players.items())):
            found[(env_id, name)] = (_anchor(env, player), len(games))
    return found


def link_cell(found: Mapping[tuple[str, str], tuple[str, int]], env_id: str, player: str) -> Cell:
    """A game table's cell linking a row to its player's replays there (— when none)."""
    link = found.get((env_id, printable_line(player)))
    if link is None:
        return number_cell(None, "—")
    anchor, count = link
    label = f"{count} game{'s' if count != 1 else ''}"
    return Cell(f'<a href="#{anchor}">{label}</a>', sort_value(count))


def _game_line(index: int, game: Mapping[str, Any], player: str) -> str:
    players = game["players"]
    seats = [seat for seat, name in enumerate(players) if name == player]
    others = [name for name in players if name != player] or [player]
    against = " and ".join(escape(name) for name in dict.fromkeys(others))
    where = "both seats" if len(seats) > 1 else f"seat {seats[0]}"
    return (
        f'<li><a href="#replay-{index}">vs {against}</a> ({where}, '
        f"{len(game['steps']) - 1} moves; {escape(game['result'])}) "
        f'<span class="note">{escape(game["run"])} / {escape(game["game_key"])}</span></li>'
    )


def _picker(replays: Mapping[str, Any]) -> str:
    groups: dict[str, list[str]] = defaultdict(list)
    for index, game in enumerate(replays["games"]):
        names = " vs ".join(escape(name) for name in game["players"])
        groups[game["title"]].append(
            f'<option value="{index}">{names} · {escape(game["game_key"])}</option>'
        )
    return "".join(
        f'<optgroup label="{escape(title)}">{"".join(options)}</optgroup>'
        for title, options in groups.items()
    )


#: The viewer's fixed markup; ``replay.js`` fills its parts as text.
_VIEWER = (
    '<p class="note" id="replay-nojs">Stepping through a game needs JavaScript; the games '
    "are listed below.</p>"
    '<div id="replay-viewer" class="viewer" hidden>'
    '<p><label for="replay-pick">Game</label> <select id="replay-pick">{options}</select></p>'
    '<h3 id="replay-title"></h3><p class="note" id="replay-result"></p>'
    '<div class="replay-controls">'
    '<button type="button" id="replay-first" title="first (Home)">« first</button>'
    '<button type="button" id="replay-back" title="back (←)">◀ back</button>'
    '<span id="replay-step" aria-live="polite"></span>'
    '<button type="button" id="replay-forward" title="forward (→)">forward ▶</button>'
    '<button type="button" id="replay-last" title="last (End)">last »</button>'
    "</div>"
    '<div class="replay-body">'
    '<div id="replay-board" class="replay-board"></div>'
    '<div class="replay-move">'
    '<p id="replay-move"></p><p id="replay-grade"></p><p id="replay-error"></p>'
    '<div id="replay-answer"><h4>Answer</h4><pre class="response" id="replay-response"></pre>'
    '<p class="note" id="replay-response-cut"></p></div>'
    '<div id="replay-thinking"><h4>Reasoning</h4>'
    '<pre class="response" id="replay-reasoning"></pre>'
    '<p class="note" id="replay-reasoning-cut"></p></div>'
    "</div></div>"
    '<h4>Moves so far</h4><ol id="replay-transcript" class="transcript"></ol>'
    "</div>"
)


def replays_panel(replays: Mapping[str, Any]) -> str:
    """The panel's HTML: what is replayed, the viewer, the lists of games per player."""
    per_pair, limit = replays["games_per_pair"], replays["text_limit"]
    parts = [
        f'<p class="note">Up to {per_pair} game{"s" if per_pair != 1 else ""} of each pair of '
        "players in each game, replayed move by move from the results store (the first by run "
        "and game key, alternating seats). Answers and reasoning are cut at "
        f"{limit} characters. Step with the buttons or the ← and → keys (Home, End: the first "
        "and last move); the grade of a move is shown where it was graded.</p>",
        _VIEWER.format(options=_picker(replays)),
    ]
    if replays["skipped"]:
        items = "".join(
            f"<li>{escape(s['run'])} / {escape(s['game_key'])}: {escape(s['reason'])}</li>"
            for s in replays["skipped"]
        )
        parts.append(
            f'<p class="note">{len(replays["skipped"])} sampled game(s) could not be replayed '
            f"and are left out:</p><ul>{items}</ul>"
        )
    titles = {game["env_id"]: game["title"] for game in replays["games"]}
    for env, (env_id, players) in enumerate(_lists(replays).items()):
        parts.append(f'<h3 id="replays-{env}">{escape(titles[env_id])}</h3>')
        for player, (name, indexes) in enumerate(sorted(players.items())):
            games = "".join(_game_line(i, replays["games"][i], name) for i in indexes)
            parts.append(
                f'<h4 id="{_anchor(env, player)}">{escape(name)}</h4>'
                f'<ul class="replay-list">{games}</ul>'
            )
    return "\n".join(parts)
