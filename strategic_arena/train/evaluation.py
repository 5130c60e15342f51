"""Evaluation during training: the policy against fixed opponents through the arena runner.

The same runner, store and summaries as ``strategic-arena eval``: the policy is an entrant whose
players sample from the training engine, the opponents are built from their specs, and the
summaries become ``eval/<env>/<opponent>[/seatN]/<metric>`` metrics.
"""

from __future__ import annotations

from pathlib import Path

from strategic_arena.arena import runner
from strategic_arena.arena.evaluate import evaluation_tasks
from strategic_arena.arena.metrics import summarize
from strategic_arena.arena.store import ResultsStore
from strategic_arena.players import Player
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.engine import Engine, EngineClient, Sampling
from strategic_arena.train.rollout import PromptEncoder, configured_player


def eval_sampling(cfg: TrainConfig) -> Sampling:
    """The sampling of evaluation: ``eval_temperature`` and ``eval_top_p`` where set."""
    temperature = cfg.temperature if cfg.eval_temperature is None else cfg.eval_temperature
    top_p = cfg.top_p if cfg.eval_top_p is None else cfg.eval_top_p
    return Sampling(temperature, top_p, cfg.top_k, cfg.max_new_tokens, tuple(cfg.stop))


async def evaluate_policy(
    cfg: TrainConfig, engine: Engine, encoder: PromptEncoder, step: int
) -> dict[str, float]:
    """Play the policy of ``step`` against ``cfg.eval_opponents``; its ``eval/`` metrics.

    The policy samples at ``eval_temperature`` and ``eval_top_p`` through ``engine``; games
    land in the results store (``eval_db``, else ``eval.db`` in the output directory) under the
    run ``<run_name>/eval/step-NNNNNN``, so a re-run of the same step resumes it.
    """
    engine.wake_up()
    sampling = eval_sampling(cfg)
    temperature = sampling.temperature
    client = EngineClient(engine, sampling, max_batch_size=cfg.max_batch_size)
    name = f"{cfg.run_name}@step-{step}"

    def build(env_id: str, seed: int) -> Player:
        return configured_player(cfg, client, encoder, seed, name=name)

    params = {
        "run": cfg.run_name,
        "step": step,
        "model": cfg.model,
        "temperature": temperature,
    }
    if cfg.eval_top_p is not None:  # stored only when set: earlier runs' players stay the same
        params["top_p"] = sampling.top_p
    policy = runner.Entrant(name, "policy", params, build)
    tasks = evaluation_tasks(policy, cfg.eval_opponents, cfg.eval_games, cfg.seed)
    run_name = f"{cfg.run_name}/eval/step-{step:06d}"
    db = Path(cfg.eval_db) if cfg.eval_db else Path(cfg.output_dir) / "eval.db"
    with ResultsStore(db) as store:
        try:
            await runner.run_async(
                store,
                run_name,
                tasks,
                seed=cfg.seed,
                concurrency=cfg.max_concurrent_episodes,
                settings={"run": cfg.run_name, "step": step, "style": cfg.style},
                progress=False,
            )
        finally:
            await client.aclose()
        summaries = summarize(store, [run_name])
    metrics: dict[str, float] = {}
    for summary in summaries:
        if summary.player != name:
            continue
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
