"""Advantage estimators: the *advantage* stage of a training step, as a registry.

Each estimator is one module holding a pure function of plain numbers (checkable by hand), a
config dataclass tagged by ``type``, and an :class:`~.base.Estimator` that applies the function
to scored trajectories. The config file names one of them (a union tagged by ``type``)::

    advantage: {type: marshal, role_grouping: true, centering: mean_std, lam: 1.0}
    advantage: {type: in2ai}
    advantage: {type: rae, alpha: 0.95}

=========  ================================================================================
name       estimator
=========  ================================================================================
grpo       trajectory-level GRPO (:mod:`.grpo`)
in2ai      each step's reward against the other steps of its game, In2AI's RLOO (:mod:`.in2ai`)
marshal    MARSHAL's turn-level "sum then normalize", with GAE's lambda/gamma (:mod:`.marshal`)
mt_grpo    MT-GRPO, "normalize then sum" (:mod:`.mt_grpo`)
ppo        PPO's GAE over a learned value head, MAPoRL's (:mod:`.ppo`)
rae        SPIRAL's role-conditioned EMA baselines, stateful (:mod:`.rae`)
rloo       returns-to-go against a leave-one-out baseline per game and role (:mod:`.rloo`)
=========  ================================================================================

**Adding an estimator** is one module and a test:

1. write ``strategic_arena/train/algo/estimators/<name>.py`` with a config dataclass subclassing
   :class:`~.base.EstimatorConfig` with the tag field ``type: Literal["<name>"] = "<name>"``
   and its own settings (field docstrings are the ``--help``; override ``problems()`` to
   check values),
   and an :class:`~.base.Estimator` subclass with ``config_class`` set and ``advantages()``
   implemented (plus ``state_dict``/``load_state_dict`` if it keeps state across steps: the
   trainer checkpoints whatever they return);
2. decorate the estimator class with ``@register`` and add the module's name to
   :data:`~.base._MODULES` (so that it is imported);
3. test it against hand-computed values (``tests/train/test_estimators.py``).

The config loader, ``--set advantage.type=<name>``, validation and checkpoints then take it
with no other change.
"""

from __future__ import annotations

from collections.abc import Sequence

from strategic_arena.rl.episode import Episode
from strategic_arena.train.algo.estimators.base import (
    Estimator,
    EstimatorConfig,
    FloatArray,
    Trajectory,
    names,
    normalize,
    register,
    registered,
    returns_to_go,
    trajectories,
)

__all__ = [
    "Estimator",
    "EstimatorConfig",
    "FloatArray",
    "Trajectory",
    "assign",
    "build",
    "names",
    "normalize",
    "register",
    "registered",
    "returns_to_go",
    "trajectories",
]


def build(config: EstimatorConfig) -> Estimator:
    """A fresh estimator for ``config`` (its state, if any, starts empty)."""
    return registered(config.name)(config)


def assign(episodes: Sequence[Episode], estimator: Estimator | EstimatorConfig) -> None:
    """Fill ``advantage`` of every turn of scored ``episodes`` (ineligible turns get 0.0).

    A config builds a fresh estimator (fine for stateless ones; pass the trainer's estimator
    object to keep RAE's baselines across calls).
    """
    if isinstance(estimator, EstimatorConfig):
        estimator = build(estimator)
    estimator.assign(episodes)
