"""Two policies co-trained through one real vLLM CPU server, a LoRA adapter each (run time).

The trainer starts the server (``--enable-lora``) with the tiny base model, loads each policy's
adapter by ``/v1/load_lora_adapter`` and, after each update, the policy's new adapter in place.
Checked: each policy's adapter changes; each update gets only its own seat's turns, and those
turns were sampled by the policy's own current adapter (their recorded log-probs are its
learner's, not the other policy's).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from strategic_arena.train.config import load_config
from strategic_arena.train.cotrain import CoTrainer
from strategic_arena.train.vllm_server import default_vllm_python, vllm_unavailable_reason
from tests.train.cotrain_spy import changed, spy_on_updates, trainable

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.xdist_group("vllm")]

CONFIGS = Path(__file__).parents[2] / "configs"


def test_two_lora_policies_co_train_through_one_vllm_server(tmp_path: Path) -> None:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    policies = [
        {"name": "alice", "seats": [0], "advantage": {"type": "ppo"}},
        {"name": "bob", "seats": [1]},
    ]
    cfg = load_config(
        CONFIGS / "tiny_vllm.yaml",
        [
            f"run.output_dir={tmp_path / 'run'}",
            "run.steps=3",
            "run.resume=never",
            "run.tensorboard=false",
            "eval.every=0",
            "games.opponents=[]",
            "games.episodes_per_game=8",
            "lora.rank=8",
            "lora.alpha=16",
            f"vllm.python={default_vllm_python()}",
            f"policies={json.dumps(policies)}",
        ],
    )
    with CoTrainer(cfg) as cotrainer:
        start = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        records = spy_on_updates(cotrainer)
        assert cotrainer.train() == 3
        for name, trainer in cotrainer.trainers.items():
            assert changed(start[name], trainable(trainer)), name
        assert records["alice"].seats == [[0]] * 3 and records["bob"].seats == [[1]] * 3
        for name, record in records.items():
            # From step 2 the adapters differ: the server sampled each seat with its own.
            for own, other in zip(record.own_diff[1:], record.other_diff[1:], strict=True):
                assert own < 1e-3 < other, (name, record)
    log = (tmp_path / "run" / "vllm-server.log").read_text()
    assert "Loaded new LoRA adapter: name 'alice'" in log and "alice-v000002" in log
