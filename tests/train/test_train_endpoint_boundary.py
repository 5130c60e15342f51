"""The trainer's endpoint opponents receive only what their seat may know.

The same recording endpoint and strong form as ``tests/test_information_boundary.py``, with the
player the trainer builds for an endpoint entry of its opponent pool, over all six games; then a
real rollout step against that endpoint sends nothing but seat information.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.players import GAME_HEADER
from strategic_arena.train.config import load_config
from strategic_arena.train.loop.trainer import Trainer
from tests.test_information_boundary import (
    GAMES,
    IMPERFECT,
    RecordingEndpoint,
    assert_hidden_cards_change_nothing,
)
from tests.train.conftest import TINY


@pytest.fixture(scope="module")
def recorder() -> Iterator[RecordingEndpoint]:
    endpoint = RecordingEndpoint()
    yield endpoint
    endpoint.close()


@pytest.fixture(scope="module")
def trainer(recorder: RecordingEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Trainer:
    output = tmp_path_factory.mktemp("run")
    overrides = [
        *TINY,
        f"run.output_dir={Path(output) / 'run'}",
        f"games.ids=[{', '.join(GAMES)}]",
        "games.episodes_per_game=2",
        "games.self_play_weight=0",
        f"games.opponents=[{{spec: recorder, base_url: '{recorder.base_url}'}}]",
        # The endpoint honours max_tokens as vLLM does: room for its whole answer (about 10
        # words), so its moves stay legal and the games run long enough to compare.
        "sampling.max_tokens=32",
    ]
    return Trainer(load_config(None, overrides))


@pytest.mark.parametrize("env_id", GAMES)
def test_endpoint_opponents_send_nothing_hidden(
    recorder: RecordingEndpoint, trainer: Trainer, env_id: str
) -> None:
    (entry,) = trainer.pool.entries
    assert_hidden_cards_change_nothing(
        recorder, env_id, lambda: trainer.opponents(entry, env_id, 1, 0)
    )


def test_a_rollout_step_sends_only_seat_information(
    recorder: RecordingEndpoint, trainer: Trainer
) -> None:
    recorder.requests.clear()
    episodes = trainer.generate(0)
    assert {episode.env_id for episode in episodes} == set(GAMES)
    assert all(episode.opponent.startswith("recorder@") for episode in episodes)
    assert recorder.requests
    for request in recorder.requests:
        information = json.loads(dict(request.headers)[GAME_HEADER.lower()])
        assert (information["history"] is None) == (information["env_id"] in IMPERFECT)
