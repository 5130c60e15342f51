"""``strategic-arena grade``: grade stored moves and measure poker strategies, then report.

Moves: every stored Tic-Tac-Toe and Connect Four move of complete or forfeited games (of the
chosen runs) is graded once; a game with ``unknown`` moves is graded again only under a larger
``--max-nodes``. Strategies: every built-in opponent that played Kuhn poker or Leduc Hold'em in
those runs, and the model at ``--base-url`` if one is given, is queried K times at every
information set; stored answers are reused, so an interrupted ``grade`` resumes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.store import ResultsStore
from strategic_arena.grading import POKER_ENVS
from strategic_arena.grading.moves import (
    DEFAULT_MAX_NODES,
    GRADED_ENVS,
    GRADED_STATUSES,
    PositionValues,
    grade_game,
)
from strategic_arena.grading.summary import move_summary, render_text
from strategic_arena.grading.tables import GradeTables
from strategic_arena.players import Player
from strategic_arena.printable import printable_line

#: Answers stored per transaction while querying a strategy.
_FLUSH_EVERY = 500


def add_parser(sub: Any) -> None:
    """Register ``grade`` on the CLI's subparsers."""
    from strategic_arena.arena.commands import DEFAULT_DB, add_model_options

    grade = sub.add_parser(
        "grade",
        help="grade stored moves against exact solvers and measure poker exploitability",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Grade every stored Tic-Tac-Toe and Connect Four move against the exact "
        "solvers, and query each poker player (built-in opponents of the runs, and the model "
        "at --base-url if given) K times at every information set to measure its strategy's "
        "exploitability. Results go to grading tables in the same database; rerunning resumes. "
        "Definitions: docs/grading.md.",
    )
    grade.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help="SQLite results store")
    grade.add_argument(
        "--run", action="append", default=None, metavar="NAME", help="only this run (repeatable)"
    )
    grade.add_argument(
        "--max-nodes",
        type=int,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help="Connect Four solver nodes per position; beyond it a move is 'unknown'",
    )
    grade.add_argument(
        "--samples", type=int, default=20, metavar="K", help="answers per information set"
    )
    grade.add_argument(
        "--envs",
        nargs="+",
        default=list(POKER_ENVS),
        choices=POKER_ENVS,
        metavar="ENV",
        help="poker games whose strategies are measured",
    )
    grade.add_argument("--no-moves", action="store_true", help="do not grade moves")
    grade.add_argument("--no-strategies", action="store_true", help="measure no strategy")
    grade.add_argument("--seed", type=int, default=0, help="seed of queries and the bootstrap")
    grade.add_argument("--concurrency", type=int, default=8, help="queries in flight at once")
    grade.add_argument("--json", action="store_true", help="print the grades as JSON")
    grade.add_argument("--quiet", action="store_true", help="no progress line")
    add_model_options(
        grade, "OpenAI-compatible base URL of a model whose poker strategies to measure"
    )


def grade_main(args: argparse.Namespace) -> int:
    """Run ``grade``; returns the exit status (2 on bad input)."""
    from strategic_arena._extras import MissingExtraError

    try:
        return _grade(args)
    except (ValueError, KeyError, MissingExtraError, OSError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"strategic-arena: error: {printable_line(message)}", file=sys.stderr)
        return 2


class IncompleteStrategyError(RuntimeError):
    """Some queries of a strategy failed on the endpoint's side; a rerun asks them again."""


def _grade(args: argparse.Namespace) -> int:
    from strategic_arena._extras import require
    from strategic_arena.arena.store import ResultsStore

    require("numba", "grading (the solvers)")
    if args.samples < 1 or args.concurrency < 1 or args.max_nodes < 1:
        raise ValueError("--samples, --concurrency and --max-nodes must be at least 1")
    if not Path(args.db).exists():
        raise ValueError(f"no results store at {args.db}")
    with ResultsStore(args.db) as store, GradeTables(args.db) as tables:
        run_ids = [store.run_id(name) for name in args.run] if args.run else None
        games = [g for g in store.games() if run_ids is None or g.run_id in run_ids]
        if not args.no_moves:
            grade_moves(store, tables, games, args.max_nodes, progress=not args.quiet)
        incomplete = 0
        if not args.no_strategies:
            if args.base_url is not None and args.sampling_seed is not None:
                raise ValueError(
                    "--sampling-seed would make every one of the K answers at an information "
                    "set the same draw; leave it out when measuring a strategy"
                )
            for name, env_id, build, policy in _strategy_players(args, store, games):
                try:
                    measure_strategy(
                        tables,
                        name,
                        env_id,
                        build,
                        samples=args.samples,
                        policy=policy,
                        seed=args.seed,
                        concurrency=args.concurrency,
                        progress=not args.quiet,
                    )
                except IncompleteStrategyError as error:
                    incomplete += 1
                    print(f"strategic-arena: {printable_line(error)}", file=sys.stderr)
        data = report_data(tables, games, every_strategy=run_ids is None)
    if args.json:
        import json

        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(render_text(data["moves"], data["strategies"]))
    return 1 if incomplete else 0


def grade_moves(
    store: ResultsStore,
    tables: GradeTables,
    games: Sequence[StoredGame],
    max_nodes: int,
    *,
    progress: bool = False,
) -> int:
    """Grade the moves of ``games`` not yet graded under ``max_nodes``; returns games graded."""
    from strategic_arena.arena.runner import Progress

    done = tables.graded_games()
    todo = [
        g
        for g in games
        if g.env_id in GRADED_ENVS
        and g.status in GRADED_STATUSES
        and (g.id not in done or (done[g.id][1] and done[g.id][0] < max_nodes))
    ]
    gradable = sum(g.env_id in GRADED_ENVS and g.status in GRADED_STATUSES for g in games)
    bar = Progress(gradable, gradable - len(todo), label="moves") if progress else None
    values = PositionValues(tables, max_nodes)
    for game in todo:
        grades = grade_game(game, store.moves(game.id), values)
        values.flush()
        tables.add_game_grades(game.id, max_nodes, grades)
        if bar is not None:
            bar.update()
    if bar is not None:
        bar.update(final=True)
    return len(todo)


PlayerBuilder = Callable[[int], Player]


def _strategy_players(
    args: argparse.Namespace, store: ResultsStore, games: Sequence[StoredGame]
) -> list[tuple[str, str, PlayerBuilder, str]]:
    """(name, env id, builder from a seed, illegal-move policy) of each strategy to measure."""
    from strategic_arena.arena.runner import Entrant

    kinds = {name: info.kind for name, info in store.players().items()}
    found: list[tuple[str, str, PlayerBuilder, str]] = []
    seen: set[tuple[str, str]] = set()
    for game in games:
        if game.env_id not in args.envs:
            continue
        for name in game.players:
            if (name, game.env_id) in seen:
                continue
            seen.add((name, game.env_id))
            if kinds.get(name) == "llm":
                if args.base_url is None:
                    print(
                        f"strategic-arena: {printable_line(name)} ({game.env_id}): a model; "
                        "give its --base-url to measure its strategy",
                        file=sys.stderr,
                    )
                continue
            try:
                # The spec's own seed would make all K samples the same draw: each query
                # gets its derived seed instead.
                entrant = Entrant.opponent(_without_seed(name))
            except ValueError as error:
                print(
                    f"strategic-arena: {printable_line(name)}: not measured "
                    f"({printable_line(error)})",
                    file=sys.stderr,
                )
                continue
            found.append((name, game.env_id, _builder(entrant, game.env_id), "forfeit"))
    if args.base_url is not None:
        from strategic_arena.arena.commands import model_entrant

        model = model_entrant(args, args.base_url, args.model)
        for env_id in args.envs:
            found.append((model.name, env_id, _builder(model, env_id), args.policy))
    return found


def _without_seed(spec: str) -> str:
    """``spec`` without a ``seed=`` parameter (``nash:seed=7`` -> ``nash``)."""
    name, _, rest = spec.partition(":")
    kept = [item for item in rest.split(",") if item and item.partition("=")[0].strip() != "seed"]
    return f"{name}:{','.join(kept)}" if kept else name


def _builder(entrant: Any, env_id: str) -> PlayerBuilder:
    def build(seed: int) -> Player:
        player: Player = entrant.build(env_id, seed)
        return player

    return build


def measure_strategy(
    tables: GradeTables,
    name: str,
    env_id: str,
    build: PlayerBuilder,
    *,
    samples: int,
    policy: str,
    seed: int,
    concurrency: int = 8,
    progress: bool = False,
) -> dict[str, Any]:
    """Query ``name`` K times at every information set of ``env_id`` and store its grade.

    Answers already stored are reused (the query resumes); the player of query ``(info set,
    sample)`` is built with a seed derived from ``seed``, the player, game, info set and sample.
    """
    from strategic_arena.arena.runner import Progress
    from strategic_arena.grading.strategy import grade_strategy, info_sets, query

    stored = tables.strategy_samples(name, env_id)
    sets = info_sets(env_id)
    todo = [(info, k) for info in sets for k in range(samples) if (info.name, k) not in stored]
    total = len(sets) * samples
    bar = (
        Progress(total, total - len(todo), label=f"{name} {env_id}", unit="queries")
        if progress
        else None
    )
    pending: list[tuple[str, int, int | None, str | None]] = []

    def answered(info: Any, sample: int, action: int | None, kind: str | None) -> None:
        stored[(info.name, sample)] = action
        pending.append((info.name, sample, action, kind))
        if len(pending) >= _FLUSH_EVERY:
            tables.add_strategy_samples(name, env_id, pending)
            pending.clear()
        if bar is not None:
            bar.update(error=action is None)

    try:
        failed = asyncio.run(
            query(build, env_id, todo, seed=seed, concurrency=concurrency, on_answer=answered)
        )
    finally:
        tables.add_strategy_samples(name, env_id, pending)
    if bar is not None:
        bar.update(final=True)
    if failed:
        # The endpoint's failures are not the model's answers: nothing is graded until a
        # rerun has asked them again.
        raise IncompleteStrategyError(
            f"{name} ({env_id}): {failed} of {len(todo)} queries failed on the endpoint's "
            "side (after the backend's retries); run grade again to ask them"
        )
    kept = {key: action for key, action in stored.items() if key[1] < samples}
    grade = {**grade_strategy(env_id, kept, samples, policy, seed), "policy": policy}
    tables.set_strategy_grade(name, env_id, grade)
    return grade


def report_data(
    tables: GradeTables, games: Sequence[StoredGame], *, every_strategy: bool = False
) -> dict[str, Any]:
    """The grades of ``games`` (moves) and strategies, as JSON data.

    Strategies: every stored one with ``every_strategy`` (no run filter: a model measured at
    its endpoint may have played no stored game), else those of the games' players.
    """
    grades = tables.move_grades(g.id for g in games)
    players = {(name, g.env_id) for g in games for name in g.players}
    strategies = [
        row
        for row in tables.strategy_grades()
        if every_strategy or (row["player"], row["env_id"]) in players
    ]
    return {"moves": move_summary(grades), "strategies": strategies}


def stored_grades(store: ResultsStore, run_names: Sequence[str] | None) -> dict[str, Any]:
    """:func:`report_data` of the games of ``run_names`` (all when ``None``) in ``store``.

    Reads only: a store never graded has no grades (and gets no grading tables).
    """
    if "strategy_grades" not in store.table_names():
        return {"moves": [], "strategies": []}
    run_ids = None if run_names is None else {store.run_id(name) for name in run_names}
    games = [g for g in store.games() if run_ids is None or g.run_id in run_ids]
    with GradeTables(store.path, readonly=True) as grades:
        return report_data(grades, games, every_strategy=run_names is None)
