"""Under ``torchrun`` the old log-probs are recomputed once, split over the ranks by tokens.

Two CPU processes (gloo, FSDP2) recompute the log-probs of a batch with one long turn and many
short ones: each turn is computed by exactly one rank, the ranks get equal tokens (the long turn
alone on one rank, the short ones on the other), and every rank gets back all the log-probs,
equal to those one process computes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.rl.episode import Turn  # noqa: E402
from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.policy.batching import plan_micro_batches  # noqa: E402
from strategic_arena.train.policy.tiny import build_tiny  # noqa: E402
from tests.train.conftest import learner_for  # noqa: E402
from tests.train.launch import torchrun  # noqa: E402

#: (prompt, response) lengths: one turn as long as the six others together.
SHAPES = [(40, 8), *[(6, 2)] * 6]

RANK_SCRIPT = """
import json, sys
import torch
from strategic_arena.train.config import load_config
from strategic_arena.train.dist import exit_rank, init_distributed, shard, shutdown
from strategic_arena.train.policy.learner import Learner
sys.path.insert(0, {tests!r})
from test_train_sharded_logprobs import model_and_turns

torch.set_num_threads(1)
info = init_distributed(False)
model, pad_id, turns = model_and_turns()
tokens = []
model.register_forward_pre_hook(
    lambda module, args, kwargs: tokens.append(int(kwargs["attention_mask"].sum())),
    with_kwargs=True,
)
model = shard(model, info)
cfg = load_config(None, ["ppo.micro_batch_size=2"])
learner = Learner.for_run(
    cfg.ppo, cfg.correction, model, sampling=cfg.sampling, steps=cfg.run.steps,
    pad_id=pad_id, rank=info.rank, world_size=info.world_size,
)
old = learner.recompute_logprobs(turns)
with open({out!r} + f"/rank{{info.rank}}.json", "w") as f:
    json.dump({{"old": old, "tokens": tokens}}, f)
# A barrier, then the group is destroyed (no rank tears gloo down while the other still
# sends), then the process ends without finalization, where gloo can still abort
# ("terminate called without an active exception"): dist.exit_rank.
shutdown(info)
exit_rank(0)
"""


def model_and_turns() -> tuple[Any, int, list[Turn]]:
    """The tiny model (seeded) and turns of the SHAPES lengths over its vocabulary."""
    model, tokenizer = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=32, layers=1
    )
    vocab = len(tokenizer)
    turns = []
    for row, (prompt, response) in enumerate(SHAPES):
        ids = [(7 * row + 3 * i) % (vocab - 1) + 1 for i in range(prompt + response)]
        turns.append(Turn("g", 0, "r", ids[:prompt], ids[prompt:], [0.0] * response, "", None))
    return model, int(tokenizer.pad_token_id), turns


@pytest.mark.slow
def test_two_ranks_recompute_each_turn_once_with_equal_tokens(tmp_path: Path) -> None:
    sizes = [p + r for p, r in SHAPES]
    plan = plan_micro_batches(sizes, 2, max_rows=2)
    assert plan == [[[0], [], []], [[1, 2], [3, 4], [5, 6]]]  # 48 tokens each

    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT.format(tests=str(Path(__file__).parent), out=str(tmp_path)))
    done = torchrun([str(script)], timeout_s=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # rank 0: the long turn, then two dummy passes of the shortest turn (FSDP needs as many
    # passes on every rank); each turn computed by one rank, not every turn by every rank
    assert ranks[0]["tokens"] == [48, 8, 8]
    assert ranks[1]["tokens"] == [16, 16, 16]

    model, pad_id, turns = model_and_turns()
    single = learner_for(load_config(None, ["ppo.micro_batch_size=2"]), model, pad_id=pad_id)
    expected = single.recompute_logprobs(turns)
    for rank in ranks:
        assert len(rank["old"]) == len(turns)
        for mine, theirs in zip(rank["old"], expected, strict=True):
            assert mine == pytest.approx(theirs, abs=1e-5)
