"""The training config: one frozen dataclass of sections, one section per concern.

``TrainConfig`` only composes the sections (:mod:`.sections`, and the ones other modules own:
rewards, advantage, bank, answer, sampling); :func:`~.checks.validate` checks them together
(every section's own problems, then the named cross-section rules of :mod:`.checks`).
Loading, overrides and old flat keys are :mod:`.loading`'s job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, PlainValidator

from strategic_arena.asking import Asking, Sampling, settings_to_dict
from strategic_arena.rl.rewards import RewardConfig
from strategic_arena.train.algo.bank import BankConfig
from strategic_arena.train.algo.estimators import EstimatorConfig
from strategic_arena.train.algo.estimators.marshal import MarshalConfig
from strategic_arena.train.config import sections
from strategic_arena.train.config.estimator import estimator_config
from strategic_arena.train.config.maporl import MaporlConfig
from strategic_arena.train.config.policies import PolicyConfig
from strategic_arena.train.config.transfer import TransferConfig

#: The training run's sampling when the config says nothing (a section given in part keeps
#: these for the keys it leaves out): the policy's own distribution, 256 new tokens.
TRAINING_SAMPLING = Sampling(temperature=1.0, top_p=1.0, top_k=0, max_tokens=256)


def _over_training_sampling(value: Any) -> Any:
    """A partial ``sampling`` mapping on top of :data:`TRAINING_SAMPLING` (not of ``None``)."""
    if isinstance(value, Mapping):
        return {**settings_to_dict(TRAINING_SAMPLING), **value}
    return value


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run, one section per concern.

    The defaults are a small self-play run on Kuhn Poker.
    """

    __pydantic_config__ = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    run: sections.RunConfig = field(default_factory=sections.RunConfig)
    """The run: name, output folder, seed, steps, resumption, metrics and checkpoints."""
    model: sections.ModelConfig = field(default_factory=sections.ModelConfig)
    """The policy model and how it is loaded."""
    precision: sections.PrecisionConfig = field(default_factory=sections.PrecisionConfig)
    """Dtypes of the master weights, the learner's arithmetic and the rollout server."""
    lora: sections.LoraConfig = field(default_factory=sections.LoraConfig)
    """LoRA adapters (rank 0: every weight trains)."""
    games: sections.GamesConfig = field(default_factory=sections.GamesConfig)
    """Training games, episodes per step, the opponent pool and self-play snapshots."""
    answer: Asking = field(default_factory=Asking)
    """How the policy is asked for a move (style, strictness, history, prompt set, prefill,
    chat template); the same in training, in evaluation and in the settings a checkpoint
    records."""
    sampling: Annotated[Sampling, BeforeValidator(_over_training_sampling)] = field(
        default_factory=lambda: TRAINING_SAMPLING
    )
    """How the policy samples in training (temperature, top_p, top_k, max_tokens, stop;
    defaults 1.0, 1.0, 0, 256, none); the learner's log-probs use the same temperature."""
    rollout: sections.RolloutConfig = field(default_factory=sections.RolloutConfig)
    """The generation engine, sequence budgets, batching and asynchronous rollouts."""
    vllm: sections.VllmConfig = field(default_factory=sections.VllmConfig)
    """vLLM servers (rollout.engine: vllm): started or external, and how weights reach them."""
    rewards: RewardConfig = field(default_factory=RewardConfig)
    """Per-turn rewards: game_scale, format_reward, invalid_penalty, draw_reward,
    length_alpha, length_min, length_max, gate_unobserved, forfeit_other_reward."""
    advantage: Annotated[EstimatorConfig, PlainValidator(estimator_config)] = field(
        default_factory=MarshalConfig
    )
    """Advantage estimator: a mapping tagged by ``type`` (grpo, in2ai, marshal, mt_grpo, ppo,
    rae, rloo) with that estimator's own settings, e.g. ``{type: rloo, level: turn}``
    (docs/training.md);
    from the command line ``--set advantage.type=rae`` or ``--set advantage.lam=0.95``."""
    bank: BankConfig | None = None
    """Episode bank (In2AI's, docs/training.md "The episode bank"): ``null`` trains each step on
    that step's games; a mapping, e.g. ``{batch_unit: turns, batch_size: 256, strata: 3}``,
    puts the games into a bank and draws each step's batch from it, balanced across games,
    reward strata and episodes. From the command line ``--set bank.batch_size=64``."""
    ppo: sections.PPOConfig = field(default_factory=sections.PPOConfig)
    """The learner: optimizer, schedule, minibatches and the clipped loss."""
    correction: sections.CorrectionConfig = field(default_factory=sections.CorrectionConfig)
    """Off-policy (importance) correction between the engine's sampling and the learner."""
    eval: sections.EvalConfig = field(default_factory=sections.EvalConfig)
    """The trainer's own evaluation against fixed opponents."""
    placement: sections.PlacementConfig = field(default_factory=sections.PlacementConfig)
    """GPU placement, distribution timeouts and the memory check (docs/training.md,
    "Placement")."""
    transfer: TransferConfig | None = None
    """Reasoning benchmarks at checkpoints (docs/transfer.md): ``null`` runs none; a mapping,
    e.g. ``{paper: spiral, benchmarks: [math500, aime24], data_dir: data/transfer}``, runs them
    before the first step, every ``every`` steps and after the last, through the engine."""
    policies: list[PolicyConfig] = field(default_factory=list)
    """Several policies trained together, each in its own seats (MAPoRL's co-training,
    docs/maporl.md): a list of mappings with keys name, seats, model, lora_rank, advantage,
    lr. Empty: one policy in every seat."""
    maporl: MaporlConfig | None = None
    """MAPoRL's rewards for debate games (docs/maporl.md): ``null`` leaves them to the
    rewards section; a mapping, e.g. ``{verifier: exact, form: influence, incentives:
    baseline}``, scores every answer with a verifier, a reward form and the incentives."""

    @property
    def corrects_behaviour(self) -> bool:
        """Whether the importance correction is on (``correction.mode`` resolved)."""
        if self.correction.mode == "auto":
            off_policy = self.rollout.engine == "vllm" or self.rollout.max_staleness > 0
            return off_policy and self.ppo.old_logprobs != "engine"
        return self.correction.mode == "always"

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (YAML/JSON-ready; tuples become lists)."""
        data = dataclasses.asdict(self)
        data["sampling"] = settings_to_dict(self.sampling)
        return data
