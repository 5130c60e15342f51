"""What every advantage estimator shares: trajectories, centring, the config and the interface.

Notation: a *trajectory* is one learner seat's eligible turns in one episode, with rewards r_t
and return R = sum_t r_t; its *group key* is ``(env_id, role)`` under role grouping (MARSHAL's
agent-specific normalization, SPIRAL's per-(game, role) baseline, In2AI's per-environment
baseline split by role) or ``env_id`` alone.

Conventions every estimator follows:

* ``std`` is the population standard deviation (ddof = 0): the spread of the set itself,
  defined for a single value.
* A group whose values are all equal (a singleton group in particular) gets advantage 0
  everywhere: nothing in it is better or worse than its own baseline. Equality is checked
  exactly (max == min), so there is no ``0 / eps`` round-off and never a NaN.
* Only **eligible** turns (:mod:`strategic_arena.rl.rewards`) form trajectories: a gated turn
  contributes nothing to any return and gets advantage 0.0.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from strategic_arena.rl.episode import Episode, Turn

FloatArray: TypeAlias = npt.NDArray[np.float64]

#: How a group's values are centred: ``mean_std`` (x - mean) / (std + eps), GRPO's and
#: MARSHAL's; ``mean`` x - mean (no division: Dr. GRPO, and MARSHAL's "GAE with the group mean
#: as baseline" taken literally).
Centering: TypeAlias = Literal["mean_std", "mean"]


@dataclass
class EstimatorConfig:
    """Settings every estimator has (each estimator's config adds its own and a ``type`` tag)."""

    role_grouping: bool = True
    """Group (or key baselines) by (game, role) instead of by game."""
    whiten: bool = False
    """After the estimator, normalize all eligible turns' advantages of the batch once more
    (mean 0, std 1; an option of MARSHAL's repository on top of the paper's formula)."""
    eps: float = 1e-6
    """Added to every standard deviation."""

    @property
    def name(self) -> str:
        """The registry name (the ``type`` tag of the subclass)."""
        return str(getattr(self, "type", ""))

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        return ["advantage.eps must be >= 0"] if self.eps < 0 else []

    @classmethod
    def variant(cls, name: object) -> type[EstimatorConfig]:
        """The config class registered under ``name`` (the tagged union's dispatch)."""
        return registered(name).config_class


@dataclass(frozen=True)
class CriticSettings:
    """What an estimator with a critic asks of the learner's value head.

    Attributes:
        coef: weight of the value loss next to the policy loss.
        clip: clip range of the value prediction (``None``: no clipping).
        lr: the value head's learning rate (``None``: the policy's).
    """

    coef: float
    clip: float | None
    lr: float | None


@dataclass
class CenteredConfig(EstimatorConfig):
    """Settings of the estimators that centre a group's values (grpo, marshal, mt_grpo)."""

    centering: Centering = "mean_std"
    """``mean_std``: (x - mean) / (std + eps) over the group; ``mean``: x - mean only."""


#: name -> estimator class; filled by :func:`register`, read through :func:`registered`.
_REGISTRY: dict[str, type[Estimator]] = {}


def register(estimator: type[Estimator]) -> type[Estimator]:
    """Class decorator: file ``estimator`` under its config's ``type`` tag."""
    name = estimator.config_class().name
    if not name:
        raise ValueError(f"{estimator.config_class.__name__} has no type tag")
    _REGISTRY[name] = estimator
    return estimator


#: The modules of the built-in estimators, imported on first use of the registry (each registers
#: itself with ``@register``; imported by name, so this module imports none of them).
_MODULES = ("grpo", "in2ai", "marshal", "mt_grpo", "ppo", "rae", "rloo")


def _load() -> None:
    """Import the built-in estimator modules (each registers itself with ``@register``)."""
    for module_name in _MODULES:
        importlib.import_module(f"{__package__}.{module_name}")


def names() -> tuple[str, ...]:
    """Every registered estimator name."""
    _load()
    return tuple(sorted(_REGISTRY))


def registered(name: object) -> type[Estimator]:
    """The estimator class registered as ``name``.

    Raises:
        ValueError: no estimator has that name.
    """
    _load()
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(
            f"unknown advantage estimator {name!r}; use one of {', '.join(sorted(_REGISTRY))}"
        )
    return _REGISTRY[name]


def check_groups(num_values: int, groups: Sequence[Hashable]) -> None:
    """Raise ``ValueError`` unless there is one group key per value."""
    if num_values != len(groups):
        raise ValueError(f"{num_values} trajectories but {len(groups)} group keys")


def members(groups: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Positions of each group's members, groups in order of first appearance."""
    positions: dict[Hashable, list[int]] = {}
    for index, key in enumerate(groups):
        positions.setdefault(key, []).append(index)
    return positions


def normalize(
    values: npt.ArrayLike, eps: float = 1e-6, centering: Centering = "mean_std"
) -> FloatArray:
    """``(x - mean) / (std + eps)`` (or ``x - mean``); all zeros if the values are equal.

    Equal values (one value, or none) have no spread: returning zeros exactly rather than
    ``0 / eps`` keeps round-off of the mean out of the advantages.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0 or array.max() == array.min():
        return np.zeros_like(array)
    centred: FloatArray = array - array.mean()
    if centering == "mean_std":
        centred = centred / (array.std() + eps)
    return centred


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> FloatArray:
    """G_t = sum_{t' >= t} gamma^(t' - t) r_{t'} (MARSHAL: gamma = 1)."""
    array = np.asarray(rewards, dtype=np.float64)
    if gamma == 1.0:
        to_go: FloatArray = np.cumsum(array[::-1])[::-1].copy()
        return to_go
    to_go = np.zeros_like(array)
    running = 0.0
    for t in range(len(array) - 1, -1, -1):
        running = float(array[t]) + gamma * running
        to_go[t] = running
    return to_go


def split_like(flat: FloatArray, parts: Sequence[FloatArray]) -> list[FloatArray]:
    """``flat`` cut into pieces as long as ``parts``."""
    bounds = np.cumsum([len(part) for part in parts])[:-1]
    return list(np.split(flat, bounds))


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


def per_turn(batch: Sequence[Trajectory], per_trajectory: FloatArray) -> list[FloatArray]:
    """Every turn of a trajectory gets its trajectory's advantage."""
    return [
        np.full(len(t.turns), value, dtype=np.float64)
        for t, value in zip(batch, per_trajectory, strict=True)
    ]


class Estimator(abc.ABC):
    """An advantage estimator: a config in, one advantage per eligible turn out.

    Subclasses set :attr:`config_class` (their config dataclass, whose ``type`` field is the
    registry name) and implement :meth:`advantages`; a stateful estimator (RAE) also overrides
    :meth:`state_dict` and :meth:`load_state_dict`, which the trainer's checkpoints carry.
    """

    config_class: ClassVar[type[EstimatorConfig]]
    #: Whether the estimator reads ``Turn.value`` (a value head's estimates, which the trainer
    #: then fills in before the advantage stage) and sets ``Turn.value_target``.
    needs_critic: ClassVar[bool] = False
    """Whether the estimator reads a critic's value of every turn (``Turn.value``): the loop
    then asks the learner for them before :meth:`assign`, and gives the learner a value head
    with the settings of :meth:`critic`."""

    def critic(self) -> CriticSettings | None:
        """The value head's settings when :attr:`needs_critic` (else ``None``)."""
        return None

    def __init__(self, config: EstimatorConfig) -> None:
        self.config = config

    @abc.abstractmethod
    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Per trajectory of ``batch`` (in order), one advantage per turn."""

    def state_dict(self) -> dict[str, Any]:
        """State that must survive a checkpoint (none for a stateless estimator)."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` (a stateless estimator has nothing to restore)."""
        del state

    def assign(self, episodes: Sequence[Episode]) -> None:
        """Fill ``advantage`` of every turn of scored ``episodes`` (ineligible turns get 0.0)."""
        for episode in episodes:
            for turn in episode.turns:
                turn.advantage = 0.0
        batch = trajectories(episodes, role_grouping=self.config.role_grouping)
        if not batch:
            return
        values = self.advantages(batch)
        if self.config.whiten:
            values = split_like(normalize(np.concatenate(values), self.config.eps), values)
        for trajectory, advantages in zip(batch, values, strict=True):
            for turn, value in zip(trajectory.turns, advantages, strict=True):
                turn.advantage = float(value)
