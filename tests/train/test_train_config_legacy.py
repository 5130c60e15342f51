"""A config in the old flat form trains exactly as its migrated twin (sections), on a fixed seed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.config import load_config
from strategic_arena.train.loop.metrics import read_metrics
from strategic_arena.train.loop.trainer import Trainer

#: A tiny Kuhn Poker run against a pool, written as the flat keys of before the sections.
FLAT = """\
run_name: twin
seed: 3
steps: 2
model: tiny
tiny_vocab: answers
tiny_layers: 1
tiny_hidden_size: 32
device: cpu
torch_threads: 1
games: [kuhn_poker-v0]
episodes_per_game: 6
opponents: [random]
self_play_weight: 0.5
style: boxed
strict: false
max_new_tokens: 8
temperature: 1.0
lr: 1.0e-2
lr_schedule: constant
ppo_epochs: 2
estimator: rae
rae_alpha: 0.9
invalid_penalty: -5.0
tensorboard: false
checkpoint_every: 0
resume: never
"""

#: The same run in sections.
SECTIONS = """\
run: {name: twin, seed: 3, steps: 2, tensorboard: false, checkpoint_every: 0, resume: never}
model:
  name: tiny
  tiny_vocab: answers
  tiny_layers: 1
  tiny_hidden_size: 32
  device: cpu
  torch_threads: 1
games: {ids: [kuhn_poker-v0], episodes_per_game: 6, opponents: [random], self_play_weight: 0.5}
answer: {style: boxed, strict: false}
sampling: {max_tokens: 8, temperature: 1.0}
ppo: {lr: 1.0e-2, lr_schedule: constant, epochs: 2}
advantage: {type: rae, alpha: 0.9}
rewards: {invalid_penalty: -5.0}
"""


def _train(path: Path, output: Path) -> list[dict[str, float]]:
    cfg = load_config(path, [f"run.output_dir={output}"])
    Trainer(cfg).train()
    return [
        {k: v for k, v in row.items() if "time" not in k and "per_s" not in k}
        for row in read_metrics(output / "metrics.jsonl")
    ]


def test_a_flat_config_trains_to_the_same_metrics_as_its_migrated_twin(tmp_path: Path) -> None:
    flat, sections = tmp_path / "flat.yaml", tmp_path / "sections.yaml"
    flat.write_text(FLAT)
    sections.write_text(SECTIONS)
    with pytest.warns(FutureWarning, match="ppo_epochs -> ppo.epochs"):
        old = load_config(flat, check=False)
    assert old == load_config(sections, check=False)
    with pytest.warns(FutureWarning):
        old_metrics = _train(flat, tmp_path / "flat")
    new_metrics = _train(sections, tmp_path / "sections")
    assert len(new_metrics) == 2 and old_metrics == new_metrics
    assert new_metrics[-1]["train/invalid_rate"] <= 1.0  # real rollouts were scored
