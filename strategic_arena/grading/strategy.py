"""Measure a player's poker strategy at every information set and its exploitability.

The player (any :class:`~strategic_arena.turn.Player`: a model through ``LLMPlayer`` with
the arena's prompts, or a built-in opponent) is asked ``K`` times at one state of each
information set of Kuhn poker (12) or Leduc Hold'em (936, as OpenSpiel counts them). The
answers' frequencies are its behavioural policy, an OpenSpiel ``TabularPolicy``; OpenSpiel's
``exploitability`` (NashConv / 2) of that policy is the grade, with a basic bootstrap
interval over the K answers of each information set.

An invalid answer (no legal move after the run's retries) counts as the run's illegal-move
policy would play it: ``random`` -- uniform over the legal actions; ``forfeit`` and ``retry:k``
-- the most passive action (fold when facing a bet, else check: the lowest legal action id),
the game action closest to giving up the hand.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyspiel
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import exploitability as openspiel_exploitability

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS
from strategic_arena.games import get_spec
from strategic_arena.grading import strategy_envs
from strategic_arena.seeding import derive_seed
from strategic_arena.turn import GameState, IllegalMovePolicy, Player, final_answer_invalid

FloatArray = npt.NDArray[np.float64]
#: Bootstrap resamples of the exploitability interval.
BOOTSTRAP = 200


@dataclass(frozen=True)
class InfoSet:
    """One information set: its OpenSpiel string, the seat to act and a state in it."""

    name: str
    seat: int
    state: pyspiel.State


@functools.cache
def info_sets(env_id: str) -> tuple[InfoSet, ...]:
    """Every information set of a poker env, each with one state that reaches it.

    A depth-first walk of OpenSpiel's game tree (chance outcomes included); the first state
    met of each information state string represents it (the player sees only that string).
    """
    graded = strategy_envs()
    if env_id not in graded:
        raise ValueError(f"no strategy grading for {env_id}; games: {', '.join(graded)}")
    found: dict[str, InfoSet] = {}

    def visit(state: pyspiel.State) -> None:
        if state.is_terminal():
            return
        if not state.is_chance_node():
            seat = int(state.current_player())
            name = str(state.information_state_string(seat))
            found.setdefault(name, InfoSet(name, seat, state.clone()))
        for action in state.legal_actions():
            visit(state.child(action))

    visit(get_spec(env_id).game.new_initial_state())
    return tuple(found.values())


async def query(
    build: Callable[[int], Player],
    env_id: str,
    todo: list[tuple[InfoSet, int]],
    *,
    seed: int,
    concurrency: int,
    on_answer: Callable[[InfoSet, int, int | None, str | None], None],
) -> int:
    """Ask a player at each ``(information set, sample number)`` of ``todo``.

    An answer is invalid when the player's *final* answer was not a legal move (a move that
    came after the run's re-asks is valid; the ``random`` policy's substitute is not). A query
    the endpoint failed (an infrastructure error, after the backend's retries) is no answer: it
    is not passed to ``on_answer``, so it is not stored and a rerun asks it again.

    Args:
        build: makes the player for one query from a seed.
        seed: with the game, the information set and the sample number, derives each
            query's seed (a resumed query asks the player the interrupted one would have).
        env_id: the game.
        todo: the queries still to make.
        concurrency: queries in flight at once.
        on_answer: called with the information set, the sample number, the legal action
            answered (``None`` when invalid) and the error kind.
    """
    spec = get_spec(env_id)
    gate = asyncio.Semaphore(concurrency)

    async def ask(info: InfoSet, sample: int) -> None:
        async with gate:
            player = build(derive_seed(seed, env_id, info.name, sample))
            decision = await player.act(GameState(env_id, info.state.clone(), spec), info.seat)
            error = decision.error
            if error is not None and error.kind in INFRASTRUCTURE_ERROR_KINDS:
                failed.append(info.name)
                return
            legal = decision.action in info.state.legal_actions(info.seat)
            invalid = not legal or final_answer_invalid(decision.attempts, decision.errors)
            action = None if invalid else decision.action
            kind = None if not invalid else (error.kind if error is not None else "illegal")
            on_answer(info, sample, action, kind)

    failed: list[str] = []
    await asyncio.gather(*(ask(info, sample) for info, sample in todo))
    return len(failed)


def count_matrix(
    env_id: str,
    samples: Mapping[tuple[str, int], int | None],
    k: int,
    policy: str,
) -> tuple[openspiel_policy.TabularPolicy, FloatArray]:
    """The answers as a 3-d array ``[info set row, sample, action]`` of weights.

    Returns:
        The game's ``TabularPolicy`` (its rows numbered as OpenSpiel does) and the one-hot
        weights of each of the ``k`` answers per row (an invalid answer spread as the run's
        illegal-move policy plays it).

    Raises:
        ValueError: an information set lacks one of the ``k`` answers.
    """
    rule = IllegalMovePolicy.parse(policy)
    tabular = openspiel_policy.TabularPolicy(get_spec(env_id).game)
    mask = np.asarray(tabular.legal_actions_mask, dtype=np.int64)
    weights = np.zeros((*mask.shape[:1], k, mask.shape[1]))
    for info in info_sets(env_id):
        row = tabular.state_lookup[info.name]
        legal = np.flatnonzero(mask[row])
        for sample in range(k):
            if (info.name, sample) not in samples:
                raise ValueError(f"{env_id}: no sample {sample} at {info.name!r}")
            action = samples[(info.name, sample)]
            if action is not None:
                weights[row, sample, action] = 1.0
            elif rule.kind == "random":
                weights[row, sample, legal] = 1.0 / len(legal)
            else:
                weights[row, sample, legal[0]] = 1.0
    return tabular, weights


def grade_strategy(
    env_id: str,
    samples: Mapping[tuple[str, int], int | None],
    k: int,
    policy: str,
    seed: int,
) -> dict[str, float | int | list[float]]:
    """Exploitability and best-response values of the policy the samples describe.

    Args:
        env_id: ``kuhn_poker-v0`` or ``leduc_holdem-v0``.
        samples: (info state, sample number) -> action answered (``None``: invalid).
        k: samples per information set (numbers ``0..k-1`` are used).
        policy: the run's illegal-move policy (how invalid answers count).
        seed: seed of the bootstrap resampling.

    Returns:
        ``exploitability`` (OpenSpiel's, chips per hand), ``ci95`` (its basic bootstrap
        95% interval, :func:`_basic_interval`), ``best_response`` (chips per hand a best
        response earns against the player in seat 0 and in seat 1), ``distance`` (the mean
        total-variation distance from the shipped equilibrium over information sets),
        ``invalid`` (share of invalid answers), ``samples`` (K) and ``info_sets``.
    """
    from opponents import cfr
    from opponents.equilibrium import equilibrium_policy

    tabular, weights = count_matrix(env_id, samples, k, policy)
    measured = _with(tabular, weights.mean(axis=1))
    game = get_spec(env_id).game
    # best_response(..., p) is player p's best value against the policy in the other seat.
    values = [
        float(openspiel_exploitability.best_response(game, measured, p)["best_response_value"])
        for p in (0, 1)
    ]
    exploitability = float(openspiel_exploitability.exploitability(game, measured))
    rng = np.random.default_rng(seed)
    rows = weights.shape[0]
    replicates = []
    for _ in range(BOOTSTRAP):
        # Resample the K answers of every information set independently, with replacement.
        picks = rng.integers(k, size=(rows, k))
        resampled = np.take_along_axis(weights, picks[:, :, None], axis=1).mean(axis=1)
        # The numba evaluator computes OpenSpiel's exploitability (tests check they agree).
        replicates.append(cfr.exploitability(env_id, _with(tabular, resampled)))
    equilibrium = equilibrium_policy(env_id).action_probability_array
    names = [info.name for info in info_sets(env_id)]
    rows_used = [tabular.state_lookup[name] for name in names]
    difference = np.abs(measured.action_probability_array - equilibrium)[rows_used]
    invalid = sum(action is None for action in samples.values()) / max(len(samples), 1)
    return {
        "exploitability": exploitability,
        "ci95": _basic_interval(exploitability, replicates),
        "best_response": [values[1], values[0]],
        "distance": float(0.5 * difference.sum(axis=1).mean()),
        "invalid": float(invalid),
        "samples": k,
        "info_sets": len(names),
    }


def _basic_interval(estimate: float, replicates: list[float]) -> list[float]:
    """The basic (reverse-percentile) bootstrap 95% interval, clipped at 0.

    ``[2 e - q97.5, 2 e - q2.5]``: resampling the answers adds sampling noise, and noise makes
    a strategy more exploitable, so the replicates sit above the estimate by about as much as
    the estimate sits above the strategy's true exploitability; reflecting them corrects that
    first-order bias. The interval is for the strategy's own exploitability, so with few
    answers it may lie below the estimate; a plain percentile interval lies above it.
    """
    low, high = np.percentile(replicates, [2.5, 97.5])
    return [max(0.0, float(2 * estimate - high)), max(0.0, float(2 * estimate - low))]


def _with(
    tabular: openspiel_policy.TabularPolicy, probabilities: FloatArray
) -> openspiel_policy.TabularPolicy:
    """A copy of ``tabular`` (sharing its lookup tables) holding ``probabilities``."""
    result = tabular.__copy__(copy_action_probability_array=False)
    result.action_probability_array = probabilities
    return result


def measured_policy(
    env_id: str, samples: Mapping[tuple[str, int], int | None], k: int, policy: str
) -> openspiel_policy.TabularPolicy:
    """The behavioural policy of the samples (as :func:`grade_strategy` measures it)."""
    tabular, weights = count_matrix(env_id, samples, k, policy)
    return _with(tabular, weights.mean(axis=1))
