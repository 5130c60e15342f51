"""Several policies trained together, each in its own seats (MAPoRL's independent multi-agent PPO).

A config with a ``policies`` list (:mod:`strategic_arena.train.config.policies`) trains one
:class:`~strategic_arena.train.loop.trainer.Trainer` per policy -- its own model (a LoRA adapter on
the shared base, or its own base), learner, optimizer, estimator (PPO with a value head, or a
critic-free one) and checkpoints under ``run.output_dir/policies/<name>`` -- and plays their
games together. One :meth:`CoTrainer.train_step`:

1. *generate*: the step's self-play games (:func:`~strategic_arena.train.loop.rollout.plan_games`),
   every seat played by the policy that owns it, through that policy's engine
   (:class:`~strategic_arena.train.loop.rollout.SeatPolicy`);
2. *score*: the run's rewards on every turn of every game (the game's, or a reward
   definition such as MAPoRL's influence-aware one, which reads the other seats' turns);
3. per policy, *advantage* and *update* on :func:`policy_view` of the games -- the same
   episodes with only that policy's seats and turns -- so each policy learns only from its own
   turns, then *sync* its weights into its engine.

Serving (``rollout.engine: vllm``): policies on the shared base with LoRA adapters
(``lora.rank`` or their ``lora_rank`` > 0, no ``model`` of their own) are adapters of one
server started with ``--enable-lora`` (:mod:`strategic_arena.train.engines.vllm_lora`; each sync
loads the policy's new adapter in place); otherwise each policy's trainer starts its own server and
syncs its full weights into it. With the transformers engine each policy generates with its
own module.

Not supported with several policies (the config check says so): asynchronous rollouts, an
episode bank, an opponent pool or snapshots, the trainer's solver evaluation, sleep mode and
external servers.

**Ctrl-C** stops as the single trainer does (:mod:`strategic_arena.train.loop.interrupt`): the first
drops a step whose games are still being played, or lets the step finish (every policy
updated and synced), then saves every policy's checkpoint of the last completed step; a second
aborts at once. Policies are saved only together, at one step: a second Ctrl-C during the
policies' updates (some updated, some not) saves nothing, and each policy's last checkpoint
stays what a rerun resumes from. The closing summary names each policy's last checkpoint
(:func:`strategic_arena.train.loop.console.policy_checkpoints`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from strategic_arena.rl.episode import Episode
from strategic_arena.train.config import TrainConfig, validate
from strategic_arena.train.config.policies import PolicyConfig, policy_output_dir
from strategic_arena.train.dist import DistInfo
from strategic_arena.train.engines.engine import Engine
from strategic_arena.train.loop.interrupt import StopRequest
from strategic_arena.train.loop.metrics import MetricsLogger, rollout_metrics
from strategic_arena.train.loop.rollout import (
    OpponentPool,
    PoolEntry,
    RolloutRunner,
    SeatPolicy,
    plan_games,
)
from strategic_arena.train.loop.trainer import Trainer
from strategic_arena.turn import Player

log = logging.getLogger("strategic_arena.train")


def policy_config(cfg: TrainConfig, policy: PolicyConfig) -> TrainConfig:
    """The single-policy config of one co-trained policy (its model, LoRA, estimator, lr).

    Its run writes under ``run.output_dir/policies/<name>`` (checkpoints, its own metrics);
    everything else is the run's.
    """
    model = cfg.model
    if policy.model is not None:
        model = dataclasses.replace(model, name=os.path.expanduser(policy.model))
    lora = (
        cfg.lora
        if policy.lora_rank is None
        else dataclasses.replace(cfg.lora, rank=policy.lora_rank)
    )
    ppo = cfg.ppo if policy.lr is None else dataclasses.replace(cfg.ppo, lr=policy.lr)
    run = dataclasses.replace(
        cfg.run,
        name=f"{cfg.run.name}/{policy.name}",
        output_dir=str(policy_output_dir(cfg.run.output_dir, policy.name)),
        tensorboard=False,
    )
    advantage = cfg.advantage if policy.advantage is None else policy.advantage
    return dataclasses.replace(
        cfg, model=model, lora=lora, ppo=ppo, run=run, advantage=advantage, policies=[]
    )


def policy_view(episode: Episode, seats: Sequence[int]) -> Episode:
    """``episode`` as one policy sees it: its seats and their turns (the same turn objects).

    An estimator filling in the view's advantages fills in the episode's: each policy's
    advantages come from its own seats' trajectories alone.
    """
    mine = set(seats)
    return dataclasses.replace(
        episode,
        learner_seats=tuple(seat for seat in episode.learner_seats if seat in mine),
        turns=[turn for turn in episode.turns if turn.seat in mine],
    )


def shares_lora_server(cfg: TrainConfig) -> bool:
    """Whether the policies are adapters of one vLLM server (shared base, LoRA everywhere)."""
    return cfg.rollout.engine == "vllm" and all(
        policy.model is None
        and (cfg.lora.rank if policy.lora_rank is None else policy.lora_rank) > 0
        for policy in cfg.policies
    )


class CoTrainer:
    """Co-training of ``cfg.policies``; see the module docstring.

    Args:
        cfg: the run's config, with its ``policies`` (one or more).
        engines: per policy name, an engine to use instead of the configured one (tests).
    """

    def __init__(self, cfg: TrainConfig, *, engines: Mapping[str, Engine] | None = None) -> None:
        validate(cfg)
        if not cfg.policies:
            raise ValueError("co-training needs a policies section (one policy: use Trainer)")
        self.cfg = cfg
        self.output_dir = Path(cfg.run.output_dir)
        self.trainers: dict[str, Trainer] = {}
        self._shared: Engine | None = None
        engines = dict(engines or {})
        try:
            if not engines and shares_lora_server(cfg):
                from strategic_arena.train.loop.lora_server import adapter_engines

                self._shared, adapters = adapter_engines(cfg, self.output_dir)
                engines.update(adapters)
            for policy in cfg.policies:
                trainer = Trainer(policy_config(cfg, policy), engine=engines.get(policy.name))
                self.trainers[policy.name] = trainer
        except BaseException:
            self.close()
            raise
        steps = {name: trainer.step for name, trainer in self.trainers.items()}
        if len(set(steps.values())) > 1:
            self.close()
            raise ValueError(f"the policies' checkpoints are at different steps: {steps}")
        self.step = next(iter(steps.values()))
        self.seats = {seat: policy.name for policy in cfg.policies for seat in policy.seats}
        seat_policies = {
            seat: SeatPolicy(name, self.trainers[name].client, self.trainers[name].encoder)
            for seat, name in self.seats.items()
        }
        first = next(iter(self.trainers.values()))
        self.runner = RolloutRunner(
            cfg, first.client, first.encoder, _no_opponents, seat_policies=seat_policies
        )
        self.pool = OpponentPool.from_config(cfg.games)  # self-play only (the config check)
        self.metrics = MetricsLogger(self.output_dir, tensorboard=cfg.run.tensorboard)
        self.metrics.truncate_after(self.step)
        self.last_episodes: list[Episode] = []
        self._stop = StopRequest()  # Ctrl-C (see the module docstring)
        self._stage = "idle"  # "generate", "update" (any policy's weights may move) or "idle"

    def generate(self, step: int) -> list[Episode]:
        """Stage 1: the step's games, each seat played by its policy."""
        plans = plan_games(self.cfg.games, self.cfg.run.seed, self.pool, step)
        with contextlib.ExitStack() as stack:
            for trainer in self.trainers.values():
                stack.enter_context(trainer.learner.compute())
            return asyncio.run(self.runner.play(plans, step))

    def train_step(self) -> dict[str, float]:
        """Generate, score, then per policy advantage, update and sync; returns the metrics."""
        step = self.step
        self._stage = "generate"
        episodes = self.generate(step)
        self._stage = "update"
        first = next(iter(self.trainers.values()))  # the score stage is the run's, not a policy's
        metrics: dict[str, float] = dict(first.score(episodes))
        for policy in self.cfg.policies:
            trainer = self.trainers[policy.name]
            view = [policy_view(episode, policy.seats) for episode in episodes]
            trainer.advantage(view)
            own = {**rollout_metrics(view), **trainer.update(view, step)}
            trainer.sync(step + 1)
            trainer.step = step + 1
            metrics.update({f"{policy.name}/{key}": value for key, value in own.items()})
        metrics.update(rollout_metrics(episodes))
        metrics["train/dropped_games"] = float(self.runner.dropped)
        self.step = step + 1
        self._stage = "idle"
        self.last_episodes = episodes
        return metrics

    def save_checkpoint(self) -> None:
        """Every policy's checkpoint of the current step (each in its own folder)."""
        for trainer in self.trainers.values():
            trainer.save_checkpoint()

    def train(self, *, on_step: Callable[[int, dict[str, float]], None] | None = None) -> int:
        """Train until ``run.steps``; returns the number of completed steps.

        Ctrl-C stops as the module docstring says.
        """
        cfg = self.cfg
        saved = self.step
        with self._stop.handling_ctrl_c(lambda: self._stage == "generate"):
            try:
                while self.step < cfg.run.steps and not self._stop.requested:
                    metrics = self.train_step()
                    if self.step % cfg.run.log_every == 0 or self.step == cfg.run.steps:
                        self.metrics.log(self.step, metrics)
                        reward = metrics.get("train/reward", 0.0)
                        log.info("step %d: reward=%.4g", self.step, reward)
                    if on_step is not None:
                        on_step(self.step, metrics)
                    if cfg.run.checkpoint_every and self.step % cfg.run.checkpoint_every == 0:
                        self.save_checkpoint()
                        saved = self.step
            except KeyboardInterrupt:
                self._stop.requested = True
                if self._stage == "update":  # some policies updated, maybe none whole
                    log.warning(
                        "aborted while the policies were updated to step %d: nothing saved "
                        "(their last checkpoints stay what a rerun resumes from)",
                        self.step + 1,
                    )
                    saved = self.step
                else:
                    log.warning("interrupted during %s: saving step %d", self._stage, self.step)
            if self.step != saved:
                self.save_checkpoint()
        self.metrics.close()
        return self.step

    @property
    def info(self) -> DistInfo:
        """The process's place (one process: co-training does not run under torchrun)."""
        return DistInfo(0, 1)

    def close(self, *, wait: bool = True) -> None:
        """Close every policy's trainer, then the shared server (idempotent)."""
        for trainer in self.trainers.values():
            trainer.close(wait=wait)
        self.trainers = {}
        if self._shared is not None:
            shared, self._shared = self._shared, None
            shared.close()

    def __enter__(self) -> CoTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _no_opponents(entry: PoolEntry, env_id: str, seat: int, seed: int) -> Player:
    """Co-training is self-play: no game has an opponent (the config check refuses a pool)."""
    raise RuntimeError("co-training games have no opponents")


def train(cfg: TrainConfig) -> int:
    """Co-train ``cfg.policies``; returns the completed steps (servers stopped at the end)."""
    with CoTrainer(cfg) as cotrainer:
        return cotrainer.train()
