"""The episode bank in the trainer: balanced batches from banked games, and an exact resume.

A tiny run on Kuhn Poker (short games) and Tic-Tac-Toe (longer ones) draws each step's batch
from the bank; the checkpoint carries the bank, so a run resumed from it draws the same batches
and ends with the same weights as an unbroken run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402
from strategic_arena.train.policy.checkpoint import checkpoint_dir, load_trainer_state  # noqa: E402
from tests.train.test_train_resume import _comparable  # noqa: E402

Overrides = Callable[..., list[str]]

#: Two games of different lengths, a bank that needs more than one round to fill, keeps what it
#: does not draw (so the checkpoint holds episodes), with strata and partial coverage.
BANKED = (
    "games.ids=[kuhn_poker-v0,tic_tac_toe-v0]",
    "games.episodes_per_game=3",
    "advantage.type=rloo",
    "bank={batch_unit: turns, batch_size: 8, over_collection: 1.5, strata: 2, coverage: 0.5}",
)


def test_a_step_trains_on_a_batch_drawn_from_the_bank(tiny_overrides: Overrides) -> None:
    trainer = Trainer(
        load_config(None, tiny_overrides(*BANKED, "bank.batch_size=12", "run.steps=1"))
    )
    metrics = trainer.train_step()
    # 12 turns in the batch, 6 per game; the update trains on exactly those.
    assert metrics["bank/batch_turns"] == 12 == metrics["train/trainable_turns"]
    assert metrics["bank/turn_share/kuhn_poker-v0"] == 0.5
    assert metrics["bank/turn_share/tic_tac_toe-v0"] == 0.5
    # The bank wanted ceil(1.5 * 12) = 18 units, 9 per game. A Kuhn game has at most 3 turns,
    # ceil(3 * 0.5) = 2 units at coverage 0.5, so a round of 3 gives at most 6: the step had
    # to play more rounds, every game of each round, and kept what it did not draw.
    played = metrics["train/episodes"]
    assert metrics["bank/rounds"] >= 2
    assert played == 6 * metrics["bank/rounds"]
    assert metrics["bank/added"] == played - _untrainable(trainer)
    assert metrics["bank/episodes"] == metrics["bank/added"] - metrics["bank/drawn"]
    assert trainer.bank is not None and len(trainer.bank) == metrics["bank/episodes"]


def _untrainable(trainer: Trainer) -> int:
    """Games of the step with no trainable turn (the bank does not keep them)."""
    return sum(
        not any(t.eligible and t.response_ids for t in e.turns) for e in trainer.last_episodes
    )


def test_resume_restores_the_bank_and_continues_exactly(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    first = Trainer(
        load_config(None, tiny_overrides(*BANKED, "run.steps=2", "run.checkpoint_every=2"))
    )
    first.train()
    saved = checkpoint_dir(tmp_path / "run", 2)
    assert first.bank is not None and len(first.bank) > 0  # the checkpoint has episodes to carry
    assert load_trainer_state(saved)["bank"] == first.bank.state_dict()

    resumed = Trainer(
        load_config(None, tiny_overrides(*BANKED, "run.steps=3", f"run.resume={saved}"))
    )
    assert resumed.bank is not None and resumed.bank.state_dict() == first.bank.state_dict()
    after_resume = _comparable(resumed.train_step())

    unbroken = Trainer(
        load_config(
            None, [*tiny_overrides(*BANKED, "run.steps=3"), f"run.output_dir={tmp_path / 'b'}"]
        )
    )
    for _ in range(3):
        after_unbroken = _comparable(unbroken.train_step())

    assert after_resume == after_unbroken
    assert resumed.bank.state_dict() == unbroken.bank.state_dict()  # type: ignore[union-attr]
    for (name, a), b in zip(
        resumed.learner.model.named_parameters(),
        unbroken.learner.model.parameters(),
        strict=True,
    ):
        assert torch.equal(a, b), name


def test_the_sync_check_reads_only_the_turns_of_the_steps_own_weights(
    tiny_overrides: Overrides,
) -> None:
    # A bank hands step 1 turns of version 0 beside its own: their recorded log-probs belong to
    # older weights (here shifted by -5), so only version 1's turns may enter the ratio, ~1.
    trainer = Trainer(load_config(None, tiny_overrides("ppo.old_logprobs=learner", "run.steps=1")))
    episodes = trainer.generate(0)
    trainer.score(episodes)
    trainer.advantage(episodes)
    for index, episode in enumerate(episodes):
        for turn in episode.turns:
            turn.weight_version = index % 2
            if turn.weight_version == 0:
                turn.logprobs = [value - 5.0 for value in turn.logprobs]
    assert {t.weight_version for t in trainer.trainable_turns(episodes)} == {0, 1}
    metrics = trainer.update(episodes, 1)
    assert metrics["train/logprob_ratio"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["train/logprob_max_abs_diff"] < 1e-3
