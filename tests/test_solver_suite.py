"""The README's ``eval`` (no ``--base-url``: the solver suite served) works on every game."""

from __future__ import annotations

from pathlib import Path

import pytest

import strategic_arena as sa
from strategic_arena.arena.endpoint import ModelOptions, checked_entrant, served_endpoint
from strategic_arena.arena.evaluate import check_suite_covers, evaluate


def test_the_default_eval_preflight_passes_on_every_registered_game() -> None:
    """Each registered game: the served suite lists its model and answers the first decision.

    A game whose spec names no solver-suite entrant (or one that cannot play it) fails here,
    not in the README's command.
    """
    envs = [env_id for env_id in sa.list_envs() if sa.get_spec(env_id).listing.solver]
    assert len(envs) >= 6  # every two-player curated game
    check_suite_covers(envs)
    with served_endpoint(ModelOptions()) as (base_url, model):
        assert model == "solver-suite"
        for env_id in envs:
            entrant = checked_entrant(ModelOptions(), base_url, model, 0, env_id)
            assert entrant.name == "solver-suite"


def test_a_game_outside_the_suite_is_refused_before_anything_is_stored(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    with pytest.raises(ValueError, match="solver suite plays no openspiel/blackjack") as error:
        evaluate(db, ModelOptions(), envs=["openspiel/blackjack"], num_games=2)
    assert "--base-url" in str(error.value)
    assert not db.exists()
