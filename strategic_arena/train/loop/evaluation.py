"""Evaluation during training: the policy against fixed opponents through the arena runner.

The same runner, store and summaries as ``strategic-arena eval``: the policy is an entrant whose
players sample from the training engine, the opponents are built from their specs (a solver or
bot, ``checkpoint:PATH`` -- a frozen model on the transformers engine -- or a model behind an
OpenAI-compatible endpoint), and the summaries become ``eval/<env>/<opponent>[/seatN]/<metric>``
metrics. ``eval.past_checkpoints`` adds the policy's own earlier checkpoints
(:mod:`strategic_arena.train.loop.past_self`: SPIRAL's win rate against itself 16 steps earlier).

**Under torchrun** the games are spread over the ranks (game ``i`` of those still to play goes
to rank ``i mod world size``): every rank plays its share into a private in-memory store, the
records are gathered, and rank 0 alone writes them into the results store. No rank waits for
another's whole evaluation (NCCL's timeout would kill the run), and the results are those of
one process playing every game: each game's seeds come from its key, not from who plays it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strategic_arena.arena import runner
from strategic_arena.arena.evaluate import evaluation_tasks
from strategic_arena.arena.match import MatchRecord
from strategic_arena.arena.metrics import Summary, summarize
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import game_sampling_params
from strategic_arena.train.config import OpponentConfig, TrainConfig
from strategic_arena.train.dist import DistInfo, all_gather_objects, broadcast_object
from strategic_arena.train.engines.engine import BatchSampling, Engine, EngineClient
from strategic_arena.train.loop.opponent_players import OpponentPlayers
from strategic_arena.train.loop.past_self import alias_metrics, past_selves, with_past_selves
from strategic_arena.train.loop.rollout import PromptEncoder, configured_player
from strategic_arena.turn import Player

#: Times a game left incomplete by a server failure is played again by a rerun of the step.
MAX_REPLAYS = 3


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of the policy: where it is stored and what it found.

    Attributes:
        step: the policy's step.
        db: the results store.
        run: the run's name in the store (``<run_name>/eval/step-NNNNNN``).
        rows: the policy's summaries, both seats (``seat`` None) and each seat, in the
            order of ``eval.opponents`` (rank 0 only; empty on the other ranks).
        metrics: ``eval/`` metrics (every rank).
    """

    step: int
    db: Path
    run: str
    rows: list[Summary] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


def eval_db(cfg: TrainConfig) -> Path:
    """The results store of the run's evaluations (``eval.db``, else ``output_dir/eval.db``)."""
    return Path(cfg.eval.db) if cfg.eval.db else Path(cfg.run.output_dir) / "eval.db"


def opponent_entrant(entry: str | OpponentConfig, opponents: OpponentPlayers) -> runner.Entrant:
    """The arena entrant of one ``eval.opponents`` entry (see the module docstring)."""
    config = OpponentConfig.of(entry)
    if config.base_url is not None:
        return runner.Entrant.llm(opponents.endpoint_backend(config), name=config.spec)
    if config.spec.startswith("checkpoint:"):
        path = config.spec.removeprefix("checkpoint:")
        temperature = config.temperature

        def build(env_id: str, seed: int) -> Player:
            return opponents.frozen(path, config.spec, seed, temperature)

        params: dict[str, Any] = {"path": path, "temperature": temperature}
        return runner.Entrant(config.spec, "checkpoint", params, build)
    return runner.Entrant.opponent(config.spec)


def eval_sampling(cfg: TrainConfig, env_id: str | None = None) -> BatchSampling:
    """The engine's sampling in evaluation (:meth:`EvalConfig.sampling`).

    With ``env_id``: that game's (:meth:`EvalConfig.sampling_for`, ``eval.game_sampling``).
    """
    if env_id is None:
        return BatchSampling.of(cfg.eval.sampling(cfg.sampling))
    return BatchSampling.of(cfg.eval.sampling_for(cfg.sampling, env_id))


async def evaluate_policy(
    cfg: TrainConfig,
    engine: Engine,
    encoder: PromptEncoder,
    step: int,
    opponents: OpponentPlayers,
    info: DistInfo | None = None,
) -> Evaluation:
    """Play the policy of ``step`` against ``cfg.eval.opponents``; every rank calls it.

    The policy samples at ``eval.temperature`` and ``eval.top_p`` through ``engine`` (a game
    named in ``eval.game_sampling`` as it says); games
    land in the results store (:func:`eval_db`) under the run ``<run_name>/eval/step-NNNNNN``,
    so a re-run of the same step resumes it.
    """
    info = info or DistInfo()
    engine.wake_up()
    sampling = eval_sampling(cfg)
    temperature = sampling.temperature
    client = EngineClient(engine, sampling, max_batch_size=cfg.rollout.max_batch_size)
    # A game with sampling of its own (eval.game_sampling) gets a client of its own.
    clients = {
        env_id: EngineClient(
            engine, eval_sampling(cfg, env_id), max_batch_size=cfg.rollout.max_batch_size
        )
        for env_id in cfg.eval.game_sampling
    }
    name = f"{cfg.run.name}@step-{step}"

    def build(env_id: str, seed: int) -> Player:
        return configured_player(cfg, clients.get(env_id, client), encoder, seed, name=name)

    params: dict[str, Any] = {
        "run": cfg.run.name,
        "step": step,
        "model": cfg.model.name,
        "temperature": temperature,
    }
    if cfg.eval.top_p is not None:  # stored only when set: earlier runs' players stay the same
        params["top_p"] = sampling.top_p
    if cfg.eval.game_sampling:  # likewise
        params["game_sampling"] = game_sampling_params(cfg.eval.game_sampling)
    policy = runner.Entrant(name, "policy", params, build)
    selves = past_selves(cfg, step)  # eval.past_checkpoints: the policy of earlier steps
    rivals = {
        env_id: [opponent_entrant(entry, opponents) for entry in entries]
        for env_id, entries in with_past_selves(cfg, selves).items()
    }
    tasks = evaluation_tasks(policy, rivals, cfg.eval.games, cfg.run.seed)
    run_name = f"{cfg.run.name}/eval/step-{step:06d}"
    settings = {"run": cfg.run.name, "step": step, "style": cfg.answer.style}
    db = eval_db(cfg)

    async def play(store: ResultsStore, share: Sequence[runner.GameTask]) -> None:
        await runner.run_async(
            store,
            run_name,
            share,
            seed=cfg.run.seed,
            concurrency=cfg.rollout.max_concurrent_episodes,
            settings=settings,
            progress=False,
            max_replays=MAX_REPLAYS,
        )

    try:
        if not info.distributed:
            with ResultsStore(db) as store:
                await play(store, tasks)
                rows = _policy_rows(store, run_name, name)
            found = Evaluation(step, db, run_name, rows, eval_metrics(rows))
        else:
            found = await _spread(
                tasks, info, db, run_name, name, step, cfg.run.seed, settings, play
            )
        found.metrics.update(alias_metrics(found.metrics, selves))
        return found
    finally:
        for used in (client, *clients.values()):
            await used.aclose()
        for past in selves:  # each past checkpoint is played once: free its model
            await opponents.release(past.path)


async def _spread(
    tasks: list[runner.GameTask],
    info: DistInfo,
    db: Path,
    run_name: str,
    name: str,
    step: int,
    seed: int,
    settings: dict[str, Any],
    play: Callable[[ResultsStore, Sequence[runner.GameTask]], Any],
) -> Evaluation:
    """Every rank plays its share of the games still to play; rank 0 stores them all."""
    pending: list[str] = []
    if info.main:  # which games the store still needs (a rerun of a step resumes)
        with ResultsStore(db) as store:
            with store.transaction():
                run_id = store.run(run_name, seed, settings)
            done = store.completed_keys(run_id)
            tries = store.incomplete_counts(run_id)
        pending = [t.key for t in tasks if t.key not in done and tries[t.key] <= MAX_REPLAYS]
    pending = broadcast_object(pending, info)
    wanted = set(pending[info.rank :: info.world_size])
    mine = [task for task in tasks if task.key in wanted]
    private = _Collector()
    try:
        await play(private, mine)
        played = private.records
    finally:
        private.close()
    gathered = all_gather_objects(played, info)
    rows: list[Summary] = []
    if info.main:
        with ResultsStore(db) as store:
            with store.transaction():
                run_id = store.run(run_name, seed, settings)
                runner.register(store, {e.name: e for t in tasks for e in t.seats}.values())
            order = {task.key: index for index, task in enumerate(tasks)}
            for key, record in sorted(
                (pair for part in gathered for pair in part), key=lambda p: order[p[0]]
            ):
                store.add_game(run_id, key, record)
            rows = _policy_rows(store, run_name, name)
    metrics = broadcast_object(eval_metrics(rows), info)
    return Evaluation(step, db, run_name, rows, metrics)


class _Collector(ResultsStore):
    """An in-memory results store that also keeps every record added, with its key."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.records: list[tuple[str, MatchRecord]] = []

    def add_game(self, run_id: int, game_key: str, record: MatchRecord) -> bool:
        """Store the game (as any store does) and keep its record for the gather."""
        self.records.append((game_key, record))
        return super().add_game(run_id, game_key, record)


def _policy_rows(store: ResultsStore, run_name: str, name: str) -> list[Summary]:
    """The policy's summaries of ``run.name``."""
    return [row for row in summarize(store, [run_name]) if row.player == name]


def eval_metrics(rows: Sequence[Summary]) -> dict[str, float]:
    """``eval/<env>/<opponent>[/seatN]/<metric>`` of the policy's summaries."""
    metrics: dict[str, float] = {}
    for summary in rows:
        key = f"eval/{summary.env_id}/{summary.opponent}"
        if summary.seat is not None:
            key += f"/seat{summary.seat}"
        metrics[f"{key}/mean_return"] = summary.mean_return
        metrics[f"{key}/normalized_score"] = summary.normalized
        metrics[f"{key}/invalid_rate"] = summary.invalid_rate
        metrics[f"{key}/game_length"] = summary.game_length
        if summary.marshal_paper is not None:
            metrics[f"{key}/paper_score"] = summary.marshal_paper
        if summary.wins is not None and summary.games:
            metrics[f"{key}/win_rate"] = summary.wins / summary.games
    return metrics
