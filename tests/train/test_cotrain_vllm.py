"""Two policies co-trained through real vLLM CPU servers: LoRA adapters, and MAPoRL's debate.

1. Two LoRA policies on Kuhn Poker share one server (``--enable-lora``): each adapter is loaded
   at run time with ``/v1/load_lora_adapter`` and replaced in place after every update.
2. The acceptance run, ``configs/maporl_tiny.yaml`` (seed 0, problem seed 25): two tiny
   policies, a server each, debate two generated arithmetic problems (answers 5 and 9) in
   two-agent, two-turn debates, rewarded by the exact-answer verifier and MAPoRL's
   influence-aware reward, each trained by PPO with a value head and GAE.

Both check that each policy's weights change, and that each update gets only its own seat's
turns, sampled by that policy's current weights (the engine's log-probs are its learner's, not
the other policy's); the debate run also that the majority's accuracy at the last turn rises
(its mean over the last three of 12 steps exceeds its mean over the first three).

Deterministic: every game, seat and sampling seed derives from the run's seed, and vLLM samples
each request from its own seed. Slow: the debate run starts two servers and takes several
minutes on two cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from strategic_arena.train.config import load_config
from strategic_arena.train.engines.vllm_server import default_vllm_python, vllm_unavailable_reason
from strategic_arena.train.loop.cotrain import CoTrainer
from strategic_arena.train.loop.metrics import read_metrics
from tests.train.cotrain_spy import UpdateRecord, changed, spy_on_updates, trainable

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.xdist_group("vllm")]

CONFIGS = Path(__file__).parents[2] / "configs"


@pytest.fixture
def vllm_python() -> str:
    reason = vllm_unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM server here: {reason}")
    return default_vllm_python()


def _check_own_turns(records: dict[str, UpdateRecord], steps: int) -> None:
    """Each update had only its seat's turns; from step 2 they were its own weights' samples."""
    assert records["alice"].seats == [[0]] * steps and records["bob"].seats == [[1]] * steps
    for name, record in records.items():
        for own, other in zip(record.own_diff[1:], record.other_diff[1:], strict=True):
            assert own < 1e-3 < other, (name, record)


def test_two_lora_policies_co_train_through_one_vllm_server(
    tmp_path: Path, vllm_python: str
) -> None:
    policies = [
        {"name": "alice", "seats": [0], "advantage": {"type": "ppo"}},
        {"name": "bob", "seats": [1]},
    ]
    settings = [
        f"run.output_dir={tmp_path / 'run'}",
        "run.steps=3",
        "run.resume=never",
        "run.tensorboard=false",
        "eval.every=0",
        "games.opponents=[]",
        "games.episodes_per_game=8",
        "lora.rank=8",
        "lora.alpha=16",
        f"vllm.python={vllm_python}",
        f"policies={json.dumps(policies)}",
    ]
    cfg = load_config(CONFIGS / "tiny_vllm.yaml", settings)
    with CoTrainer(cfg) as cotrainer:
        start = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        records = spy_on_updates(cotrainer)
        assert cotrainer.train() == 3
        for name, trainer in cotrainer.trainers.items():
            assert changed(start[name], trainable(trainer)), name
    _check_own_turns(records, 3)
    log = (tmp_path / "run" / "vllm-server.log").read_text()
    assert "Loaded new LoRA adapter: name 'alice'" in log and "alice-v000002" in log


def test_two_policies_co_train_in_debates_and_the_majority_improves(
    tmp_path: Path, vllm_python: str
) -> None:
    out = tmp_path / "run"
    overrides = [f"run.output_dir={out}", "run.resume=never", f"vllm.python={vllm_python}"]
    cfg = load_config(CONFIGS / "maporl_tiny.yaml", overrides)
    steps = cfg.run.steps
    assert steps == 12
    with CoTrainer(cfg) as cotrainer:
        start = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        records = spy_on_updates(cotrainer)
        assert cotrainer.train() == steps
        for name, trainer in cotrainer.trainers.items():
            assert changed(start[name], trainable(trainer)), name
    _check_own_turns(records, steps)
    for name in ("alice", "bob"):  # a server each (full weights)
        assert (out / "policies" / name / "vllm-server.log").is_file()
    rows = read_metrics(out / "metrics.jsonl")
    last_turn = [row["debate/accuracy_turn_2"] for row in rows]
    first, final = float(np.mean(last_turn[:3])), float(np.mean(last_turn[-3:]))
    assert final > first, last_turn
