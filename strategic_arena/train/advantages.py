"""Advantage estimators: the *advantage* stage of a training step.

Each estimator is a pure function of plain numbers -- per-trajectory returns or per-turn
rewards, and a group key per trajectory -- so it can be checked by hand;
:func:`assign` adapts them to scored :class:`~strategic_arena.train.episode.Episode` objects.
Formulas are restated in ``docs/references.md``, "Advantage estimators". Notation: a
trajectory is one learner seat's turns in one episode, with rewards r_t; R = sum_t r_t.

1. :func:`grpo` (trajectory level): A = (R - mean_g R) / (std_g R + eps) over the trajectories
   of the same group g; every turn of a trajectory gets its A.
2. :func:`marshal` (MARSHAL, "sum then normalize"): returns-to-go R_t = sum_{t' >= t} r_{t'}
   (gamma = 1), then A_t = (R_t - mean(S_g)) / (std(S_g) + eps), S_g being every return-to-go
   of every trajectory of the group. Equivalent to GAE with lambda = gamma = 1 and the group's
   mean return-to-go as the value baseline.
3. :func:`mt_grpo` (MT-GRPO, "normalize then sum"): each reward r_t is normalized against the
   rewards at the same turn index t of the group's other trajectories, then the normalized
   rewards are summed to go.
4. :func:`rae` (SPIRAL's role-conditioned advantage estimation): A = R - b[key], then
   b[key] <- alpha * b[key] + (1 - alpha) * R; the baseline persists across steps
   (:class:`RAEBaselines`, saved in checkpoints).

Conventions shared by all of them:

* ``std`` is the population standard deviation (ddof = 0): the spread of the set itself,
  defined for a single value.
* In the normalizing estimators (all but RAE) a group whose values are all equal (a
  singleton group in particular) gets advantage 0 everywhere: nothing in it is better or worse
  than its own baseline. Equality is checked exactly (max == min), so there is no ``0 / eps``
  round-off and never a NaN. RAE has no groups: a key's first return gets ``R - 0``.
* **Grouping** (:func:`assign`): ``role_grouping=True`` keys a trajectory by ``(env_id,
  role)``, ``False`` by ``env_id``, for every estimator alike. ``True`` is MARSHAL's
  agent-specific normalization and SPIRAL's per-(game, role) baseline; the paper's plain GRPO
  baseline (the group being all trajectories of one game) is ``grpo`` with
  ``role_grouping=False``, and ``False`` with ``marshal`` or ``rae`` is the ablation without
  role conditioning.
* Only **eligible** turns (see :mod:`strategic_arena.train.rewards`) form trajectories: a gated
  turn contributes nothing to any return and gets advantage 0.0.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from strategic_arena.train.episode import Episode, Turn

Estimator: TypeAlias = Literal["grpo", "marshal", "mt_grpo", "rae"]

#: Every estimator :func:`assign` knows.
ESTIMATORS: tuple[Estimator, ...] = ("grpo", "marshal", "mt_grpo", "rae")

FloatArray: TypeAlias = npt.NDArray[np.float64]


def _check_groups(num_values: int, groups: Sequence[Hashable]) -> None:
    if num_values != len(groups):
        raise ValueError(f"{num_values} trajectories but {len(groups)} group keys")


def _members(groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Positions of each group's trajectories, groups in order of first appearance."""
    members: dict[Hashable, list[int]] = {}
    for index, key in enumerate(groups):
        members.setdefault(key, []).append(index)
    return members


def normalize(values: npt.ArrayLike, eps: float = 1e-6) -> FloatArray:
    """``(x - mean) / (std + eps)`` with the population std; all zeros if the values are equal.

    Equal values (one value, or none) have no spread to normalize by: returning zeros exactly
    rather than ``0 / eps`` keeps round-off of the mean out of the advantages.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0 or array.max() == array.min():
        return np.zeros_like(array)
    centred: FloatArray = (array - array.mean()) / (array.std() + eps)
    return centred


def returns_to_go(rewards: Sequence[float]) -> FloatArray:
    """R_t = sum_{t' >= t} r_{t'} (undiscounted: gamma = 1)."""
    array = np.asarray(rewards, dtype=np.float64)
    to_go: FloatArray = np.cumsum(array[::-1])[::-1].copy()
    return to_go


def grpo(returns: Sequence[float], groups: Sequence[Hashable], eps: float = 1e-6) -> FloatArray:
    """GRPO at trajectory level: each return normalized within its group.

    Args:
        returns: R of each trajectory (the sum of its turn rewards).
        groups: each trajectory's group key.
        eps: added to the std.

    Returns:
        One advantage per trajectory, in the given order.
    """
    _check_groups(len(returns), groups)
    values = np.asarray(returns, dtype=np.float64)
    advantages = np.zeros_like(values)
    for indices in _members(groups).values():
        advantages[indices] = normalize(values[indices], eps)
    return advantages


def marshal(
    rewards: Sequence[Sequence[float]], groups: Sequence[Hashable], eps: float = 1e-6
) -> list[FloatArray]:
    """MARSHAL's turn-level advantage: returns-to-go, normalized over all of them in the group.

    The set S of a group pools every return-to-go of every trajectory in it, so trajectories of
    different lengths share one baseline (a long trajectory contributes more elements), and the
    advantages of a group are centred: their mean over S is 0.

    Args:
        rewards: per trajectory, the reward of each turn (lengths may differ).
        groups: each trajectory's group key.
        eps: added to the std of S.

    Returns:
        Per trajectory, one advantage per turn.
    """
    _check_groups(len(rewards), groups)
    to_go = [returns_to_go(trajectory) for trajectory in rewards]
    advantages = [np.zeros_like(values) for values in to_go]
    for indices in _members(groups).values():
        pooled = normalize(np.concatenate([to_go[i] for i in indices]), eps)
        start = 0
        for i in indices:
            advantages[i] = pooled[start : start + len(to_go[i])]
            start += len(to_go[i])
    return advantages


def mt_grpo(
    rewards: Sequence[Sequence[float]], groups: Sequence[Hashable], eps: float = 1e-6
) -> list[FloatArray]:
    """MT-GRPO as compared in MARSHAL: normalize turn by turn, then sum to go.

    Exactly: within a group, the rewards at turn index t (0-based, counted per trajectory) of
    every trajectory that has a turn t are normalized together,
    r'_t = (r_t - mean_t) / (std_t + eps); then A_t = sum_{t' >= t} r'_{t'}. A turn index that
    only one trajectory of the group reaches (its tail, when lengths differ) normalizes to 0,
    so it adds nothing to the sums -- the variance MARSHAL points out with variable lengths.

    Args:
        rewards: per trajectory, the reward of each turn (lengths may differ).
        groups: each trajectory's group key.
        eps: added to each turn index's std.

    Returns:
        Per trajectory, one advantage per turn.
    """
    _check_groups(len(rewards), groups)
    values = [np.asarray(trajectory, dtype=np.float64) for trajectory in rewards]
    normalized = [np.zeros_like(trajectory) for trajectory in values]
    for indices in _members(groups).values():
        longest = max(len(values[i]) for i in indices)
        for t in range(longest):
            reaching = [i for i in indices if len(values[i]) > t]
            column = normalize([values[i][t] for i in reaching], eps)
            for i, value in zip(reaching, column, strict=True):
                normalized[i][t] = value
    return [returns_to_go(trajectory.tolist()) for trajectory in normalized]


def _key_to_json(key: Hashable) -> Any:
    """A JSON value for a baseline key: tuples become lists, scalars stay."""
    if isinstance(key, tuple):
        return [_key_to_json(part) for part in key]
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    raise TypeError(
        f"RAE baseline key {key!r} is a {type(key).__name__}; keys must be str, int, float, "
        "bool, None or tuples of them to be saved"
    )


def _key_from_json(value: Any) -> Hashable:
    """Inverse of :func:`_key_to_json` (lists become tuples again)."""
    if isinstance(value, list):
        return tuple(_key_from_json(part) for part in value)
    key: Hashable = value
    return key


class RAEBaselines:
    """SPIRAL's role-conditioned baselines: one exponential moving average of returns per key.

    A key is ``(env_id, role)`` under role grouping. As in SPIRAL's code a baseline starts at
    0 and is read *before* it is updated with the return it baselines:
    ``A = R - b; b <- alpha * b + (1 - alpha) * R``. The state survives checkpoints through
    :meth:`state_dict` / :meth:`load_state_dict`.

    Attributes:
        alpha: the EMA decay (0.95 in SPIRAL): the weight of the old baseline.
    """

    def __init__(self, alpha: float = 0.95) -> None:
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = alpha
        self._baselines: dict[Hashable, float] = {}
        self._updates: dict[Hashable, int] = {}

    def baseline(self, key: Hashable) -> float:
        """The current baseline b[key] (0.0 before its first update)."""
        return self._baselines.get(key, 0.0)

    def updates(self, key: Hashable) -> int:
        """How many returns have updated b[key]."""
        return self._updates.get(key, 0)

    def keys(self) -> list[Hashable]:
        """The keys with a baseline, in order of first update."""
        return list(self._baselines)

    def advantage_and_update(self, key: Hashable, ret: float) -> float:
        """Return ``ret - b[key]`` with the baseline as it was, then fold ``ret`` into it."""
        baseline = self.baseline(key)
        self._baselines[key] = self.alpha * baseline + (1.0 - self.alpha) * float(ret)
        self._updates[key] = self.updates(key) + 1
        return float(ret) - baseline

    def state_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy of the state.

        Keys are stored as the JSON text of the key with tuples as lists (e.g.
        ``'["kuhn_poker-v0", "player 0"]'``), which :meth:`load_state_dict` turns back into the
        same tuple.

        Raises:
            TypeError: a key is not made of str, int, float, bool, None and tuples.
        """
        return {
            "alpha": self.alpha,
            "baselines": {json.dumps(_key_to_json(k)): v for k, v in self._baselines.items()},
            "updates": {json.dumps(_key_to_json(k)): n for k, n in self._updates.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the state by one from :meth:`state_dict` (``alpha`` included: exact resume)."""
        alpha = float(state["alpha"])
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        self.alpha = alpha
        self._baselines = {
            _key_from_json(json.loads(k)): float(v) for k, v in state["baselines"].items()
        }
        self._updates = {
            _key_from_json(json.loads(k)): int(n) for k, n in state.get("updates", {}).items()
        }


def rae(
    returns: Sequence[float], groups: Sequence[Hashable], baselines: RAEBaselines
) -> FloatArray:
    """SPIRAL's RAE: ``A = R - b[key]``, updating ``baselines`` in place.

    Trajectories are processed in the given order, each reading its key's baseline before
    updating it, so a later trajectory of the same key in the same batch sees the earlier ones'
    returns in its baseline (SPIRAL updates per trajectory, not per batch).

    Args:
        returns: R of each trajectory.
        groups: each trajectory's baseline key.
        baselines: the persistent baselines; updated.

    Returns:
        One advantage per trajectory, in the given order.
    """
    _check_groups(len(returns), groups)
    advantages = [
        baselines.advantage_and_update(key, ret) for ret, key in zip(returns, groups, strict=True)
    ]
    return np.array(advantages, dtype=np.float64)


@dataclass
class Trajectory:
    """One learner seat's eligible turns in one episode: the unit every estimator works on.

    Attributes:
        episode: the episode.
        seat: the learner seat.
        key: the group key: ``(env_id, role)`` or ``env_id``.
        turns: the seat's eligible turns, in play order.
    """

    episode: Episode
    seat: int
    key: Hashable
    turns: list[Turn]

    @property
    def rewards(self) -> list[float]:
        """r_t of each turn."""
        return [turn.reward for turn in self.turns]

    @property
    def total_return(self) -> float:
        """R = sum_t r_t."""
        return float(sum(self.rewards))


def trajectories(episodes: Sequence[Episode], *, role_grouping: bool = True) -> list[Trajectory]:
    """One :class:`Trajectory` per (episode, learner seat) with at least one eligible turn.

    Order: episodes as given, then seats in ``learner_seats`` order (the order RAE updates in).

    Raises:
        ValueError: one seat's turns name different roles (the group key would be ambiguous).
    """
    result = []
    for episode in episodes:
        for seat in episode.learner_seats:
            turns = episode.trajectory(seat)
            roles = {turn.role for turn in turns}
            if len(roles) > 1:
                raise ValueError(
                    f"{episode.env_id} seed {episode.seed}: seat {seat} has turns of several "
                    f"roles {sorted(roles)}"
                )
            eligible = [turn for turn in turns if turn.eligible]
            if not eligible:
                continue
            key: Hashable = (episode.env_id, eligible[0].role) if role_grouping else episode.env_id
            result.append(Trajectory(episode, seat, key, eligible))
    return result


def assign(
    episodes: Sequence[Episode],
    method: Estimator,
    *,
    role_grouping: bool = True,
    baselines: RAEBaselines | None = None,
    whiten: bool = False,
    eps: float = 1e-6,
) -> None:
    """Fill ``advantage`` of every turn of scored ``episodes`` with ``method``.

    Trajectories are built from eligible turns (:func:`trajectories`); ineligible turns get 0.0.
    ``grpo`` and ``rae`` give every turn of a trajectory its trajectory's advantage; ``marshal``
    and ``mt_grpo`` give each turn its own. With ``rae`` a trajectory with no eligible turn does
    not update the baselines; zero-advantage turns are kept here (SPIRAL drops them from the
    loss: the learner's choice).

    Args:
        episodes: episodes already scored by :func:`strategic_arena.train.rewards.score`.
        method: the estimator.
        role_grouping: group (and key RAE baselines) by ``(env_id, role)`` instead of
            ``env_id``.
        baselines: the persistent baselines; required for ``rae``, updated in place.
        whiten: after the estimator, normalize all eligible turns' advantages over the batch
            once more (mean 0, std 1; each turn counts once), an option of MARSHAL's repository
            on top of the paper's formula.
        eps: added to every std.

    Raises:
        ValueError: an unknown method, or ``rae`` without ``baselines``.
    """
    if method not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {method!r}; use one of {ESTIMATORS}")
    if method == "rae" and baselines is None:
        raise ValueError("the rae estimator needs its persistent RAEBaselines")
    for episode in episodes:
        for turn in episode.turns:
            turn.advantage = 0.0
    batch = trajectories(episodes, role_grouping=role_grouping)
    if not batch:
        return
    groups = [trajectory.key for trajectory in batch]
    per_turn: list[FloatArray]
    if method == "marshal":
        per_turn = marshal([t.rewards for t in batch], groups, eps)
    elif method == "mt_grpo":
        per_turn = mt_grpo([t.rewards for t in batch], groups, eps)
    else:
        totals = [trajectory.total_return for trajectory in batch]
        if method == "grpo":
            per_trajectory = grpo(totals, groups, eps)
        else:
            assert baselines is not None  # checked above; narrows the type
            per_trajectory = rae(totals, groups, baselines)
        per_turn = [
            np.full(len(t.turns), value, dtype=np.float64)
            for t, value in zip(batch, per_trajectory, strict=True)
        ]
    if whiten:
        flat = normalize(np.concatenate(per_turn), eps)
        bounds = np.cumsum([len(values) for values in per_turn])[:-1]
        per_turn = list(np.split(flat, bounds))
    for trajectory, values in zip(batch, per_turn, strict=True):
        for turn, value in zip(trajectory.turns, values, strict=True):
            turn.advantage = float(value)
