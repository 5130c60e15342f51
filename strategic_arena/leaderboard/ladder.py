"""The baseline ladder: the built-in solvers and bots played against each other on every game.

The ladder is the reference point of every published leaderboard: where random play, MCTS at
four budgets, perfect play and the equilibrium policies stand on each game. It is one
:func:`strategic_arena.arena.runner.round_robin` per env over :data:`BASELINE` (each entrant
plays the envs its opponent kind supports), played by :func:`strategic_arena.arena.runner.run`
into a results store under the run name :data:`RUN_NAME`. Everything is seeded from one run
seed, so rerunning the command replays the same games on any machine: the Connect Four
``solver`` gets a budget of negamax nodes per move (``max_nodes``), not seconds.

Game counts (:data:`NUM_GAMES`) are per pair of entrants, split evenly over both seatings;
they are chosen so the tiers separate while the whole ladder runs in about ten minutes on one
core (see ``docs/leaderboards.md`` for the measured time).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from strategic_arena.arena.runner import Entrant, GameTask, RunSummary, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.games.tables import DerivedTable

#: The run name of the ladder in its results store.
RUN_NAME = "baseline-ladder"

#: The baseline entrants, as opponent specs (their names on the leaderboard).
BASELINE: tuple[str, ...] = (
    "random",
    "mcts:simulations=10",
    "mcts:simulations=100",
    "mcts:simulations=1000",
    "mcts:simulations=10000",
    "minimax",
    "solver:max_nodes=2000000,fallback_simulations=10000",
    "cfr:iterations=10",
    "cfr:iterations=100",
    "nash",
    "hanabi_bot",
)

#: Games per pair of entrants in each env (both seatings together): each spec's
#: ``listing.ladder_games``. Poker needs many hands: one hand's chips vary far more than a board
#: game's result. Connect Four is fewer because the solver spends up to its budget on each
#: early move. A game whose listing says ``None`` is not in the ladder (nothing on it but
#: ``random`` would play: the Hanabi games with more than two players).
NUM_GAMES: Mapping[str, int] = DerivedTable(lambda spec: spec.listing.ladder_games)


def entrants(specs: Sequence[str] = BASELINE) -> list[Entrant]:
    """The ladder's entrants from opponent specs."""
    return [Entrant.opponent(spec) for spec in specs]


def tasks(
    seed: int,
    *,
    env_ids: Sequence[str] | None = None,
    num_games: int | Mapping[str, int] | None = None,
    specs: Sequence[str] = BASELINE,
) -> list[GameTask]:
    """Every game of the ladder: a round robin per env.

    Args:
        seed: the run seed (env and player seeds derive from it).
        env_ids: envs to play (default: every curated env with a ladder count).
        num_games: games per pair, one count for every env or a count per env (default
            :data:`NUM_GAMES`).
        specs: the entrants (default :data:`BASELINE`).
    """
    players = entrants(specs)
    all_tasks: list[GameTask] = []
    for env_id in env_ids or list(NUM_GAMES):
        if isinstance(num_games, int):
            count = num_games
        else:
            count = (num_games or NUM_GAMES).get(env_id, NUM_GAMES.get(env_id, 100))
        all_tasks += round_robin(players, [env_id], count, seed)
    return all_tasks


def settings(
    seed: int,
    env_ids: Sequence[str],
    num_games: Mapping[str, int],
    specs: Sequence[str],
    command: str,
) -> dict[str, Any]:
    """The run settings stored with the ladder (and published): enough to rerun it."""
    return {
        "kind": "baseline-ladder",
        "command": command,
        "entrants": list(specs),
        "envs": list(env_ids),
        "num_games": dict(num_games),
        "seed": seed,
    }


def play(
    store: ResultsStore,
    seed: int,
    *,
    env_ids: Sequence[str] | None = None,
    num_games: int | Mapping[str, int] | None = None,
    specs: Sequence[str] = BASELINE,
    command: str = "",
    run_name: str = RUN_NAME,
    progress: bool = True,
) -> RunSummary:
    """Play (or resume) the ladder into ``store``.

    Raises:
        ValueError: the store already holds run ``run_name`` with other settings or seed (a
            different ladder must go to another database or run name).
    """
    envs = list(env_ids or NUM_GAMES)
    counts = {
        env_id: num_games
        if isinstance(num_games, int)
        else (num_games or NUM_GAMES).get(env_id, NUM_GAMES.get(env_id, 100))
        for env_id in envs
    }
    wanted = settings(seed, envs, counts, specs, command)
    for existing in store.runs():
        if existing.name != run_name:
            continue
        ours = {key: value for key, value in wanted.items() if key != "command"}
        theirs = {key: value for key, value in existing.settings.items() if key != "command"}
        if ours != theirs or existing.seed != seed:
            raise ValueError(
                f"{store.location} already holds run {run_name!r} with other settings; "
                "use another --db (or delete it) to play a different ladder"
            )
    games = tasks(seed, env_ids=envs, num_games=counts, specs=specs)
    return run(store, run_name, games, seed=seed, concurrency=1, settings=wanted, progress=progress)
