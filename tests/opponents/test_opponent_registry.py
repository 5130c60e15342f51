"""opponents.make: spec parsing and its errors."""

from __future__ import annotations

import pytest

import opponents
from strategic_arena.arena import play_match_sync


def test_parse_spec_types_values() -> None:
    name, params = opponents.parse_spec("mcts:simulations=100, uct_c=1.5,solve=true,seed=3")
    assert name == "mcts"
    assert params == {"simulations": 100, "uct_c": 1.5, "solve": True, "seed": 3}


@pytest.mark.parametrize(
    ("spec", "env_id", "message"),
    [
        ("wizard", "tic_tac_toe-v0", "unknown opponent 'wizard'"),
        ("mcts:sims=3", "tic_tac_toe-v0", "no parameter 'sims'; parameters: simulations"),
        ("mcts:simulations=many", "tic_tac_toe-v0", "not a valid int"),
        ("mcts:solve=maybe", "tic_tac_toe-v0", "not a valid bool"),
        ("mcts:simulations", "tic_tac_toe-v0", "expected key=value"),
        ("mcts:seed=1,seed=2", "tic_tac_toe-v0", "given twice"),
        ("nash", "tic_tac_toe-v0", "nash cannot play tic_tac_toe-v0"),
        ("hanabi_bot", "kuhn_poker-v0", "plays mini_hanabi-v0, simple_hanabi-v0"),
    ],
)
def test_bad_specs_have_clear_errors(spec: str, env_id: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        opponents.make(spec, env_id)


def test_random_opponent_is_seeded_by_spec_or_default() -> None:
    first = opponents.make("random", "connect_four-v0", seed=5)
    second = opponents.make("random:seed=5", "connect_four-v0", seed=99)
    assert first.name == "random" and second.name == "random:seed=5"
    one = play_match_sync(
        "connect_four-v0", [first, opponents.make("random", "connect_four-v0", seed=1)], 0
    )
    two = play_match_sync(
        "connect_four-v0", [second, opponents.make("random", "connect_four-v0", seed=1)], 0
    )
    assert one.history == two.history


def test_describe_lists_every_opponent() -> None:
    text = opponents.describe()
    for name in opponents.KINDS:
        assert text.count(f"{name} (") == 1


def test_top_level_equilibrium_policy_is_measured_by_openspiel() -> None:
    import pyspiel
    from open_spiel.python.algorithms.exploitability import exploitability

    policy = opponents.equilibrium_policy("leduc_holdem-v0")
    assert exploitability(pyspiel.load_game("leduc_poker"), policy) <= 1e-4
