"""Equilibrium opponents for Kuhn poker and Leduc Hold'em: shipped policies and CFR on the fly.

``opponents/policies/`` ships one policy per game as ``<openspiel game>.npz``: Kuhn poker's
closed-form equilibrium (``alpha = 1/6``, :mod:`opponents.kuhn_nash`) and a CFR+ solution of
Leduc Hold'em (:mod:`opponents.cfr`). :func:`regenerate_policies` rebuilds them (the
``strategic-arena solve`` command). A file holds ``info_states`` (OpenSpiel information state
strings, bytes), ``probabilities`` (one row of action probabilities per string), and
``game``, ``method``, ``iterations`` and ``exploitability`` as metadata.

Players: :class:`PolicyPlayer` samples a tabular policy at the information state of its seat
(and reads nothing else of the state); :func:`nash_player` plays the shipped policy,
:func:`cfr_player` a policy solved on the fly (cached per game, iterations and algorithm).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyspiel
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import exploitability as openspiel_exploitability

from opponents import cfr
from opponents.base import SolverPlayer, make_rng
from opponents.kuhn_nash import kuhn_equilibrium
from strategic_arena.turn import GameState

FloatArray = npt.NDArray[np.float64]

#: Where the shipped policies live (package data).
POLICY_DIR = Path(__file__).resolve().parent / "policies"
#: The env ids with an equilibrium policy, and their OpenSpiel games.
POLICY_ENVS: dict[str, str] = dict(cfr.ENV_GAMES)


def _env_game(env_id: str) -> str:
    """The OpenSpiel game of a poker env id (game names are accepted too)."""
    if env_id in POLICY_ENVS:
        return POLICY_ENVS[env_id]
    if env_id in POLICY_ENVS.values():
        return env_id
    raise ValueError(f"no equilibrium policy for {env_id}; games: {', '.join(POLICY_ENVS)}")


def policy_path(env_id: str, directory: str | Path | None = None) -> Path:
    """The policy file of ``env_id`` in ``directory`` (default: the shipped folder)."""
    return Path(directory or POLICY_DIR) / f"{_env_game(env_id)}.npz"


def save_policy(
    path: str | Path,
    game: str,
    policy: openspiel_policy.TabularPolicy,
    *,
    method: str,
    iterations: int,
    exploitability: float,
) -> None:
    """Write ``policy`` of OpenSpiel game ``game`` as a compressed ``.npz`` file."""
    names = sorted(policy.state_lookup, key=policy.state_lookup.__getitem__)
    np.savez_compressed(
        path,
        info_states=np.asarray([name.encode() for name in names], dtype=np.bytes_),
        probabilities=np.asarray(policy.action_probability_array, dtype=np.float64),
        game=np.asarray(game),
        method=np.asarray(method),
        iterations=np.asarray(iterations, dtype=np.int64),
        exploitability=np.asarray(exploitability, dtype=np.float64),
    )


def load_policy(path: str | Path) -> openspiel_policy.TabularPolicy:
    """Read a policy written by :func:`save_policy` into a ``TabularPolicy`` of its game.

    Raises:
        ValueError: the file does not cover exactly the game's information states.
    """
    with np.load(path, allow_pickle=False) as data:
        game = str(data["game"])
        names = [bytes(name).decode() for name in data["info_states"]]
        probabilities = np.asarray(data["probabilities"], dtype=np.float64)
    tabular = openspiel_policy.TabularPolicy(pyspiel.load_game(game))
    if set(names) != set(tabular.state_lookup) or len(names) != len(tabular.state_lookup):
        raise ValueError(f"{path}: its information states are not those of {game}")
    rows = np.asarray([tabular.state_lookup[name] for name in names], dtype=np.int64)
    tabular.action_probability_array[rows] = probabilities
    return tabular


@functools.cache
def equilibrium_policy(env_id: str) -> openspiel_policy.TabularPolicy:
    """The shipped equilibrium policy of a poker env (both seats; shared, do not modify).

    Kuhn poker: the closed-form equilibrium with ``alpha = 1/6`` (exploitability 0 up to
    rounding). Leduc Hold'em: a CFR+ average policy (exploitability about 2e-7).
    """
    return load_policy(policy_path(env_id))


@functools.lru_cache(maxsize=32)
def cfr_policy(
    env_id: str, iterations: int, algorithm: str = "cfr+"
) -> openspiel_policy.TabularPolicy:
    """The average policy after ``iterations`` of ``algorithm`` (cached; do not modify)."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    return cfr.solve(_env_game(env_id), iterations, algorithm)


def regenerate_policies(
    out_dir: str | Path | None = None,
    iterations: int = 1_000_000,
    target_exploitability: float = 2e-7,
    algorithm: str = "cfr+",
    kuhn_alpha: float = 1.0 / 6.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """Rebuild the equilibrium policy files and measure them.

    Kuhn poker gets the closed-form equilibrium with ``kuhn_alpha``; Leduc Hold'em is solved
    with ``algorithm`` until its exploitability (checked every 1,000 iterations) is at most
    ``target_exploitability`` or ``iterations`` are done.

    Args:
        out_dir: destination folder (created if missing; default: the shipped folder).
        iterations: the most CFR iterations for Leduc Hold'em.
        target_exploitability: stop Leduc Hold'em's solver once this is reached.
        algorithm: ``"cfr+"``, ``"dcfr"``, ``"cfr"`` or ``"pcfr+"``.
        kuhn_alpha: player 0's parameter of the Kuhn equilibrium, in ``[0, 1/3]``.
        progress: called with a line of text per game written.

    Returns:
        Env id -> exploitability of the written policy, read back from its file and measured
        by OpenSpiel's ``exploitability``.
    """
    directory = Path(out_dir or POLICY_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    results: dict[str, float] = {}
    for env_id, game in POLICY_ENVS.items():
        if game == "kuhn_poker":
            policy = kuhn_equilibrium(kuhn_alpha)
            method, done = f"closed form, alpha={kuhn_alpha:.12g}", 0
        else:
            solver = cfr.CFRSolver(game, algorithm)
            solver.solve(iterations, target_exploitability, check_every=1000)
            policy = solver.average_policy()
            method, done = algorithm, solver.iteration
        measured = float(openspiel_exploitability.exploitability(pyspiel.load_game(game), policy))
        path = policy_path(env_id, directory)
        save_policy(path, game, policy, method=method, iterations=done, exploitability=measured)
        results[env_id] = float(
            openspiel_exploitability.exploitability(pyspiel.load_game(game), load_policy(path))
        )
        if progress is not None:
            progress(
                f"{env_id}: {method}, {done} iterations, exploitability {results[env_id]:.3g}"
                f" -> {path}"
            )
    equilibrium_policy.cache_clear()
    return results


class PolicyPlayer(SolverPlayer):
    """Plays a tabular policy: samples the row of its seat's information state string.

    Reads only ``state.information_state(seat)``, so it never sees the opponent's cards.

    Args:
        env_id: the game it plays.
        policy: an OpenSpiel ``TabularPolicy`` of that game (both seats).
        seed: seed or generator of its own sampling.
        name: the player's name.
    """

    def __init__(
        self,
        env_id: str,
        policy: openspiel_policy.TabularPolicy,
        seed: int | np.random.Generator | None = None,
        name: str = "policy",
    ) -> None:
        super().__init__(env_id, name)
        self.policy = policy
        self.rng = make_rng(seed)

    def action_probabilities(self, info_state: str) -> FloatArray:
        """The policy's probabilities over all action ids at ``info_state``.

        Raises:
            ValueError: ``info_state`` is not an information state of the policy's game.
        """
        row = self.policy.state_lookup.get(info_state)
        if row is None:
            raise ValueError(f"{self.name}: unknown information state {info_state!r}")
        probabilities: FloatArray = self.policy.action_probability_array[row]
        return probabilities

    def choose(self, state: GameState, seat: int) -> int:
        """An action sampled from the policy at ``seat``'s information state."""
        cumulative = np.cumsum(self.action_probabilities(state.information_state(seat)))
        draw = self.rng.random() * cumulative[-1]
        return int(np.searchsorted(cumulative, draw, side="right"))


def nash_player(
    env_id: str, seed: int | np.random.Generator | None = None, name: str = "nash"
) -> PolicyPlayer:
    """A player of the shipped equilibrium policy (``nash`` opponent spec)."""
    return PolicyPlayer(env_id, equilibrium_policy(env_id), seed=seed, name=name)


def cfr_player(
    env_id: str,
    iterations: int = 1000,
    seed: int | np.random.Generator | None = None,
    algorithm: str = "cfr+",
    name: str | None = None,
) -> PolicyPlayer:
    """A player of the average policy after ``iterations`` of CFR+, DCFR or PCFR+ (``cfr`` spec).

    Args:
        env_id: ``kuhn_poker-v0`` or ``leduc_holdem-v0``.
        iterations: solver iterations (the policy is cached per game, iterations, algorithm).
        seed: seed or generator of the player's sampling.
        algorithm: ``"cfr+"``, ``"dcfr"``, ``"cfr"`` or ``"pcfr+"``.
        name: the player's name (default ``cfr:iterations=N``).
    """
    if algorithm not in cfr.ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(cfr.ALGORITHMS)}")
    policy = cfr_policy(env_id, iterations, algorithm)
    label = name or f"cfr:iterations={iterations}"
    return PolicyPlayer(env_id, policy, seed=seed, name=label)
