"""Many searches in one compiled call, and MCTS-vs-MCTS games played in lockstep.

:func:`batch_search` gives the same actions as one :func:`opponents.mcts.search` per position;
:func:`play_batch` plays whole games, one batched call per ply, exactly as
:func:`strategic_arena.arena.play_match` would record them for two :class:`MCTSPlayer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from opponents.base import make_rng
from opponents.kernels import connect_four, tic_tac_toe
from opponents.mcts.games import (
    STATE_SIZE,
    TIC_TAC_TOE,
    apply,
    game_code,
    is_terminal,
    state_from_history,
)
from opponents.mcts.player import MCTSConfig, check_seed, draw_seed
from opponents.mcts.tree import reserved_tree, search_batch

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def batch_search(
    env_id: str,
    positions: Sequence[Sequence[int]] | IntArray,
    seeds: Sequence[int] | IntArray,
    config: MCTSConfig | None = None,
) -> IntArray:
    """The actions of one search per position, all in one compiled call.

    Args:
        env_id: the game.
        positions: OpenSpiel action histories, or kernel states stacked as an int64 array of
            shape ``(N, STATE_SIZE)`` (rows of :func:`state_from_history`); none terminal.
        seeds: one 32-bit seed per position.
        config: search parameters (defaults: :class:`MCTSConfig`).

    Returns:
        ``int64[N]``: the same actions as ``search(env_id, history, config, seed).action``
        position by position.
    """
    config = config if config is not None else MCTSConfig()
    game = game_code(env_id)
    if isinstance(positions, np.ndarray):
        states = np.ascontiguousarray(positions, dtype=np.int64).reshape(-1, STATE_SIZE)
    else:
        states = np.zeros((len(positions), STATE_SIZE), dtype=np.int64)
        for row, history in enumerate(positions):
            states[row] = state_from_history(env_id, history)
    seed_array = np.array([check_seed(int(seed)) for seed in seeds], dtype=np.int64)
    if seed_array.shape[0] != states.shape[0]:
        raise ValueError(f"{states.shape[0]} positions but {seed_array.shape[0]} seeds")
    for row in range(states.shape[0]):
        if is_terminal(game, states[row]):
            raise ValueError(f"position {row} is terminal")
    actions, _ = search_batch(
        game,
        states,
        seed_array,
        config.simulations,
        float(config.uct_c),
        config.rollouts,
        config.solve,
        *reserved_tree(config.simulations),
    )
    return actions


@dataclass(frozen=True)
class BatchResult:
    """Games played by :func:`play_batch`.

    Attributes:
        returns: ``float64[N, 2]``, the returns of seat 0 and seat 1 in each game.
        histories: each game's action history (OpenSpiel ids).
        simulations: simulations run over all searches.
    """

    returns: FloatArray
    histories: list[tuple[int, ...]]
    simulations: int


def play_batch(
    env_id: str,
    config0: MCTSConfig,
    config1: MCTSConfig,
    seeds: Sequence[tuple[int, int]] | IntArray,
) -> BatchResult:
    """Play one game per seed pair, MCTS(``config0``) in seat 0 against MCTS(``config1``).

    All games move in lockstep (both games alternate, so every game has the same player to
    move at a given ply): one compiled :func:`batch_search` call per ply over the games still
    running. Game ``g`` is the game that ``play_match`` records for
    ``[MCTSPlayer(env_id, seed=seeds[g][0], ...config0), MCTSPlayer(env_id,
    seed=seeds[g][1], ...config1)]``: each seat draws its per-move search seeds from its own
    generator, exactly as :class:`MCTSPlayer` does.
    """
    game = game_code(env_id)
    configs = (config0, config1)
    pairs = [(int(pair[0]), int(pair[1])) for pair in seeds]
    rngs = [(make_rng(first), make_rng(second)) for first, second in pairs]
    count = len(pairs)
    kernel = tic_tac_toe if game == TIC_TAC_TOE else connect_four
    states = np.zeros((count, STATE_SIZE), dtype=np.int64)
    for row in range(count):
        states[row] = kernel.new_state()
    histories: list[list[int]] = [[] for _ in range(count)]
    active = np.arange(count)
    simulations = 0
    ply = 0
    while active.size:
        seat = ply % 2
        config = configs[seat]
        ply_seeds = np.array([draw_seed(rngs[g][seat]) for g in active], dtype=np.int64)
        actions, runs = search_batch(
            game,
            states[active],
            ply_seeds,
            config.simulations,
            float(config.uct_c),
            config.rollouts,
            config.solve,
            *reserved_tree(config.simulations),
        )
        simulations += int(runs.sum())
        still = []
        for g, move in zip(active, actions, strict=True):
            apply(game, states[g], int(move))
            histories[g].append(int(move))
            if not is_terminal(game, states[g]):
                still.append(g)
        active = np.array(still, dtype=np.int64)
        ply += 1
    returns = np.array([kernel.returns(states[g]) for g in range(count)], dtype=np.float64)
    return BatchResult(
        returns=returns.reshape(count, 2),
        histories=[tuple(h) for h in histories],
        simulations=simulations,
    )
