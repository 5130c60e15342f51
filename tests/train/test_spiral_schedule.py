"""SPIRAL's batch and evaluation schedule as its config sets them.

* 128 samples per step: SPIRAL trains on 128 turns a step, drawn from every turn its games
  produced; ``configs/spiral_multi_game.yaml`` plays 32 self-play games of each of its three
  games (192 trajectories) and ``ppo.turns_per_step`` draws 128 turns after the advantages.
* The policy against itself 16 steps earlier: ``eval.past_checkpoints: [16]`` schedules the
  checkpoint of step s - 16 at the evaluation of step s; a tiny run plays one for real.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("torch")

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.rl.rewards import score
from strategic_arena.train.algo.estimators import build
from strategic_arena.train.config import load_config
from strategic_arena.train.config.checks import problems
from strategic_arena.train.loop.metrics import read_metrics
from strategic_arena.train.loop.past_self import alias_metrics, past_selves, with_past_selves
from strategic_arena.train.loop.trainer import Trainer

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "spiral_multi_game.yaml"


def self_play_games(env_ids: list[str], games: int, seed: int) -> list[Episode]:
    """``games`` self-play games of each env: random lengths, a decisive or drawn outcome."""
    rng = np.random.default_rng(seed)
    episodes = []
    for env_id in env_ids:
        for number in range(games):
            moves = int(rng.integers(2, 9))
            outcome = float(rng.choice([-1.0, 0.0, 1.0]))
            turns = [
                Turn(env_id, move % 2, f"Player {move % 2}", [1], [2, 3], [-0.1, -0.1], "", None)
                for move in range(moves)
            ]
            episodes.append(
                Episode(
                    env_id, number, (0, 1), "self", (outcome, -outcome), "complete", None, turns
                )
            )
    return episodes


def spiral_step(step: int) -> tuple[list[Turn], list[Turn]]:
    """Every turn of one SPIRAL step, and the turns the trainer trains on."""
    cfg = load_config(CONFIG)
    episodes = self_play_games(cfg.games.ids, cfg.games.episodes_per_game, seed=step)
    score(episodes, cfg.rewards)
    build(cfg.advantage).assign(episodes)
    trainer = SimpleNamespace(cfg=cfg, step=step)  # the trainer's own method, on this config
    return [t for e in episodes for t in e.turns], Trainer.trainable_turns(trainer, episodes)  # type: ignore[arg-type]


def test_the_spiral_config_trains_on_128_turns_a_step() -> None:
    cfg = load_config(CONFIG)
    assert len(cfg.games.ids) * cfg.games.episodes_per_game * 2 == 192  # trajectories played
    assert cfg.ppo.turns_per_step == 128 and cfg.ppo.drop_zero_advantage
    for step in (0, 1):
        played, trained = spiral_step(step)
        nonzero = [t for t in played if t.advantage != 0.0]
        assert len(nonzero) > 128  # more than a batch: the draw has something to do
        assert len(trained) == 128
        assert all(t.advantage != 0.0 for t in trained)  # drawn from SPIRAL's filtered turns
        ids = {id(t) for t in nonzero}
        assert all(id(t) in ids for t in trained)
        assert len({id(t) for t in trained}) == 128  # without replacement


def test_the_draw_is_the_steps_own_and_replays() -> None:
    _, first = spiral_step(3)
    _, again = spiral_step(3)
    assert [(t.env_id, t.seat, t.advantage) for t in first] == [
        (t.env_id, t.seat, t.advantage) for t in again
    ]
    cfg = load_config(CONFIG)
    episodes = self_play_games(cfg.games.ids, cfg.games.episodes_per_game, seed=3)
    score(episodes, cfg.rewards)
    build(cfg.advantage).assign(episodes)
    trainer = SimpleNamespace(cfg=cfg, step=3)
    positions = {id(t): i for i, t in enumerate(t for e in episodes for t in e.turns)}
    at_3 = [positions[id(t)] for t in Trainer.trainable_turns(trainer, episodes)]  # type: ignore[arg-type]
    at_4 = [positions[id(t)] for t in Trainer.trainable_turns(trainer, episodes, 4)]  # type: ignore[arg-type]
    assert at_3 == sorted(at_3) and at_3 != at_4  # in play order; another step, another draw


def test_the_spiral_config_schedules_the_checkpoint_16_steps_earlier() -> None:
    cfg = load_config(CONFIG)
    assert cfg.eval.past_checkpoints == [16] and cfg.eval.every == 16
    assert past_selves(cfg, 8) == []  # nothing 16 steps before step 8
    (first,) = past_selves(cfg, 16)
    assert (first.step, first.path) == (0, cfg.model.name)  # the initial model
    (later,) = past_selves(cfg, 400)
    assert later.step == 384 and later.alias == "self-t16"
    assert later.path == f"{cfg.run.output_dir}/checkpoints/step-000384/policy"
    assert later.opponent.temperature == cfg.eval.temperature == 0.6
    entries = with_past_selves(cfg, [later])
    for env_id in cfg.games.ids:  # every training game, after its fixed opponents
        assert entries[env_id][: len(cfg.eval.opponents[env_id])] == cfg.eval.opponents[env_id]
        assert entries[env_id][-1] == later.opponent
    assert entries["connect_four-v0"] == cfg.eval.opponents["connect_four-v0"]  # not trained
    assert with_past_selves(cfg, []) == cfg.eval.opponents  # no past checkpoint: no new game
    spec = later.opponent.spec
    metrics = {f"eval/spiral_kuhn_poker-v0/{spec}/win_rate": 0.5, "eval/x/random/win_rate": 1.0}
    assert alias_metrics(metrics, [later]) == {"eval/spiral_kuhn_poker-v0/self-t16/win_rate": 0.5}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["eval.past_checkpoints=[8]"], "multiples of run.checkpoint_every"),
        (["eval.every=24"], "multiples of run.checkpoint_every"),
        (["eval.past_checkpoints=[64]"], "run.keep_checkpoints >= 4"),
        (["eval.past_checkpoints=[0]"], "every lag must be >= 1"),
    ],
)
def test_a_past_checkpoint_that_would_not_exist_is_refused(
    overrides: list[str], message: str
) -> None:
    found = problems(load_config(CONFIG, overrides, check=False))
    assert any(message in problem for problem in found), found


def test_a_tiny_run_plays_its_checkpoint_of_the_step_before(
    tiny_overrides: Callable[..., list[str]],
) -> None:
    cfg = load_config(
        None,
        tiny_overrides(
            "run.steps=2",
            "run.checkpoint_every=1",
            "eval.every=2",
            "eval.games=2",
            "eval.past_checkpoints=[1]",
        ),
    )
    with Trainer(cfg) as trainer:
        trainer.train()
    records = read_metrics(Path(cfg.run.output_dir) / "metrics.jsonl")
    last = records[-1]
    past = f"{cfg.run.output_dir}/checkpoints/step-000001/policy"
    assert f"eval/kuhn_poker-v0/checkpoint:{past}/mean_return" in last
    mine = last["eval/kuhn_poker-v0/self-t1/mean_return"]
    assert mine == last[f"eval/kuhn_poker-v0/checkpoint:{past}/mean_return"]
