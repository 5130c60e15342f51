"""Replays for the published page: a bounded sample of stored games, drawn move by move.

:func:`build_replays` picks at most ``per_pair`` games of every pair of players in every game
(:func:`sample`: deterministic, both seatings in turn), replays each from the store exactly as
``strategic-arena replay`` does (:func:`strategic_arena.arena.replay.replay_game`: the stored
seed and moves, checked against the stored history), and records the board before the first
move and after every move. The page's script then only steps through these frames: nothing is
computed, parsed or fetched in the browser.

The board of a step is drawn by the game itself:

* Tic-Tac-Toe and Connect Four: the rules engine's own rendering of the state (rows of ``.``,
  ``x`` and ``o``, what ``env.render()`` returns), which the page draws as a grid;
* every other game (the poker games, Hanabi, free-text games): what each seat sees, in the
  prompts' words (``observation_text``); one block when every seat sees the same. A spectator
  sees every seat's view, so both poker hands and the whole Hanabi table are shown.

Beside each move: the move played, the answer as the model wrote it and its reasoning (each cut
at ``text_limit`` characters, with the full length kept), why an answer was invalid, and the
move's grade where ``strategic-arena grade`` stored one (Tic-Tac-Toe's grades are computed here
when none are stored, as the Grades tab does). Every text from a model or the store is passed
through :func:`~strategic_arena.door.printable.printable` (control characters become visible
escapes); the page then only ever sets it as text.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from strategic_arena.arena.records import StoredGame, StoredMove
from strategic_arena.arena.replay import ReplayError, replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable, printable_line
from strategic_arena.env import TextGameEnv
from strategic_arena.games import get_spec
from strategic_arena.grading.moves import GRADED_ENVS, instant_grades, is_blunder, is_top_move
from strategic_arena.grading.tables import GradeTables, MoveGrade
from strategic_arena.leaderboard.data import env_order

#: Version of the replays' layout (``replays.json`` and the page's embedded copy).
VERSION = 1

#: Games replayed per pair of players in each game (both seatings in turn; 0: none).
GAMES_PER_PAIR = 2

#: Characters kept of a move's answer and of its reasoning (the full length is recorded).
TEXT_LIMIT = 1000

#: Characters kept of one seat's view of a board, from its end (a free-text game's view quotes
#: its moves, the latest last).
VIEW_LIMIT = 4000

#: OpenSpiel games whose state string is a grid of cells (``.``, ``x``, ``o``), drawn as one.
GRID_GAMES = frozenset({"tic_tac_toe", "connect_four"})

#: Grid games whose rows are numbered in their moves (Tic-Tac-Toe's ``(row,column)``).
NUMBERED_ROWS = frozenset({"tic_tac_toe"})


def sample(
    games: Sequence[StoredGame], run_names: Mapping[int, str], per_pair: int
) -> list[StoredGame]:
    """At most ``per_pair`` games of each line-up of players in each game.

    A line-up is the players of a game whatever their seats (``A`` against ``B`` is ``B``
    against ``A``). Its games are taken in the order of (run name, game key), alternating
    between its seatings, so two games of a pair show each player in each seat. The result is
    in page order: by game (curated games first), line-up, then that order.
    """
    if per_pair < 0:
        raise ValueError(f"games per pair must be at least 0, not {per_pair}")
    groups: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], list[StoredGame]]]
    groups = defaultdict(lambda: defaultdict(list))
    for game in sorted(games, key=lambda g: (run_names[g.run_id], g.game_key)):
        groups[(game.env_id, tuple(sorted(game.players)))][game.players].append(game)
    chosen: list[StoredGame] = []
    for key in sorted(groups, key=lambda k: (env_order(k[0]), k[1])):
        seatings = [groups[key][seating] for seating in sorted(groups[key])]
        turns = itertools.zip_longest(*seatings)
        alternating = [game for turn in turns for game in turn if game is not None]
        chosen += alternating[:per_pair]
    return chosen


def _grades(store: ResultsStore, games: Sequence[StoredGame]) -> dict[tuple[int, int], MoveGrade]:
    """The move grades of ``games`` by (game id, ply): stored ones, else computed if instant."""
    graded = [game for game in games if game.env_id in GRADED_ENVS]
    if not graded:
        return {}
    found: list[MoveGrade] = []
    done: set[int] = set()
    if "move_grades" in store.table_names():  # reads only: a store never graded stays as it is
        with GradeTables(store.target, readonly=True) as tables:
            done = set(tables.graded_games())
            found = tables.move_grades(game.id for game in graded if game.id in done)
    found += instant_grades(store, [game for game in graded if game.id not in done])
    return {(grade.game_id, grade.ply): grade for grade in found}


def _value(value: int) -> str:
    return f"{value:+d}" if value else "0"


def grade_text(grade: MoveGrade) -> dict[str, str]:
    """A move's grade as the page shows it: a label and what it rests on."""
    if grade.category == "invalid":
        return {"label": "invalid answer", "detail": "not graded"}
    if grade.category != "graded" or grade.before is None or grade.after is None:
        return {"label": "unknown", "detail": "past the solver's node budget"}
    if is_top_move(grade):
        label = "top move"
    elif is_blunder(grade):
        label = "blunder (a missed win)" if grade.before > 0 else "blunder"
    else:
        label = "inaccuracy"
    detail = f"value for the mover {_value(grade.before)} before, {_value(grade.after)} after"
    return {"label": label, "detail": detail}


def _text(text: str, limit: int) -> dict[str, Any]:
    """A model's text, printable and cut at ``limit`` characters, with its full length."""
    shown = printable(text, keep_newlines=True)
    cut = len(shown) > limit
    return {"text": shown[: limit - 1] + "…" if cut else shown, "chars": len(shown), "cut": cut}


def _move(move: StoredMove, grade: MoveGrade | None, limit: int) -> dict[str, Any]:
    error = move.error
    return {
        "seat": move.seat,
        "text": None if move.action is None else printable_line(move.action_text, limit),
        "error": None if error is None else printable_line(f"{error.kind}: {error.detail}", limit),
        "attempts": move.attempts,
        "response": _text(move.response, limit),
        "reasoning": _text(move.reasoning, limit) if move.reasoning else None,
        "grade": None if grade is None else grade_text(grade),
    }


def _tail(view: str) -> str:
    """A seat's view, printable, its last :data:`VIEW_LIMIT` characters when longer.

    The end, not the start: a free-text game's view ends with the latest moves.
    """
    shown = printable(view, keep_newlines=True)
    return "…" + shown[-(VIEW_LIMIT - 1) :] if len(shown) > VIEW_LIMIT else shown


def board(env: TextGameEnv, players: Sequence[str]) -> dict[str, Any]:
    """The board of ``env``'s current state as the page draws it (see the module).

    ``{"grid": rows}`` for a grid game, else ``{"views": [{"label", "text"}, ...]}``.
    """
    spec, state = env.spec, env.spiel_state
    if spec.openspiel_name in GRID_GAMES:
        return {"grid": str(state).splitlines()}
    views = [spec.observation_text(state, seat) for seat in range(len(players))]
    if len(set(views)) == 1:  # compared whole: views that differ only in a cut part differ
        return {"views": [{"label": "what every seat sees", "text": _tail(views[0])}]}
    return {
        "views": [
            {"label": f"seat {seat} ({printable_line(name)}) sees", "text": _tail(view)}
            for seat, (name, view) in enumerate(zip(players, views, strict=True))
        ]
    }


def _steps(
    store: ResultsStore, game: StoredGame, grades: Mapping[tuple[int, int], MoveGrade], limit: int
) -> list[dict[str, Any]]:
    """Step 0 (the board before any move), then one step per stored move with its board after.

    At a simultaneous turn the seats' moves are applied together: the steps of the turn's
    first moves show the board before it, the last one the board after.
    """
    boards: list[dict[str, Any]] = []
    replayed = replay_game(
        store, game.id, lambda move, env: boards.append(board(env, game.players))
    )
    boards.append(board(replayed.env, game.players))
    if len(boards) != len(replayed.moves) + 1:
        raise ReplayError(f"{len(replayed.moves)} stored moves, {len(boards) - 1} replayed")
    steps: list[dict[str, Any]] = [{"board": boards[0], "move": None}]
    for index, move in enumerate(replayed.moves, start=1):
        grade = grades.get((game.id, move.ply))
        steps.append({"board": boards[index], "move": _move(move, grade, limit)})
    return steps


def _result(game: StoredGame) -> str:
    returns = ", ".join(f"seat {seat} {r:+g}" for seat, r in enumerate(game.returns))
    if game.forfeited_by is not None:
        return f"seat {game.forfeited_by} forfeited; returns: {returns}"
    return f"returns: {returns}"


def _replay(
    store: ResultsStore,
    game: StoredGame,
    run: str,
    grades: Mapping[tuple[int, int], MoveGrade],
    limit: int,
) -> dict[str, Any]:
    spec = get_spec(game.env_id)
    return {
        "env_id": game.env_id,
        "title": spec.title,
        "run": printable_line(run),
        "game_key": printable_line(game.game_key),
        "players": [printable_line(name) for name in game.players],
        "result": _result(game),
        "grid": spec.openspiel_name in GRID_GAMES,
        "numbered_rows": spec.openspiel_name in NUMBERED_ROWS,
        "steps": _steps(store, game, grades, limit),
    }


def build_replays(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    *,
    per_pair: int = GAMES_PER_PAIR,
    text_limit: int = TEXT_LIMIT,
) -> dict[str, Any]:
    """The replays of a sample of the scored games of ``run_names`` (every run when ``None``).

    Args:
        store: the results store.
        run_names: runs to include.
        per_pair: games replayed per line-up of players in each game (:func:`sample`).
        text_limit: characters kept of each answer and reasoning.

    Returns:
        JSON-ready data: the bounds used, one entry per replayed game (its players, result and
        steps) and the sampled games that could not be replayed, with why (a changed game
        version, a corrupted store), which are left out rather than failing the publication.
    """
    if text_limit < 1:
        raise ValueError(f"the text limit must be at least 1, not {text_limit}")
    runs = [run for run in store.runs() if run_names is None or run.name in run_names]
    names = {run.id: run.name for run in runs}
    chosen = sample([game for run in runs for game in store.games(run.id)], names, per_pair)
    grades = _grades(store, chosen)
    replays, skipped = [], []
    for game in chosen:
        run = names[game.run_id]
        try:
            replays.append(_replay(store, game, run, grades, text_limit))
        except ReplayError as error:
            skipped.append(
                {
                    "run": printable_line(run),
                    "game_key": printable_line(game.game_key),
                    "reason": printable_line(error),
                }
            )
    return {**no_replays(per_pair, text_limit), "games": replays, "skipped": skipped}


def no_replays(per_pair: int = 0, text_limit: int = TEXT_LIMIT) -> dict[str, Any]:
    """Replays without games (what ``publish`` writes when asked for none)."""
    return {
        "version": VERSION,
        "games_per_pair": per_pair,
        "text_limit": text_limit,
        "view_limit": VIEW_LIMIT,
        "games": [],
        "skipped": [],
    }
