"""A whole RL loop on one device: the transformers engine samples, the real learner learns.

The ``loop`` row of ``benchmarks/gpu_check.py`` (its ``--smoke`` mode runs it on the CPU in the
test suite). A one-turn game that needs nothing but torch: the prompt is a fixed string of
tokens, the response one token, and the reward 1 when that token is in the first eighth of
the vocabulary (a random policy earns about 0.125). Each step samples a group of responses
through :class:`~strategic_arena.train.engines.engine.TransformersEngine` under the learner's
compute context (bfloat16 autocast on a GPU), baselines the rewards by the group's mean and
standard deviation (GRPO's advantage), and takes one update of the project's
:class:`~strategic_arena.train.policy.learner.Learner`. It reports:

* the reward curve (first and last five steps' mean, and every step's);
* the log-prob gap: the largest difference between the engine's recorded log-prob of a sampled
  token and the learner's recomputation of it before the update (both under the same autocast:
  the PPO ratio starts at 1 when this is ~0);
* whether a resumed step is bit-equal: two steps run from a saved state (weights, optimizer,
  scheduler) twice, the weights compared bit by bit, with the default settings and with
  ``torch.use_deterministic_algorithms(True)``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

#: Tokens of the fixed prompt, responses sampled per step, the rewarded share of the vocabulary.
PROMPT_TOKENS = 8
GROUP = 32
REWARDED_SHARE = 8


@dataclass
class LoopResult:
    """What :func:`run_loop` measured."""

    rewards: list[float]
    logprob_gap: float
    resume_bit_equal: bool
    resume_bit_equal_deterministic: bool

    def figures(self) -> dict[str, float | int | str]:
        """The result as a check row's figures."""
        first, last = self.rewards[:5], self.rewards[-5:]
        return {
            "steps": len(self.rewards),
            "reward_first_5": round(sum(first) / len(first), 3),
            "reward_last_5": round(sum(last) / len(last), 3),
            "curve": " ".join(f"{value:.2f}" for value in self.rewards),
            "logprob_gap_max": float(f"{self.logprob_gap:.3g}"),
            "resume_bit_equal": str(self.resume_bit_equal),
            "resume_bit_equal_deterministic": str(self.resume_bit_equal_deterministic),
        }


class OneTurnGame:
    """The loop's game and its learner (see the module docstring)."""

    def __init__(self, model: Any, learner: Any, vocab: int, seed: int) -> None:
        import torch

        from strategic_arena.train.engines.engine import TransformersEngine

        self.torch = torch
        self.learner = learner
        self.vocab = vocab
        tokenizer = SimpleNamespace(eos_token_id=0, pad_token_id=0)
        self.engine = TransformersEngine(model, tokenizer, shares_weights=True)
        generator = torch.Generator().manual_seed(seed)
        self.prompt = torch.randint(1, vocab, (PROMPT_TOKENS,), generator=generator).tolist()
        self.seed = seed

    def play(self, step: int) -> list[Any]:
        """A group of one-token responses, rewarded and given GRPO advantages."""
        from strategic_arena.rl.episode import Turn
        from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest

        requests = [
            GenerationRequest(self.prompt, seed=self.seed * 1_000_003 + step * GROUP + i)
            for i in range(GROUP)
        ]
        with self.learner.compute():
            generations = self.engine.generate(requests, BatchSampling(1.0, max_new_tokens=1))
        turns = []
        for generation in generations:
            reward = float(generation.token_ids[0] < self.vocab // REWARDED_SHARE)
            ids, logprobs = generation.token_ids, generation.logprobs
            turn = Turn("one_turn", 0, "r", self.prompt, ids, logprobs, "", None)
            turn.reward = reward
            turns.append(turn)
        rewards = [turn.reward for turn in turns]
        mean = sum(rewards) / len(rewards)
        std = (sum((r - mean) ** 2 for r in rewards) / len(rewards)) ** 0.5
        for turn in turns:
            turn.advantage = (turn.reward - mean) / (std + 1e-6)
        return turns

    def step(self, step: int) -> tuple[float, float]:
        """One step: play, measure the log-prob gap, update; returns (mean reward, gap)."""
        import numpy as np

        turns = self.play(step)
        recomputed = self.learner.recompute_logprobs(turns)
        gap = max(
            abs(a - b)
            for turn, values in zip(turns, recomputed, strict=True)
            for a, b in zip(turn.logprobs, values, strict=True)
        )
        self.learner.update(turns, np.random.default_rng(step))
        return sum(t.reward for t in turns) / len(turns), gap

    def snapshot(self) -> dict[str, Any]:
        """The weights and the learner's state, copied."""
        return {
            "model": copy.deepcopy(self.learner.model.state_dict()),
            "learner": copy.deepcopy(self.learner.state_dict()),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Back to a :meth:`snapshot`."""
        self.learner.model.load_state_dict(state["model"])
        self.learner.load_state_dict(copy.deepcopy(state["learner"]))

    def resumed_steps_equal(self, first: int, steps: int = 2) -> bool:
        """Whether ``steps`` steps from a snapshot give bit-equal weights when run twice."""
        state = self.snapshot()
        ends = []
        for _ in range(2):
            self.restore(state)
            for step in range(first, first + steps):
                self.step(step)
            ends.append({k: v.detach().clone() for k, v in self.learner.model.state_dict().items()})
        return all(self.torch.equal(ends[0][name], ends[1][name]) for name in ends[0])


def run_loop(
    build_model: Callable[[], Any],
    build_learner: Callable[[Any], Any],
    vocab: int,
    *,
    steps: int = 30,
    seed: int = 0,
) -> LoopResult:
    """``steps`` steps of the one-turn game, then the two resume checks (module docstring)."""
    import torch

    model = build_model()
    game = OneTurnGame(model, build_learner(model), vocab, seed)
    rewards, gaps = [], []
    for step in range(steps):
        reward, gap = game.step(step)
        rewards.append(reward)
        gaps.append(gap)
    plain = game.resumed_steps_equal(steps)
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        deterministic = game.resumed_steps_equal(steps + 2)
    finally:
        torch.use_deterministic_algorithms(was)
    return LoopResult(rewards, max(gaps), plain, deterministic)
