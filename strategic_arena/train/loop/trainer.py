"""The training loop: generate -> score -> advantage -> update -> sync, then log, evaluate, save.

The :class:`Trainer` composes what the packages beside the loop build -- the policy and its
learner (:func:`~strategic_arena.train.policy.build.build_policy`), the rollout engine
(:func:`~strategic_arena.train.engines.build.build_engine`), the estimator and the episode bank
(:mod:`strategic_arena.train.algo`) -- and :meth:`Trainer.train_step` runs the five stages, each
a method that returns what it makes: :meth:`~Trainer.generate` the games (reached through
:meth:`~Trainer.collect`, the batch source: this step's games, or with ``max_staleness: k >= 1``
a worker's rounds played ahead, :class:`.async_rollouts.AsyncRounds`), :meth:`~Trainer.score`
the rewards, :meth:`~Trainer.advantage` the estimator's advantages (a critic's values first when
it ``needs_critic``; with an episode bank on a balanced batch, :meth:`~Trainer.bank_batch`),
:meth:`~Trainer.update` PPO's epochs inside the one GPU hand-off from the engine
(:func:`~strategic_arena.train.engines.colocation.learner_turn`), :meth:`~Trainer.sync` the new
weights into the engine. :mod:`.schedule` runs the steps (evaluations, logging, checkpoints,
Ctrl-C). Everything random in step ``s`` derives from ``(seed, s)``, so a resumed synchronous
run repeats an uninterrupted one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from strategic_arena._extras import require
from strategic_arena.rl.definitions import score
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.seeding import derive_seed
from strategic_arena.train.algo.bank import Batch, EpisodeBank, fill_and_draw
from strategic_arena.train.algo.collapse import CollapseDetector, signal_metrics
from strategic_arena.train.algo.estimators import build as build_estimator
from strategic_arena.train.algo.subsample import trainable_turns
from strategic_arena.train.config import TrainConfig, validate
from strategic_arena.train.dist import all_gather_objects, barrier, broadcast_object, shutdown
from strategic_arena.train.engines.build import build_engine
from strategic_arena.train.engines.colocation import colocated_memory, learner_turn
from strategic_arena.train.engines.engine import BatchSampling, Engine, EngineClient
from strategic_arena.train.engines.placement import Workload, World, check_machine, join_ranks
from strategic_arena.train.loop import step_metrics
from strategic_arena.train.loop.async_rollouts import AsyncRounds
from strategic_arena.train.loop.checkpointing import restore, resume_path, write_checkpoint
from strategic_arena.train.loop.console import eval_table
from strategic_arena.train.loop.evaluation import Evaluation, evaluate_policy
from strategic_arena.train.loop.interrupt import StopRequest
from strategic_arena.train.loop.maporl import DebateScorer
from strategic_arena.train.loop.metrics import MetricsLogger, rollout_metrics
from strategic_arena.train.loop.opponent_players import OpponentPlayers, add_snapshot
from strategic_arena.train.loop.rollout import (
    GamePlan,
    OpponentPool,
    PromptEncoder,
    RolloutRunner,
    plan_games,
)
from strategic_arena.train.loop.schedule import OnStep, run_steps
from strategic_arena.train.policy.build import build_policy
from strategic_arena.train.policy.models import load_tokenizer

log = logging.getLogger("strategic_arena.train")


class Trainer:
    """Self-play PPO on text games; see the module docstring.

    Args:
        cfg: the run's config (validated).
        engine: an engine to use instead of building the configured one (tests, co-training).
    """

    def __init__(self, cfg: TrainConfig, *, engine: Engine | None = None) -> None:
        validate(cfg)
        self.cfg = cfg
        if cfg.model.torch_threads > 0:
            require("torch", "training").set_num_threads(cfg.model.torch_threads)
        self.output_dir = Path(cfg.run.output_dir)
        self._closed = False
        self.worker: AsyncRounds | None = None  # the asynchronous loop's (collect makes it)
        workload = Workload(cfg.model, cfg.precision, cfg.rollout, cfg.vllm, cfg.placement, cfg.ppo)
        use_cuda, self.memory_estimate = check_machine(workload, World.from_env())
        self.gpu, self.info = join_ranks(cfg.placement, cfg.rollout, use_cuda)
        try:
            self._build(engine)
        except BaseException:
            self.close(wait=False)
            raise

    def _build(self, engine: Engine | None) -> None:
        """The policy, the engine, then everything that uses them (a failure here tears down)."""
        cfg = self.cfg
        resume_from = broadcast_object(resume_path(cfg), self.info)  # every rank agrees
        weights_dir = resume_from / "policy" if resume_from is not None else None
        self.tokenizer = load_tokenizer(cfg.model, cfg.games, cfg.answer, weights_dir)
        sections = (cfg.model, cfg.precision, cfg.lora, cfg.ppo, cfg.correction, cfg.sampling)
        self.policy = build_policy(
            *sections,
            cfg.run,
            self.tokenizer,
            world=self.info,
            gpu=self.gpu,
            weights_dir=weights_dir,
        )
        self.learner, self.device = self.policy.learner, self.policy.device
        self.sampling = BatchSampling.of(cfg.sampling)
        self.colocated = colocated_memory(cfg.placement, self.device, self.memory_estimate)
        wake = self.colocated.check_wake if self.colocated is not None else None
        self.engine = engine or build_engine(
            cfg.rollout, cfg.vllm, cfg.placement, self.policy, self.info, self.output_dir, wake
        )
        batch_size = cfg.rollout.max_batch_size
        self.client = EngineClient(self.engine, self.sampling, max_batch_size=batch_size)
        self.encoder = PromptEncoder(self.tokenizer, cfg.answer)
        self.pool = OpponentPool.from_config(cfg.games)
        self.estimator = build_estimator(cfg.advantage)
        critic = self.estimator.critic()
        if critic is not None:  # the estimator reads a critic (PPO's): a value head
            self.learner.attach_value_head(coef=critic.coef, clip=critic.clip, lr=critic.lr)
        seed = derive_seed(cfg.run.seed, "bank")
        self.bank = EpisodeBank(cfg.bank, seed) if cfg.bank is not None else None
        self.debate_scorer = DebateScorer(cfg.maporl) if cfg.maporl is not None else None
        self.step, self.saved_step = 0, -1
        main, tensorboard = self.info.main, cfg.run.tensorboard
        self.metrics = MetricsLogger(self.output_dir, tensorboard=tensorboard, enabled=main)
        self.opponents = OpponentPlayers(cfg, self.tokenizer, self.device)
        self.rollouts = RolloutRunner(cfg, self.client, self.encoder, self.opponents)
        self.stop = StopRequest()  # Ctrl-C (strategic_arena.train.loop.interrupt)
        self.last_episodes: list[Episode] = []
        self.last_evaluation: Evaluation | None = None
        self.collapse = CollapseDetector()  # names steps without learning signal
        if resume_from is not None:
            self._load(resume_from)
        self.sync()

    def _plans(self, step: int, round_: int = 0) -> list[GamePlan]:
        """The games of step ``step``; ``round_`` > 0: a further round of them (the bank's)."""
        return plan_games(self.cfg.games, self.cfg.run.seed, self.pool, step, round_=round_)

    def generate(self, step: int, round_: int = 0) -> list[Episode]:
        """Stage 1: the step's games (``round_`` > 0: a further round, for the bank).

        Each rank plays its share; every rank gets all episodes.
        """
        self.engine.wake_up()
        plans = self._plans(step, round_)
        mine = [plan for plan in plans if plan.index % self.info.world_size == self.info.rank]
        with self.learner.compute():  # an in-process engine samples in the compute dtype
            played = asyncio.run(self.rollouts.play_indexed(mine, step))
        if not self.info.distributed:
            return [episode for _, episode in played]
        indexed = all_gather_objects(played, self.info)
        return [episode for _, episode in sorted(pair for part in indexed for pair in part)]

    def collect(self, step: int) -> tuple[list[Episode], dict[str, float]]:
        """The batch source: the games step ``step`` trains on, and the metrics of getting them.

        ``max_staleness: 0``: the step's own games, played now (:meth:`generate`); ``k >= 1``:
        round ``step`` of the asynchronous rounds (started on the first call).
        """
        if self.cfg.rollout.max_staleness == 0:
            episodes = self.generate(step)
            return episodes, {"train/dropped_games": float(self.rollouts.dropped)}
        if self.worker is None:
            staleness, last = self.cfg.rollout.max_staleness, self.cfg.run.steps - 1
            self.worker = AsyncRounds(
                self.rollouts,
                self._plans,
                max_staleness=staleness,
                last_round=last,
                context=self.learner.compute,
                first_round=step,
            )
            self.worker.submit(self.step)
        return self.worker.take(step)

    def score(self, episodes: list[Episode]) -> dict[str, float]:
        """Stage 2: rewards and eligibility of every turn; returns the stage's metrics.

        With a ``maporl`` section, debate games are then rescored by MAPoRL's rewards
        (:mod:`strategic_arena.train.loop.maporl`); their ``debate/`` metrics join the step's.
        """
        score(episodes, self.cfg.rewards)
        return self.debate_scorer.score(episodes) if self.debate_scorer is not None else {}

    def bank_batch(self, episodes: list[Episode], step: int) -> tuple[list[Episode], Batch]:
        """Bank the step's scored games, play more rounds until it is full, draw the batch.

        Returns every game played this step (the rollout metrics describe them) and the batch
        drawn from the bank (stages 3 and 4 train on it): :func:`fill_and_draw`.
        """
        assert self.bank is not None and self.cfg.bank is not None

        def play(round_: int) -> tuple[list[Episode], int]:
            more = self.generate(step, round_=round_)
            dropped = self.rollouts.dropped
            self.score(more)
            return more, dropped

        dropped, main = self.rollouts.dropped, self.info.main
        return fill_and_draw(
            self.bank, self.cfg.bank, episodes, step, play, dropped=dropped, warn=main
        )

    def advantage(self, episodes: list[Episode]) -> list[Episode]:
        """Stage 3: advantages with the configured estimator; returns ``episodes``, assigned.

        An estimator that declares ``needs_critic`` (``ppo``) first gets the value head's
        estimate of every trainable turn (``Turn.value``).
        """
        if self.estimator.needs_critic:
            turns = [t for e in episodes for t in e.turns if t.eligible and t.response_ids]
            with self.learner.compute():
                values = self.learner.values(turns)
            for turn, value in zip(turns, values, strict=True):
                turn.value = value
        self.estimator.assign(episodes)
        return episodes

    def trainable_turns(self, episodes: list[Episode], step: int | None = None) -> list[Turn]:
        """The turns step ``step`` (default: the current one) trains on: :func:`trainable_turns`."""
        ppo, step = self.cfg.ppo, self.step if step is None else step
        limit, drop_zero = ppo.turns_per_step, ppo.drop_zero_advantage
        return trainable_turns(episodes, limit, self.cfg.run.seed, step, drop_zero=drop_zero)

    def update(self, episodes: list[Episode], step: int) -> dict[str, float]:
        """Stage 4: PPO epochs on the step's trainable turns; returns the update's metrics."""
        cfg = self.cfg
        turns = self.trainable_turns(episodes, step)
        rng = np.random.default_rng(derive_seed(cfg.run.seed, step, "minibatches"))
        matches = self.engine.logprobs_match_learner(self.sampling)
        use_learner = cfg.ppo.old_logprobs == "learner" or (
            cfg.ppo.old_logprobs == "auto" and (cfg.corrects_behaviour or not matches)
        )
        optimizers = [self.learner.optimizer]
        sleep_level = cfg.placement.vllm_sleep_level
        with learner_turn(
            self.engine, self.colocated, optimizers, self.device, self.info, sleep_level=sleep_level
        ):
            old = self.learner.recompute_logprobs(turns) if use_learner else None
            metrics = self.learner.update(
                turns, rng, old_logprobs=old, correct_behaviour=cfg.corrects_behaviour
            )
        metrics.update(step_metrics.sync_check(old, turns, step))
        metrics["train/trainable_turns"] = float(len(turns))
        metrics.update(signal_metrics([t.advantage for t in turns], [t.reward for t in turns]))
        if self.info.main:
            step_metrics.warn_out_of_sync(metrics.get("train/logprob_ratio", 1.0), matches)
        return metrics

    def sync(self, version: int | None = None) -> int:
        """Stage 5: the engine receives the learner's weights, tagged ``version``; returns it.

        Default: the current step (version ``s`` holds ``s`` updates; every turn records the
        version that generated it). The engine takes them as it does (:meth:`Engine.receive`).
        """
        version = self.step if version is None else version
        self.engine.receive(self.learner, version)
        self.engine.wake_up()
        return version

    @contextmanager
    def _stage(self, name: str, timings: dict[str, float]) -> Iterator[None]:
        """Time stage ``name`` into ``timings`` and tell the Ctrl-C handler where the loop is."""
        begin = time.perf_counter()
        with self.stop.during(name):
            yield
        timings[f"time/{name}"] = time.perf_counter() - begin

    def train_step(self) -> dict[str, float]:
        """One step of the five stages; returns its metrics (``self.step`` advances by one)."""
        step, started = self.step, time.perf_counter()
        timings: dict[str, float] = {}
        with self._stage("generate", timings):  # the learner waits for its games
            episodes, source_metrics = self.collect(step)
        with self._stage("score", timings):
            score_metrics = self.score(episodes)
        batch, trained = None, episodes
        if self.bank is not None:
            with self._stage("bank", timings):  # over-collection rounds included
                episodes, batch = self.bank_batch(episodes, step)
                trained = batch.episodes
        with self._stage("advantage", timings):
            trained = self.advantage(trained)
        summary = rollout_metrics(episodes)  # the games as scored, before the bank's cut
        if batch is not None:  # advantages saw whole trajectories; train on the drawn turns
            batch.drop_unselected()
        with self._stage("update", timings):
            update_metrics = self.update(trained, step)
        with self._stage("sync", timings):
            version = self.sync(step + 1)
        if self.engine.weight_version is not None:
            timings["sync/weight_version"] = float(self.engine.weight_version)
        self.step = version
        games = self.cfg.games
        if games.snapshot_every and self.step % games.snapshot_every == 0:
            add_snapshot(
                self.policy, self.pool, self.opponents, games, self.step, self.output_dir, self.info
            )
        if self.worker is not None:  # version step + 1 is in: the rounds it may play start
            self.worker.submit(self.step)
        timings["time/step"] = time.perf_counter() - started
        rollout_idle = self.worker.idle_since_last() if self.worker is not None else None
        timings.update(step_metrics.idle_times(timings, rollout_idle))
        metrics = {**summary, **update_metrics, **timings, **source_metrics, **score_metrics}
        metrics.update(step_metrics.throughput(episodes, trained, timings))
        if batch is not None:
            metrics.update(step_metrics.bank_metrics(batch))
        self.last_episodes = episodes
        return metrics

    def evaluate(self) -> dict[str, float]:
        """``eval/``: the policy against its opponents (:mod:`.evaluation`); rank 0 prints it."""
        cfg = self.cfg
        if not cfg.eval.opponents and not cfg.eval.past_checkpoints:
            return {}
        evaluation = asyncio.run(
            evaluate_policy(cfg, self.engine, self.encoder, self.step, self.opponents, self.info)
        )
        if self.info.main:
            self.last_evaluation = evaluation
            print(eval_table(evaluation), flush=True)
        return evaluation.metrics

    def evaluate_transfer(self) -> dict[str, float]:
        """The ``transfer`` benchmarks (:mod:`.transfer_eval`); ``transfer/``; rank 0 prints."""
        if self.cfg.transfer is None:
            return {}
        from strategic_arena.train.loop.transfer_eval import evaluate_transfer
        from strategic_arena.transfer import render_table

        evaluation = asyncio.run(
            evaluate_transfer(self.cfg, self.engine, self.tokenizer, self.step, self.info)
        )
        if self.info.main:
            print(render_table(evaluation.cells, f"transfer at step {self.step}"), flush=True)
        return evaluation.metrics

    def save_checkpoint(self) -> Path | None:
        """Write the checkpoint of the current step (rank 0 writes; every rank takes part)."""
        parts = {"estimator": self.estimator.state_dict(), "opponent_pool": self.pool.state_dict()}
        if self.bank is not None:
            parts["bank"] = self.bank.state_dict()
        path = write_checkpoint(self.cfg, self.step, self.policy, self.info, parts)
        self.saved_step = self.step
        barrier(self.info)
        return path

    def _load(self, path: Path) -> None:
        """Restore everything but the weights (already loaded from ``path/policy``)."""
        rae = self.cfg.advantage.name == "rae"
        parts = (self.estimator, self.pool, self.bank)
        self.step = self.saved_step = restore(path, self.learner, self.info, *parts, rae=rae)
        self.metrics.truncate_after(self.step)
        if self.info.main:
            log.info("resumed from %s at step %d", path, self.step)

    def close(self, *, wait: bool = True) -> None:
        """Stop the worker and the engine (a server it started), leave the process group.

        Idempotent. ``wait``: the ranks meet at a barrier first (``False`` after an error).
        """
        engine = getattr(self, "engine", None)
        if self.worker is not None:
            self.worker.close()
        try:
            if engine is not None and not self._closed:
                self._closed = True
                engine.close()
        finally:
            shutdown(self.info, wait=wait)

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.close(wait=kind is None)

    def train(self, *, on_step: OnStep | None = None) -> int:
        """Train until ``run.steps`` (:func:`.schedule.run_steps`); the completed steps.

        ``on_step`` is called after each step with its number (1-based) and metrics.
        """
        return run_steps(self, on_step)


def train(cfg: TrainConfig) -> int:
    """Build a :class:`Trainer` for ``cfg`` and train; returns the completed steps.

    Whatever the trainer started (a vLLM server) is stopped at the end, on Ctrl-C and on errors.
    A config with ``policies`` is :func:`strategic_arena.train.loop.cotrain.train`'s.
    """
    if cfg.policies:
        raise ValueError("a config with policies trains with strategic_arena.train.loop.cotrain")
    with Trainer(cfg) as trainer:
        return trainer.train()
