"""The training loop: generate -> score -> advantage -> update -> sync, then log, evaluate, save.

One :meth:`Trainer.train_step` runs the five stages, each a method you can call alone:

1. :meth:`Trainer.generate` -- plan the step's games and play them through the arena's match
   loop with the policy in every learner seat (:mod:`strategic_arena.train.loop.rollout`);
2. :meth:`Trainer.score` -- per-turn rewards and gating
   (:func:`strategic_arena.rl.rewards.score`);
3. :meth:`Trainer.advantage` -- the configured estimator
   (:mod:`strategic_arena.train.algo.estimators`; a stateful one, RAE, keeps its state across steps
   and in checkpoints);
4. :meth:`Trainer.update` -- PPO epochs (:class:`strategic_arena.train.policy.learner.Learner`);
5. :meth:`Trainer.sync` -- push the new weights into the running engine (nothing to do when the
   transformers engine shares the learner's module).

Stage 1 is reached through :meth:`Trainer.collect`, *the batch source*: the finished games a
step trains on. With ``max_staleness: 0`` it is the step's own games, played now; with
``max_staleness: k >= 1`` a rollout worker thread (:mod:`strategic_arena.train.loop.async_rollouts`)
plays the next rounds with the newest weights while the learner trains, and ``collect`` hands
over round ``s``'s games less those whose oldest turn is more than ``k`` versions behind
(:mod:`strategic_arena.train.algo.staleness`); after each sync the rounds the new weights may play
are submitted (:meth:`Trainer._submit_rounds`).

With an episode bank (``bank:``, :mod:`strategic_arena.train.algo.bank`) the scored games go into
the bank, further rounds are played until it holds enough, and stages 3 and 4 run on a balanced
batch drawn from it instead of the step's games (:meth:`Trainer.bank_batch`).

Stage 1's opponents are built by :mod:`strategic_arena.train.loop.opponent_players`. A step whose
answers all earned the same reward within every group (every advantage 0: no gradient) is noted
on the console, and steps of them in a row are named a collapse as it happens
(:mod:`strategic_arena.train.algo.collapse`). Then metrics
go to ``metrics.jsonl`` (and TensorBoard), evaluation against solvers runs every ``eval.every``
steps through the arena runner into a SQLite results store
(:mod:`strategic_arena.train.loop.evaluation`), and checkpoints are written every
``run.checkpoint_every`` steps. Ctrl-C during rollouts abandons the step (nothing has changed yet)
and saves; during the later stages (and always under ``torchrun``, where the ranks must agree)
the step is finished first; a second Ctrl-C stops at once without saving.

Randomness: everything random in step ``s`` derives from ``(seed, s)`` by
:func:`strategic_arena.seeding.derive_seed` -- game seeds, seats, opponents, each turn's
sampling seed, minibatch order -- so a resumed run of the synchronous loop repeats exactly
what an uninterrupted one would have done (the asynchronous loop's games in flight at a kill are
played again, from the checkpoint's step and weights).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from strategic_arena._extras import require
from strategic_arena.rl.definitions import score
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.seeding import derive_seed
from strategic_arena.train.algo.bank import Batch, EpisodeBank
from strategic_arena.train.algo.collapse import CollapseDetector, signal_metrics
from strategic_arena.train.algo.estimators import build as build_estimator
from strategic_arena.train.algo.staleness import filter_stale
from strategic_arena.train.algo.subsample import subsample_turns
from strategic_arena.train.config import TrainConfig, validate
from strategic_arena.train.dist import (
    DistInfo,
    all_gather_objects,
    barrier,
    broadcast_object,
    collective_timeout_s,
    init_distributed,
    shard,
    shutdown,
)
from strategic_arena.train.engines.colocation import ColocatedMemory, TorchCuda
from strategic_arena.train.engines.engine import Engine, EngineClient, Sampling, TransformersEngine
from strategic_arena.train.engines.placement import (
    PlacementError,
    World,
    check_placement,
    cuda_unusable_reason,
    learner_gpu,
    server_groups,
    visible_devices,
)
from strategic_arena.train.engines.serving import write_eval_settings
from strategic_arena.train.engines.vllm_lora import AdapterEngine
from strategic_arena.train.loop.async_rollouts import RolloutWorker
from strategic_arena.train.loop.console import eval_table
from strategic_arena.train.loop.evaluation import Evaluation, evaluate_policy
from strategic_arena.train.loop.interrupt import StopRequest
from strategic_arena.train.loop.maporl import DebateScorer
from strategic_arena.train.loop.metrics import MetricsLogger, rollout_metrics
from strategic_arena.train.loop.opponent_players import OpponentPlayers
from strategic_arena.train.loop.rollout import (
    GamePlan,
    OpponentPool,
    PromptEncoder,
    RolloutRunner,
    plan_games,
)
from strategic_arena.train.memory import GIB
from strategic_arena.train.policy import checkpoint as ckpt
from strategic_arena.train.policy.learner import Learner
from strategic_arena.train.policy.models import (
    load_policy,
    load_reference,
    load_tokenizer,
    resolve_compute_dtype,
    resolve_device,
    resolve_dtype,
    resolve_policy_dtype,
    resolve_server_dtype,
    save_full_model,
    save_policy,
)

log = logging.getLogger("strategic_arena.train")

#: Largest |mean ratio - 1| between the learner's and the engine's log-probs of the same tokens
#: accepted without a warning (bfloat16 engines drift by about 1e-2).
SYNC_TOLERANCE = 0.05


class Trainer:
    """Self-play PPO on text games; see the module docstring.

    Args:
        cfg: the run's config (validated).
        engine: an engine to use instead of building the configured one (tests).
    """

    def __init__(self, cfg: TrainConfig, *, engine: Engine | None = None) -> None:
        self.torch = require("torch", "training")
        validate(cfg)
        self.cfg = cfg
        if cfg.model.torch_threads > 0:
            self.torch.set_num_threads(cfg.model.torch_threads)
        self.output_dir = Path(cfg.run.output_dir)
        self._closed = False
        use_cuda = cfg.model.device in ("cuda", "auto") and self.torch.cuda.is_available()
        unusable = cuda_unusable_reason() if cfg.model.device in ("auto", "cuda") else None
        if unusable is not None and cfg.model.device == "cuda":
            raise PlacementError(unusable)
        if unusable is not None:
            log.warning("!!! %s; training on the CPU !!!", unusable)
        # Before anything is loaded: refuse a layout that cannot fit or cannot connect.
        self.memory_estimate = check_placement(cfg, World.from_env(), use_cuda)
        if self.memory_estimate is not None and int(os.environ.get("RANK", "0")) == 0:
            log.info("memory estimate:\n%s", self.memory_estimate.table())
        self.gpu = learner_gpu(cfg.placement, int(os.environ.get("LOCAL_RANK", "0")))
        self.info: DistInfo = init_distributed(use_cuda, cfg.placement.dist_timeout_s, self.gpu)
        if self.info.distributed and cfg.rollout.max_staleness > 0:
            shutdown(self.info, wait=False)
            raise ValueError("max_staleness >= 1 runs in one process: not under torchrun")
        if self.info.distributed and self.info.main:
            log.info(
                "process group: %d ranks, collective timeout %.0f s",
                self.info.world_size,
                collective_timeout_s(self.info),
            )
        try:
            self._build(engine)
        except BaseException:
            self.close(wait=False)
            raise

    def _build(self, engine: Engine | None) -> None:
        """Models, learner and engine, then :meth:`_set_up` (a failure here tears down)."""
        cfg = self.cfg
        self.device = resolve_device(cfg, self.gpu)
        # Precision: float32 masters, compute_dtype arithmetic, the server in its own dtype.
        self.dtype = resolve_dtype(cfg)
        self.compute_dtype = resolve_compute_dtype(cfg.precision.compute_dtype, self.device)
        self.server_dtype = resolve_server_dtype(cfg, self.compute_dtype)
        resume_from = self._resume_path()
        weights_dir = resume_from / "policy" if resume_from is not None else None
        self.tokenizer = load_tokenizer(cfg, weights_dir)
        policy_dtype = resolve_policy_dtype(cfg, self.dtype, self.compute_dtype)
        model = load_policy(cfg, self.tokenizer, self.device, policy_dtype, weights_dir)
        reference = load_reference(cfg, self.tokenizer, self.device, self.compute_dtype)
        if self.info.distributed:
            if cfg.lora.rank > 0:
                raise ValueError("LoRA under FSDP is not supported; use one process for LoRA")
            model = shard(model, self.info, param_dtype=self.compute_dtype)
            if reference is not None:
                reference = shard(reference, self.info, param_dtype=self.compute_dtype)
        self.learner = Learner.from_config(
            cfg,
            model,
            pad_id=int(self.tokenizer.pad_token_id),
            reference=reference,
            rank=self.info.rank,
            world_size=self.info.world_size,
            compute_dtype=self.compute_dtype,
        )
        self.sampling = Sampling.of(cfg.sampling)
        self.colocated = self._colocated_memory()
        self.engine, self.engine_shares_weights = (
            (engine, False) if engine is not None else self._build_engine(model, weights_dir)
        )
        self._set_up(resume_from)  # on failure __init__ closes the engine (a started server)

    def _colocated_memory(self) -> ColocatedMemory | None:
        """The learner's side of a GPU shared with a sleeping server (``None``: no sleep mode).

        A wake's need is the estimate's server weights and KV cache (0 when the model's
        shape is unknown: the cache is still emptied and the margin still checked).
        """
        cfg = self.cfg
        if not cfg.placement.vllm_sleep_level or self.device.type != "cuda":
            return None
        server = self.memory_estimate.server if self.memory_estimate is not None else {}
        return ColocatedMemory(
            TorchCuda(self.device),
            weights_bytes=server.get("weights", 0),
            kv_bytes=server.get("KV cache", 0),
            margin_bytes=int(cfg.placement.colocated_wake_margin_gib * GIB),
            offload_optimizer=cfg.placement.colocated_offload_optimizer,
        )

    def _set_up(self, resume_from: Path | None) -> None:
        """Everything after the engine: client, pool, metrics, checkpoint, first sync."""
        cfg = self.cfg
        self.client = EngineClient(
            self.engine, self.sampling, max_batch_size=cfg.rollout.max_batch_size
        )
        self.encoder = PromptEncoder(self.tokenizer, cfg.answer)
        self.pool = OpponentPool.from_config(cfg.games)
        self.estimator = build_estimator(cfg.advantage)
        critic = self.estimator.critic()
        if critic is not None:  # the estimator reads a critic (PPO's): a value head
            self.learner.attach_value_head(coef=critic.coef, clip=critic.clip, lr=critic.lr)
        self.bank = (
            EpisodeBank(cfg.bank, derive_seed(cfg.run.seed, "bank"))
            if cfg.bank is not None
            else None
        )
        self.reward_config = cfg.rewards
        self.debate_scorer = DebateScorer(cfg.maporl) if cfg.maporl is not None else None
        self.step = 0
        self.metrics = MetricsLogger(
            self.output_dir, tensorboard=cfg.run.tensorboard, enabled=self.info.main
        )
        self.opponents = OpponentPlayers(cfg, self.tokenizer, self.device)
        self._stop = StopRequest()  # Ctrl-C (strategic_arena.train.loop.interrupt)
        self._stage = "idle"
        self._saved_step = -1
        self.last_episodes: list[Episode] = []
        self.last_evaluation: Evaluation | None = None
        self.collapse = CollapseDetector()  # names steps without learning signal
        self.rollouts = RolloutRunner(cfg, self.client, self.encoder, self.opponents)
        self.worker: RolloutWorker | None = None  # the asynchronous loop's (collect makes it)
        self._rollout_idle_s = 0.0
        self._round_dropped: dict[int, int] = {}
        if resume_from is not None:
            self._load(resume_from)
        self.sync()

    # -- construction helpers ----------------------------------------------------------------

    def _resume_path(self) -> Path | None:
        """The checkpoint to continue from (``resume``), agreed on by every rank."""
        cfg = self.cfg
        path: Path | None = None
        if cfg.run.resume == "auto":
            path = ckpt.latest_checkpoint(cfg.run.output_dir)
        elif cfg.run.resume != "never":
            path = Path(cfg.run.resume)
        return broadcast_object(path, self.info)

    def _build_engine(self, model: Any, weights_dir: Path | None) -> tuple[Engine, bool]:
        """The configured engine and whether it shares the learner's weights."""
        cfg = self.cfg
        if cfg.rollout.engine == "transformers":
            if not self.info.distributed and cfg.rollout.max_staleness == 0:
                return TransformersEngine(
                    model, self.tokenizer, max_batch_size=cfg.rollout.max_batch_size
                ), True
            # Under FSDP each rank decodes with a full copy, refreshed by sync(); so does the
            # asynchronous loop, whose rollouts go on while the learner changes its weights.
            copy = load_policy(cfg, self.tokenizer, self.device, self.compute_dtype, weights_dir)
            copy.eval()
            copy.requires_grad_(False)
            return TransformersEngine(
                copy, self.tokenizer, max_batch_size=cfg.rollout.max_batch_size
            ), False
        return self._build_vllm_engine(weights_dir), False

    def _build_vllm_engine(self, weights_dir: Path | None) -> Engine:
        """Rollouts from vLLM servers: the configured ones, or one this trainer starts.

        Rank 0 starts the server (and alone pushes weights); every rank sends its own games'
        requests to it. The server starts from ``model`` (a tiny model is written out first)
        and gets the current weights by the first :meth:`sync`, resumed runs included.
        """
        from strategic_arena.train.engines.engine import stop_token_ids
        from strategic_arena.train.engines.vllm_engine import (
            DiskTransport,
            VLLMServerEngine,
            WeightTransport,
        )
        from strategic_arena.train.engines.vllm_nccl import server_args as nccl_server_args
        from strategic_arena.train.engines.vllm_server import VLLMServer, start_all

        cfg = self.cfg
        servers: list[VLLMServer] = []
        urls = list(cfg.vllm.base_urls)
        initial = None
        if not urls and cfg.model.name == "tiny":  # the server loads from disk: write it once
            initial = dict(self.learner.full_weights())  # collective under FSDP: every rank
        if not urls and self.info.main:
            path = cfg.model.name
            if initial is not None:
                path = str(self.output_dir / "engine-init")
                save_full_model(self.learner.model, self.tokenizer, initial, path)
            groups: list[list[int] | None] = [
                *server_groups(cfg.placement, cfg.vllm.tensor_parallel_size)
            ] or [None]
            for index, group in enumerate(groups):
                env = dict(cfg.vllm.server_env)
                if group is not None:  # this server's GPUs (placement: vllm_gpus)
                    env["CUDA_VISIBLE_DEVICES"] = visible_devices(group)
                name = "vllm-server.log" if len(groups) == 1 else f"vllm-server-{index}.log"
                servers.append(
                    VLLMServer(
                        path,
                        python=cfg.vllm.python,
                        served_name=cfg.vllm.served_model,
                        dtype=str(self.server_dtype).removeprefix("torch."),
                        max_model_len=cfg.vllm.max_model_len or self._context_length(),
                        gpu_memory_utilization=cfg.vllm.gpu_memory_utilization,
                        tensor_parallel_size=cfg.vllm.tensor_parallel_size,
                        enable_prefix_caching=cfg.vllm.enable_prefix_caching,
                        enforce_eager=cfg.vllm.enforce_eager,
                        enable_sleep_mode=cfg.placement.vllm_sleep_level > 0,
                        extra_args=[
                            *cfg.vllm.server_args,
                            *(["--trust-remote-code"] if cfg.model.trust_remote_code else []),
                            *(nccl_server_args() if cfg.vllm.weight_sync == "nccl" else []),
                        ],
                        env=env,
                        log_path=self.output_dir / name,
                        startup_timeout_s=cfg.vllm.startup_timeout_s,
                    )
                )
            logs = ", ".join(str(server.log_path) for server in servers)
            log.info("starting %d vLLM server(s) (log: %s)", len(servers), logs)
            started = time.perf_counter()
            start_all(servers)  # at once: start-up is rank 0's longest lone wait
            waited = time.perf_counter() - started
            urls = [server.base_url for server in servers]
            log.info("vLLM server(s) %s healthy after %.0f s", " ".join(urls), waited)
        urls = broadcast_object(urls, self.info)
        transport: WeightTransport | None = None
        if self.info.main:
            if cfg.vllm.weight_sync == "nccl":
                from strategic_arena.train.engines.vllm_nccl import NCCLTransport

                transport = NCCLTransport(urls, self.device)
            else:
                transport = DiskTransport(cfg.vllm.weight_sync_dir)
        return VLLMServerEngine(
            urls,
            cfg.vllm.served_model,
            stop_token_ids(self.tokenizer, self.learner.model),
            transport=transport,
            servers=servers,
            timeout_s=cfg.vllm.request_timeout_s,
            max_in_flight=cfg.rollout.max_batch_size,
            pushes=self.info.main,
            sleep_level=cfg.placement.vllm_sleep_level,
            weight_dtype=self.server_dtype,
            keep_requests=cfg.rollout.max_staleness > 0,
            before_wake=self.colocated.check_wake if self.colocated is not None else None,
        )

    def _context_length(self) -> int:
        """``rollout.max_sequence_tokens``, capped by the model's position limit."""
        limit = getattr(self.learner.model.config, "max_position_embeddings", None)
        budget = self.cfg.rollout.max_sequence_tokens
        return min(budget, int(limit)) if limit else budget

    # -- the five stages ---------------------------------------------------------------------

    def generate(self, step: int, round_: int = 0) -> list[Episode]:
        """Stage 1: play the step's games (this rank's share; every rank gets all episodes).

        ``round_`` > 0: a further round of the step's games, to fill the episode bank.
        """
        self.engine.wake_up()
        plans = plan_games(self.cfg.games, self.cfg.run.seed, self.pool, step, round_=round_)
        mine = [plan for plan in plans if plan.index % self.info.world_size == self.info.rank]
        with self.learner.compute():  # an in-process engine samples in the compute dtype
            played = asyncio.run(self.rollouts.play_indexed(mine, step))
        if not self.info.distributed:
            return [episode for _, episode in played]
        indexed = all_gather_objects(played, self.info)
        return [episode for _, episode in sorted(pair for part in indexed for pair in part)]

    # -- the batch source: where a step's games come from ---------------------------------------

    def collect(self, step: int) -> tuple[list[Episode], dict[str, float]]:
        """The finished games step ``step`` trains on, and the metrics of getting them.

        ``max_staleness: 0``: the step's own games, played now (:meth:`generate`).
        ``max_staleness: k >= 1``: round ``step``'s games from the rollout worker
        (:mod:`strategic_arena.train.loop.async_rollouts`, started on the first call), less those
        whose oldest turn is more than ``k`` versions behind
        (:func:`~strategic_arena.train.algo.staleness.filter_stale`); every kept turn carries its
        own weight version and behaviour log-probs.
        """
        if self.cfg.rollout.max_staleness == 0:
            episodes = self.generate(step)
            return episodes, {"train/dropped_games": float(self.rollouts.dropped)}
        if self.worker is None:
            self._start_worker(step)
        assert self.worker is not None
        played, _ = self.worker.take(step)
        report = filter_stale(played, step, self.cfg.rollout.max_staleness)
        metrics = report.metrics()
        metrics["train/dropped_games"] = float(self._round_dropped.pop(step, 0))
        return report.kept, metrics

    def _start_worker(self, step: int) -> None:
        """Start the rollout worker and give it rounds ``step .. step + max_staleness``."""
        rollouts = self.rollouts

        async def play(plans: Sequence[GamePlan], round_: int) -> list[Episode]:
            played = await rollouts.play_indexed(plans, round_)
            self._round_dropped[round_] = rollouts.dropped
            return [episode for _, episode in played]

        self.worker = RolloutWorker(play, context=self.learner.compute, first_round=step)
        self._rollout_idle_s = 0.0
        self._submit_rounds()

    def _submit_rounds(self) -> None:
        """Hand the worker every round the weights now in the engine may play.

        Version ``v = self.step`` is in the engine: rounds up to ``v + max_staleness`` (and
        below ``steps``) may start, so no round's oldest turn is more than ``rollout.max_staleness``
        versions behind the step that trains it.
        """
        assert self.worker is not None
        last = min(self.step + self.cfg.rollout.max_staleness, self.cfg.run.steps - 1)
        while self.worker.submitted <= last:
            round_ = self.worker.submitted
            self.worker.submit(
                round_, plan_games(self.cfg.games, self.cfg.run.seed, self.pool, round_)
            )

    def score(self, episodes: list[Episode]) -> dict[str, float]:
        """Stage 2: rewards and eligibility of every turn; returns the stage's metrics.

        With a ``maporl`` section, debate games are then rescored by MAPoRL's rewards
        (:mod:`strategic_arena.train.loop.maporl`); their ``debate/`` metrics join the step's.
        """
        score(episodes, self.reward_config)
        if self.debate_scorer is None:
            return {}
        return self.debate_scorer.score(episodes)

    def bank_batch(self, episodes: list[Episode], step: int) -> tuple[list[Episode], Batch]:
        """Bank the step's scored games, play more rounds until it is full, draw the batch.

        Returns every game played this step (the rollout metrics describe them) and the batch
        drawn from the bank (stages 3 and 4 train on it).
        """
        bank = self.bank
        assert bank is not None and self.cfg.bank is not None
        bank.add(episodes, version=step)
        rounds, dropped = 1, self.rollouts.dropped
        while not bank.ready(step) and rounds < self.cfg.bank.max_rounds:
            more = self.generate(step, round_=rounds)
            dropped += self.rollouts.dropped
            self.score(more)
            bank.add(more, version=step)
            episodes = [*episodes, *more]
            rounds += 1
        if not bank.ready(step) and self.info.main:
            log.warning(
                "step %d: the episode bank holds %d of the %d %s wanted after %d rounds of "
                "games; drawing from what there is",
                step,
                bank.size(),
                self.cfg.bank.needed,
                self.cfg.bank.batch_unit,
                rounds,
            )
        batch = bank.draw(step)
        batch.metrics["bank/rounds"] = float(rounds)
        batch.metrics["train/dropped_games"] = float(dropped)
        return episodes, batch

    def advantage(self, episodes: list[Episode]) -> None:
        """Stage 3: advantages with the configured estimator (its state, if any, updated).

        An estimator with a critic (``ppo``) first gets the value head's estimate of every
        trainable turn (``Turn.value``).
        """
        if self.estimator.needs_critic:
            turns = [t for e in episodes for t in e.turns if t.eligible and t.response_ids]
            with self.learner.compute():
                values = self.learner.values(turns)
            for turn, value in zip(turns, values, strict=True):
                turn.value = value
        self.estimator.assign(episodes)

    def trainable_turns(self, episodes: list[Episode], step: int | None = None) -> list[Turn]:
        """Eligible turns with a response (and a non-zero advantage if asked).

        At most ``ppo.turns_per_step`` of them (:func:`subsample_turns`, drawn for ``step``: by
        default the step being trained).
        """
        turns = [t for e in episodes for t in e.turns if t.eligible and t.response_ids]
        if self.cfg.ppo.drop_zero_advantage:
            turns = [t for t in turns if t.advantage != 0.0]
        step = self.step if step is None else step
        return subsample_turns(turns, self.cfg.ppo.turns_per_step, self.cfg.run.seed, step)

    def update(self, episodes: list[Episode], step: int) -> dict[str, float]:
        """Stage 4: PPO epochs on the step's trainable turns."""
        cfg = self.cfg
        self.engine.sleep()
        if cfg.placement.vllm_sleep_level:  # no rank's update may start beside a server still awake
            barrier(self.info)
        turns = self.trainable_turns(episodes, step)
        rng = np.random.default_rng(derive_seed(cfg.run.seed, step, "minibatches"))
        use_learner = cfg.ppo.old_logprobs == "learner" or (
            cfg.ppo.old_logprobs == "auto"
            and (cfg.corrects_behaviour or not self.engine.logprobs_match_learner(self.sampling))
        )
        if self.colocated is not None:  # the optimizer's state back from host memory
            self.colocated.restore([self.learner.optimizer], self.device)
        old = self.learner.recompute_logprobs(turns) if use_learner else None
        metrics = self.learner.update(
            turns, rng, old_logprobs=old, correct_behaviour=cfg.corrects_behaviour
        )
        if self.colocated is not None:  # the update's cache back to the driver for the wake
            self.colocated.release([self.learner.optimizer])
        # The sync check compares against the engine's numbers of this step's weights: a turn
        # an episode bank kept from an earlier step, or a stale turn of the asynchronous loop,
        # differs by the updates since (the importance correction's business).
        fresh = [
            (mine, t)
            for mine, t in zip(old or [], turns, strict=False)
            if t.weight_version is None or t.weight_version == step
        ]
        if fresh:
            diffs = np.concatenate([np.subtract(mine, t.logprobs) for mine, t in fresh])
            metrics["train/logprob_ratio"] = float(np.mean(np.exp(diffs)))
            metrics["train/logprob_max_abs_diff"] = float(np.max(np.abs(diffs)))
        metrics["train/trainable_turns"] = float(len(turns))
        metrics.update(signal_metrics([t.advantage for t in turns], [t.reward for t in turns]))
        ratio = metrics.get("train/logprob_ratio", 1.0)
        # Under top-k / top-p the engine's log-probs are of the truncated distribution: a
        # ratio below 1 is then expected (the importance correction's business), not a bug.
        expected_one = self.engine.logprobs_match_learner(self.sampling)
        if expected_one and abs(ratio - 1.0) > SYNC_TOLERANCE and self.info.main:
            log.warning(
                "engine and learner log-probs disagree after the weight sync: mean ratio %.4f "
                "(expected ~1); check the engine's log-prob mode and the weight push",
                ratio,
            )
        return metrics

    def sync(self, version: int | None = None) -> None:
        """Stage 5: push the learner's weights into the engine (unless they are shared).

        The weights are tagged ``version`` (default: the current step): version ``s`` holds
        ``s`` updates, and every turn records the version that generated it.
        """
        version = self.step if version is None else version
        if self.engine_shares_weights:
            self.engine.weight_version = version
        elif isinstance(self.engine, AdapterEngine):  # a LoRA adapter on a shared server
            self.engine.load_adapter(self.learner.model, version)
        else:
            self.engine.load_weights(self.learner.full_weights(), version)
        self.engine.wake_up()

    def train_step(self) -> dict[str, float]:
        """One step of the five stages; returns its metrics (``self.step`` advances by one)."""
        step = self.step
        timings: dict[str, float] = {}
        started = time.perf_counter()

        @contextmanager
        def stage(name: str) -> Iterator[None]:
            self._stage = name
            begin = time.perf_counter()
            yield
            timings[f"time/{name}"] = time.perf_counter() - begin

        with stage("generate"):  # the learner waits for its games (the batch source)
            episodes, source_metrics = self.collect(step)
        with stage("score"):
            score_metrics = self.score(episodes)
        batch, trained = None, episodes
        if self.bank is not None:
            with stage("bank"):  # over-collection rounds included
                episodes, batch = self.bank_batch(episodes, step)
                trained = batch.episodes
        with stage("advantage"):
            self.advantage(trained)
        summary = rollout_metrics(episodes)  # the games as scored, before the bank's cut
        if batch is not None:  # advantages saw whole trajectories; train on the drawn turns
            batch.drop_unselected()
        with stage("update"):
            update_metrics = self.update(trained, step)
        with stage("sync"):
            self.sync(step + 1)
        self._stage = "idle"
        if self.engine.weight_version is not None:
            timings["sync/weight_version"] = float(self.engine.weight_version)
        self.step = step + 1
        if self.cfg.games.snapshot_every and self.step % self.cfg.games.snapshot_every == 0:
            self._snapshot()
        if self.worker is not None:  # version step + 1 is in: the rounds it may play start
            self._submit_rounds()
        timings["time/step"] = time.perf_counter() - started
        timings.update(self._idle_times(timings))
        generated = sum(len(t.response_ids) for e in episodes for t in e.turns)
        metrics = {**summary, **update_metrics, **timings, **source_metrics}
        metrics.update(score_metrics)
        trajectories = sum(len(episode.learner_seats) for episode in trained)
        metrics["train/trajectories_per_s"] = trajectories / max(timings["time/step"], 1e-9)
        generating = timings["time/generate"] + timings.get("time/bank", 0.0)
        metrics["train/tokens_per_s"] = generated / max(generating, 1e-9)
        if batch is not None:
            metrics.update(batch.metrics)
            drawn = batch.turns
            metrics["train/advantage_abs"] = (
                float(np.mean([abs(t.advantage) for t in drawn])) if drawn else 0.0
            )
        self.last_episodes = episodes
        return metrics

    def _idle_times(self, timings: dict[str, float]) -> dict[str, float]:
        """``time/learner_idle`` (waiting for games) and ``time/rollout_idle`` (for weights).

        Synchronous loop: the learner idles while the step's games are played, the engine
        during the rest of the step. Asynchronous loop: the learner's wait for its round, and
        the worker's waits for new weights since the previous step.
        """
        learner_idle = timings["time/generate"] + timings.get("time/bank", 0.0)
        if self.worker is None:
            return {
                "time/learner_idle": learner_idle,
                "time/rollout_idle": timings["time/step"] - learner_idle,
            }
        total = self.worker.idle_time()
        rollout_idle, self._rollout_idle_s = total - self._rollout_idle_s, total
        return {"time/learner_idle": learner_idle, "time/rollout_idle": rollout_idle}

    # -- evaluation --------------------------------------------------------------------------

    def evaluate(self) -> dict[str, float]:
        """Play the policy against ``eval.opponents`` (and ``eval.past_checkpoints``); ``eval/``.

        Games land in the results store (``eval.db``) under the run
        ``<run_name>/eval/step-NNNNNN``; a re-run of the same step resumes it. Under torchrun
        every rank plays a share of the games. Rank 0 prints the table and keeps the result in
        :attr:`last_evaluation`.
        """
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
        """The ``transfer`` section's benchmarks on the current policy; ``transfer/`` metrics.

        Answers land in the evaluation store under ``<run_name>/step-NNNNNN``
        (:mod:`strategic_arena.train.loop.transfer_eval`); rank 0 prints the table so far.
        """
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

    # -- checkpoints ---------------------------------------------------------------------------

    def save_checkpoint(self) -> Path | None:
        """Write the checkpoint of the current step (rank 0 writes; every rank takes part)."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        model = self.learner.model
        full = None
        if self.info.distributed:  # gather full tensors onto rank 0's CPU
            from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

            options = StateDictOptions(full_state_dict=True, cpu_offload=True)
            full = get_model_state_dict(model, options=options)
            learner_state = {
                "optimizer": get_optimizer_state_dict(
                    model, self.learner.optimizer, options=options
                ),
                "scheduler": self.learner.scheduler.state_dict(),
            }
        else:
            learner_state = self.learner.state_dict()
        path = None
        if self.info.main:
            staging = ckpt.begin(self.output_dir, self.step)
            save_policy(model, self.tokenizer, staging / "policy", state_dict=full)
            # How its evaluation asked it, and how to serve it so eval asks it the same way.
            write_eval_settings(
                self.cfg,
                staging,
                self.step,
                dtype=str(self.server_dtype).removeprefix("torch."),
                max_model_len=self.cfg.vllm.max_model_len or self._context_length(),
                tokenizer=self.tokenizer,
            )
            ckpt.save_trainer_state(
                staging,
                {
                    "step": self.step,
                    "learner": learner_state,
                    "estimator": self.estimator.state_dict(),
                    "opponent_pool": self.pool.state_dict(),
                    **({"bank": self.bank.state_dict()} if self.bank is not None else {}),
                    "rng": ckpt.rng_state(),
                    "config": self.cfg.to_dict(),
                },
            )
            path = ckpt.commit(staging, keep=self.cfg.run.keep_checkpoints)
            log.info("checkpoint saved: %s", path)
        self._saved_step = self.step
        barrier(self.info)
        return path

    def _load(self, path: Path) -> None:
        """Restore everything but the weights (already loaded from ``path/policy``)."""
        state = ckpt.load_trainer_state(path)
        if self.info.distributed:
            from torch.distributed.checkpoint.state_dict import (
                StateDictOptions,
                set_optimizer_state_dict,
            )

            options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=False)
            set_optimizer_state_dict(
                self.learner.model,
                self.learner.optimizer,
                state["learner"]["optimizer"],
                options=options,
            )
            self.learner.scheduler.load_state_dict(state["learner"]["scheduler"])
        else:
            self.learner.load_state_dict(state["learner"])
        if "estimator" in state:
            self.estimator.load_state_dict(state["estimator"])
        elif self.cfg.advantage.name == "rae":  # a checkpoint from before the registry
            self.estimator.load_state_dict(state["rae_baselines"])
        self.pool.load_state_dict(state["opponent_pool"])
        if self.bank is not None and "bank" in state:
            self.bank.load_state_dict(state["bank"])
        elif self.bank is not None:  # a checkpoint of a run without a bank
            log.warning("%s holds no episode bank: the bank starts empty", path)
        ckpt.set_rng_state(state["rng"])
        self.step = self._saved_step = int(state["step"])
        self.metrics.truncate_after(self.step)
        if self.info.main:
            log.info("resumed from %s at step %d", path, self.step)

    def _snapshot(self) -> None:
        """Add a frozen copy of the current policy to the opponent pool."""
        path = self.output_dir / "snapshots" / f"step-{self.step:06d}"
        weights = dict(self.learner.full_weights())
        if self.info.main:
            save_full_model(self.learner.model, self.tokenizer, weights, path)
        barrier(self.info)
        self.pool.add_snapshot(
            str(path), self.step, self.cfg.games.snapshot_weight, self.cfg.games.max_snapshots
        )
        self.opponents.drop_snapshots(entry.snapshot for entry in self.pool.snapshots)

    # -- shutting down -------------------------------------------------------------------------

    def close(self, *, wait: bool = True) -> None:
        """Stop what the trainer started, release the engine, leave the process group.

        Idempotent; a vLLM server the trainer started is stopped.

        Args:
            wait: let the ranks meet at a barrier before leaving the process group (a normal
                end); ``False`` after an error, when other ranks may never arrive.
        """
        engine = getattr(self, "engine", None)
        worker = getattr(self, "worker", None)
        if worker is not None:
            worker.close()
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

    # -- the loop ------------------------------------------------------------------------------

    def train(self, *, on_step: Callable[[int, dict[str, float]], None] | None = None) -> int:
        """Train until ``steps``; returns the number of completed steps.

        Args:
            on_step: called after each step with its number (1-based) and metrics.
        """
        cfg = self.cfg
        with self._interrupt_handler():
            try:
                if cfg.transfer is not None and cfg.transfer.at_start and self.step == 0:
                    self.metrics.log(0, self.evaluate_transfer())  # the "before" row
                while self.step < cfg.run.steps and not self._stopping():
                    metrics = self.train_step()
                    warning = self.collapse.check(self.step, metrics)
                    if warning is not None and self.info.main:  # loud: where a person reads
                        print(warning, flush=True)
                        log.warning("%s", warning)
                    evaluated = bool(cfg.eval.every) and (
                        self.step % cfg.eval.every == 0 or self.step == cfg.run.steps
                    )
                    if evaluated:
                        metrics.update(self.evaluate())
                    if transfer_due(cfg, self.step):
                        evaluated = True  # logged with this step's metrics
                        metrics.update(self.evaluate_transfer())
                    if (
                        evaluated
                        or self.step % cfg.run.log_every == 0
                        or self.step == cfg.run.steps
                    ):
                        self.metrics.log(self.step, metrics)
                        if self.info.main:
                            log.info("step %d: %s", self.step, _brief(metrics))
                    if on_step is not None:
                        on_step(self.step, metrics)
                    if cfg.run.checkpoint_every and self.step % cfg.run.checkpoint_every == 0:
                        self.save_checkpoint()
            except KeyboardInterrupt:
                log.warning("interrupted during %s: saving step %d", self._stage, self.step)
                self._stop.requested = True
            if self.step != self._saved_step:
                self.save_checkpoint()
        self.metrics.close()
        return self.step

    def _stopping(self) -> bool:
        """Whether Ctrl-C was pressed (on any rank: every rank stops after the same step)."""
        if not self.info.distributed:
            return self._stop.requested
        self._stop.requested = any(all_gather_objects(self._stop.requested, self.info))
        return self._stop.requested

    def _interrupt_handler(self) -> AbstractContextManager[None]:
        """First Ctrl-C: abandon rollouts or finish the step, then save. Second: stop now."""
        return self._stop.handling_ctrl_c(
            lambda: self._stage == "generate" and not self.info.distributed
        )


def transfer_due(cfg: TrainConfig, step: int) -> bool:
    """Whether the transfer evaluation runs after ``step`` (every ``every``, and the last)."""
    section = cfg.transfer
    if section is None:
        return False
    return step == cfg.run.steps or bool(section.every and step % section.every == 0)


def _brief(metrics: dict[str, float]) -> str:
    keys = (
        "train/reward",
        "train/invalid_rate",
        "train/response_length",
        "train/logprob_ratio",
        "train/grad_norm",
        "async/max_lag",
        "async/dropped_stale",
        "train/trajectories_per_s",
        "time/step",
    )
    return " ".join(f"{key.split('/')[-1]}={metrics[key]:.4g}" for key in keys if key in metrics)


def train(cfg: TrainConfig) -> int:
    """Build a :class:`Trainer` for ``cfg`` and train; returns the completed steps.

    Whatever the trainer started (a vLLM server) is stopped at the end, on Ctrl-C and on errors.
    A config with ``policies`` is :func:`strategic_arena.train.loop.cotrain.train`'s.
    """
    if cfg.policies:
        raise ValueError("a config with policies trains with strategic_arena.train.loop.cotrain")
    with Trainer(cfg) as trainer:
        return trainer.train()
