"""The trainer's configuration: typed sections, loaded from YAML, overridden from the command line.

:class:`TrainConfig` is one section per concern -- ``run``, ``model``, ``precision``, ``lora``,
``games``, ``answer``, ``sampling``, ``rollout``, ``vllm``, ``rewards``, ``advantage``,
``bank``, ``ppo``, ``correction``, ``eval``, ``placement`` -- and each section is the
interface of the modules that read it (the learner takes ``ppo`` and ``correction``, not the
whole config). Each field's docstring is its ``--help`` text and its line in the docs
(:func:`describe_fields`).

* :mod:`.sections`: the trainer's own sections, each checking its values (``problems()``);
  the others are owned by the modules they configure (``rewards``:
  :class:`~strategic_arena.rl.rewards.RewardConfig`; ``advantage``: an estimator's config;
  ``bank``: :class:`~strategic_arena.train.algo.bank.BankConfig`; ``answer`` and ``sampling``:
  :class:`~strategic_arena.asking.Asking` and :class:`~strategic_arena.asking.Sampling`).
* :mod:`.checks`: the rules that span sections, one named check each.
* :mod:`.loading`: YAML files (``extends``), ``--set section.key=value``, pydantic.
* :mod:`.legacy`: the flat keys of before the sections, each moved to its section with a
  warning naming the new key.
* :mod:`.describe`: the help text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strategic_arena._lazy import lazy_attribute

if TYPE_CHECKING:  # the names for type checkers; at run time, __getattr__ below
    from strategic_arena.train.config.checks import CHECKS, validate
    from strategic_arena.train.config.describe import describe_fields
    from strategic_arena.train.config.legacy import FLAT_KEYS
    from strategic_arena.train.config.loading import (
        apply_override,
        from_dict,
        load_config,
        read_config_file,
    )
    from strategic_arena.train.config.schema import TRAINING_SAMPLING, TrainConfig
    from strategic_arena.train.config.sections import (
        CorrectionConfig,
        EvalConfig,
        GamesConfig,
        LoraConfig,
        ModelConfig,
        OpponentConfig,
        PlacementConfig,
        PPOConfig,
        PrecisionConfig,
        RolloutConfig,
        RunConfig,
        VllmConfig,
    )

#: Each public name -> its module, imported on first use: the learner reads its sections
#: (:mod:`.sections`) where pydantic, which loading a config needs, may be missing.
_HOMES: dict[str, str] = {
    "CHECKS": "checks",
    "CorrectionConfig": "sections",
    "EvalConfig": "sections",
    "FLAT_KEYS": "legacy",
    "GamesConfig": "sections",
    "LoraConfig": "sections",
    "ModelConfig": "sections",
    "OpponentConfig": "sections",
    "PPOConfig": "sections",
    "PlacementConfig": "sections",
    "PrecisionConfig": "sections",
    "RolloutConfig": "sections",
    "RunConfig": "sections",
    "TRAINING_SAMPLING": "schema",
    "TrainConfig": "schema",
    "VllmConfig": "sections",
    "apply_override": "loading",
    "describe_fields": "describe",
    "from_dict": "loading",
    "load_config": "loading",
    "read_config_file": "loading",
    "validate": "checks",
}

__all__ = [
    "CHECKS",
    "FLAT_KEYS",
    "TRAINING_SAMPLING",
    "CorrectionConfig",
    "EvalConfig",
    "GamesConfig",
    "LoraConfig",
    "ModelConfig",
    "OpponentConfig",
    "PPOConfig",
    "PlacementConfig",
    "PrecisionConfig",
    "RolloutConfig",
    "RunConfig",
    "TrainConfig",
    "VllmConfig",
    "apply_override",
    "describe_fields",
    "from_dict",
    "load_config",
    "read_config_file",
    "validate",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    return lazy_attribute(__name__, _HOMES, globals(), name)
