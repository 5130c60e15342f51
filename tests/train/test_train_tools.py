"""The trainer with tool-call answers: the play call is the action, its tokens the training data."""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.actions import ActionError  # noqa: E402
from strategic_arena.tools import read_tool_calls  # noqa: E402
from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402


def test_tool_calls_are_the_actions_and_the_learner_trains_on_them(
    tiny_overrides: Callable[..., list[str]],
) -> None:
    cfg = load_config(None, tiny_overrides("answer.style=tools", "games.episodes_per_game=16"))
    trainer = Trainer(cfg)
    episodes = trainer.generate(0)
    turns = [turn for episode in episodes for turn in episode.turns]
    valid = [turn for turn in turns if turn.error_kind is None]
    assert valid, "a random tiny policy calls play now and then"
    tokenizer = trainer.tokenizer
    for turn in valid:  # the call, exactly as generated, is what was played
        assert tokenizer.decode(turn.response_ids, skip_special_tokens=True) == turn.text
        answer = read_tool_calls(turn.text, strict=False)
        assert not isinstance(answer, ActionError) and len(answer.moves) >= 1
    trainer.score(episodes)
    trainer.advantage(episodes)
    before = [p.detach().clone() for p in trainer.learner.model.parameters()]
    trainer.update(episodes, 0)
    after = list(trainer.learner.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
