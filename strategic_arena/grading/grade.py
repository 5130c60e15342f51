"""The ``grade`` use case: grade stored moves and measure poker strategies.

Moves: every stored Tic-Tac-Toe and Connect Four move of complete or forfeited games (of the
chosen runs) is graded once; a game with ``unknown`` moves is graded again only under a larger
``max_nodes``. Strategies: every built-in opponent that played Kuhn poker or Leduc Hold'em in
those runs, and a model endpoint if one is given, is queried K times at every information set;
stored answers are reused, so an interrupted :func:`grade` resumes.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.arena.endpoint import ModelOptions, checked_entrant
from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.runner import Entrant, Progress
from strategic_arena.arena.store import ResultsStore, existing, setting_differences
from strategic_arena.door.printable import printable_line
from strategic_arena.grading import strategy_envs
from strategic_arena.grading.moves import (
    DEFAULT_MAX_NODES,
    GRADED_ENVS,
    GRADED_STATUSES,
    PositionValues,
    grade_game,
)
from strategic_arena.grading.strategy import grade_strategy, info_sets, query
from strategic_arena.grading.summary import move_summary
from strategic_arena.grading.tables import GradeTables, MoveGrade
from strategic_arena.turn import Player

#: Answers stored per transaction while querying a strategy.
_FLUSH_EVERY = 500


class IncompleteStrategyError(RuntimeError):
    """Some queries of a strategy failed on the endpoint's side; a rerun asks them again."""


@dataclass(frozen=True)
class GradeResult:
    """What :func:`grade` did.

    Attributes:
        data: the grades (``moves`` summary rows and ``strategies`` rows), as JSON data.
        incomplete: one message per strategy whose queries partly failed (a rerun asks them).
    """

    data: dict[str, Any]
    incomplete: tuple[str, ...]


def _stderr(message: str) -> None:
    # Messages name stored players, whose names may come from an endpoint.
    print(f"strategic-arena: {printable_line(message)}", file=sys.stderr)


def grade(
    db: str | Path,
    *,
    runs: Sequence[str] | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    samples: int = 20,
    envs: Sequence[str] | None = None,
    moves: bool = True,
    strategies: bool = True,
    seed: int = 0,
    concurrency: int = 8,
    model: ModelOptions | None = None,
    progress: bool = False,
    warn: Callable[[str], None] = _stderr,
) -> GradeResult:
    """Grade the stored moves of ``db`` and measure the poker strategies of its players.

    Args:
        db: an existing results store; grades go to its grading tables.
        runs: only the games of these runs (all when ``None``).
        max_nodes: Connect Four solver nodes per position; beyond it a move is ``unknown``.
        samples: answers per information set when measuring a strategy.
        envs: poker games whose strategies are measured (``None``: every game whose listing
            says ``strategy_graded``, :func:`~strategic_arena.grading.strategy_envs`).
        moves: grade moves.
        strategies: measure strategies (built-in opponents of the runs, and ``model``).
        seed: seed of the queries and the bootstrap.
        concurrency: queries in flight at once.
        model: a model endpoint whose strategies to measure too (its ``base_url`` is required).
        progress: print progress lines.
        warn: told about players that are not measured, and why.

    Raises:
        ValueError: bad settings or no store at ``db``, before anything is graded.
        MissingExtraError: numba (the ``[solvers]`` extra) is missing.
    """
    require("numba", "grading (the solvers)")
    envs = strategy_envs() if envs is None else tuple(envs)
    if samples < 1 or concurrency < 1 or max_nodes < 1:
        raise ValueError("--samples, --concurrency and --max-nodes must be at least 1")
    existing(db)
    if strategies and model is not None and model.sampling.seed is not None:
        raise ValueError(
            "--sampling-seed would make every one of the K answers at an information "
            "set the same draw; leave it out when measuring a strategy"
        )
    measured: Entrant | None = None
    if strategies and model is not None:
        if model.base_url is None:
            raise ValueError("measuring a model's strategy needs its --base-url")
        # Before anything is stored: a configuration mistake must not become stored answers.
        measured = checked_entrant(model, model.base_url, model.model, seed, envs[0])
    incomplete: list[str] = []
    with ResultsStore(db) as store, GradeTables(db) as tables:
        run_ids = [store.run_id(name) for name in runs] if runs else None
        games = [g for g in store.games() if run_ids is None or g.run_id in run_ids]
        if measured is not None:  # a name standing for another model: refused before any work
            _check_same_model(store, tables, measured)
        if moves:
            grade_moves(store, tables, games, max_nodes, progress=progress)
        if strategies:
            found = _strategy_players(store, games, envs, measured, model, warn)
            for name, env_id, build, policy in found:
                try:
                    measure_strategy(
                        tables,
                        name,
                        env_id,
                        build,
                        samples=samples,
                        policy=policy,
                        seed=seed,
                        concurrency=concurrency,
                        progress=progress,
                    )
                except IncompleteStrategyError as error:
                    incomplete.append(str(error))
                    warn(str(error))
        data = report_data(tables, games, every_strategy=run_ids is None)
    if not moves:
        data["moves"] = []
    return GradeResult(data, tuple(incomplete))


def grade_moves(
    store: ResultsStore,
    tables: GradeTables,
    games: Sequence[StoredGame],
    max_nodes: int,
    *,
    progress: bool = False,
) -> int:
    """Grade the moves of ``games`` not yet graded under ``max_nodes``; returns games graded."""
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
    store: ResultsStore,
    games: Sequence[StoredGame],
    envs: Sequence[str],
    measured: Entrant | None,
    model: ModelOptions | None,
    warn: Callable[[str], None],
) -> list[tuple[str, str, PlayerBuilder, str]]:
    """(name, env id, builder from a seed, illegal-move policy) of each strategy to measure.

    ``measured``: the model at ``model``'s endpoint, already checked, whose strategy is measured
    too (``None``: none).
    """
    kinds = {name: info.kind for name, info in store.players().items()}
    found: list[tuple[str, str, PlayerBuilder, str]] = []
    seen: set[tuple[str, str]] = set()
    for game in games:
        if game.env_id not in envs:
            continue
        for name in game.players:
            if (name, game.env_id) in seen:
                continue
            seen.add((name, game.env_id))
            if kinds.get(name) == "llm":
                if model is None:
                    warn(
                        f"{name} ({game.env_id}): a model; give its --base-url to measure its "
                        "strategy"
                    )
                continue
            try:
                # The spec's own seed would make all K samples the same draw: each query
                # gets its derived seed instead.
                entrant = Entrant.opponent(_without_seed(name))
            except ValueError as error:
                warn(f"{name}: not measured ({error})")
                continue
            found.append((name, game.env_id, _builder(entrant, game.env_id), "forfeit"))
    if measured is not None and model is not None:
        for env_id in envs:
            found.append((measured.name, env_id, _builder(measured, env_id), model.asking.policy))
    return found


def _check_same_model(store: ResultsStore, tables: GradeTables, model: Entrant) -> None:
    """Refuse a model measured under a name that stands for another model or sampling.

    The name's games in the store and its stored strategy answers must come from the same
    parameters (apart from where it is served); else reusing them would mix two models.
    """
    known = store.players().get(model.name)
    if known is not None:
        differences = setting_differences(
            {"kind": known.kind, **known.params}, {"kind": model.kind, **model.params}
        )
        if differences:
            raise ValueError(
                f"{store.location} already has a player named {model.name!r} with other "
                f"parameters: {'; '.join(differences)}. Give this model another --name"
            )
    tables.check_sampler(model.name, model.params)


def _without_seed(spec: str) -> str:
    """``spec`` without a ``seed=`` parameter (``nash:seed=7`` -> ``nash``)."""
    name, _, rest = spec.partition(":")
    kept = [item for item in rest.split(",") if item and item.partition("=")[0].strip() != "seed"]
    return f"{name}:{','.join(kept)}" if kept else name


def _builder(entrant: Entrant, env_id: str) -> PlayerBuilder:
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
    tables: GradeTables,
    games: Sequence[StoredGame],
    *,
    every_strategy: bool = False,
    extra: Sequence[MoveGrade] = (),
) -> dict[str, Any]:
    """The grades of ``games`` (moves) and strategies, as JSON data.

    Strategies: every stored one with ``every_strategy`` (no run filter: a model measured at
    its endpoint may have played no stored game), else those of the games' players. ``extra``:
    move grades of games not stored in ``tables`` (a report's in-memory grades).
    """
    grades = [*tables.move_grades(g.id for g in games), *extra]
    players = {(name, g.env_id) for g in games for name in g.players}
    strategies = [
        row
        for row in tables.strategy_grades()
        if every_strategy or (row["player"], row["env_id"]) in players
    ]
    return {"moves": move_summary(grades), "strategies": strategies}
