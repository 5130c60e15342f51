"""One spec per game: the arena's tables derive from the specs and equal the hand-written ones."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import strategic_arena as sa
from opponents.registry import KINDS
from strategic_arena.arena.defaults import DEFAULT_OPPONENTS, PROTOCOLS, SOLVER_SUITE
from strategic_arena.arena.metrics import MARSHAL_PAPER, PaperReference
from strategic_arena.games import CURATED, get_spec
from strategic_arena.games.listing import Listing
from strategic_arena.games.tables import DerivedTable, facts
from strategic_arena.leaderboard.ladder import NUM_GAMES

# The tables as they were written by hand before they moved into the specs.
TTT, C4, KUHN, LEDUC, MINI, SIMPLE = (
    "tic_tac_toe-v0",
    "connect_four-v0",
    "kuhn_poker-v0",
    "leduc_holdem-v0",
    "mini_hanabi-v0",
    "simple_hanabi-v0",
)
CURATED_BEFORE = (TTT, C4, KUHN, LEDUC, MINI, SIMPLE)
SOLVER_SUITE_BEFORE = {
    TTT: "minimax",
    C4: "mcts:simulations=400",
    KUHN: "nash",
    LEDUC: "nash",
    MINI: "hanabi_bot",
    SIMPLE: "hanabi_bot",
}
DEFAULT_OPPONENTS_BEFORE = {
    TTT: ("random", "mcts:simulations=100"),
    C4: ("random", "mcts:simulations=10"),
    KUHN: ("random", "nash"),
    LEDUC: ("random", "nash"),
    MINI: ("hanabi_bot",),
    SIMPLE: ("hanabi_bot",),
}
MARSHAL_BEFORE = {
    TTT: ("mcts:simulations=100,rollouts=10", "mcts:simulations=1000,rollouts=10"),
    C4: ("mcts:simulations=10,rollouts=10", "mcts:simulations=100,rollouts=10"),
    KUHN: ("nash",),
    LEDUC: ("nash",),
    MINI: (),
    SIMPLE: (),
}
LADDER_BEFORE = {TTT: 100, C4: 40, KUHN: 400, LEDUC: 400, MINI: 100, SIMPLE: 100}
PAPER_BEFORE = {
    TTT: PaperReference((-1.0, -1.0), (1.0, 1.0)),
    C4: PaperReference((-1.0, -1.0), (1.0, 1.0)),
    KUHN: PaperReference((-0.301, -0.149), (-1 / 18, 1 / 18), ("nash",)),
    LEDUC: PaperReference((-1.124, -1.003), (-0.0856, 0.0856), ("nash",)),
    MINI: PaperReference((0.0, 0.0), (4.0, 4.0)),
    SIMPLE: PaperReference((0.0, 0.0), (6.0, 6.0)),
}
OPPONENT_GAMES_BEFORE = {
    "random": CURATED_BEFORE,
    "mcts": (TTT, C4),
    "minimax": (TTT,),
    "solver": (C4,),
    "nash": (KUHN, LEDUC),
    "cfr": (KUHN, LEDUC),
    "best_response": (KUHN, LEDUC),
    "hanabi_bot": (MINI, SIMPLE),
}


def _two_seat(table: dict[str, object]) -> dict[str, object]:
    """The entries of the games that existed before the specs held them."""
    return {env_id: value for env_id, value in table.items() if env_id in CURATED_BEFORE}


def test_derived_tables_equal_the_hand_written_ones() -> None:
    assert _two_seat(dict(SOLVER_SUITE)) == SOLVER_SUITE_BEFORE
    assert _two_seat(dict(DEFAULT_OPPONENTS)) == DEFAULT_OPPONENTS_BEFORE
    assert _two_seat(dict(PROTOCOLS["marshal"].opponents)) == MARSHAL_BEFORE
    assert PROTOCOLS["marshal"].env_ids[: len(CURATED_BEFORE)] == CURATED_BEFORE
    assert _two_seat(dict(NUM_GAMES)) == LADDER_BEFORE
    assert _two_seat(dict(MARSHAL_PAPER)) == PAPER_BEFORE
    # Curated order is kept: the report and the ladder list games in this order.
    assert list(SOLVER_SUITE)[: len(CURATED_BEFORE)] == list(CURATED_BEFORE)


def test_opponent_registry_reads_the_games_from_the_specs() -> None:
    for name, games in OPPONENT_GAMES_BEFORE.items():
        assert KINDS[name].envs[: len(games)] == games
        assert all(KINDS[name].plays(env_id) for env_id in games)
    assert KINDS["random"].plays("openspiel/blackjack")  # prefix, not a listed game
    assert not KINDS["nash"].plays(TTT)


def test_every_registered_game_names_a_solver_suite_entrant_that_plays_it() -> None:
    # Every spec states its entrant or why it has none: the curated menu and free-text games,
    # and the adapters of any OpenSpiel or TextArena game.
    generic = ["openspiel/blackjack", "textarena/SimpleNegotiation-v0"]
    for env_id in [*sa.list_envs(), *sa.list_text_envs(), *generic]:
        listing = get_spec(env_id).listing
        assert "not stated" not in facts(get_spec(env_id))["solver-suite entrant"]
        if listing.solver is None:  # allowed only when the spec says why (Hanabi, 3-5 players)
            assert listing.no_solver, f"{env_id} has no solver-suite entrant and says not why"
            assert env_id not in SOLVER_SUITE
            continue
        kind = listing.solver.partition(":")[0]
        assert kind in listing.opponents, (env_id, kind)
        for spec in (*listing.default_opponents, *listing.protocols.get("marshal", ())):
            assert KINDS[spec.partition(":")[0]].plays(env_id), (env_id, spec)


def test_a_derived_table_leaves_out_games_whose_value_is_none() -> None:
    table: DerivedTable[int] = DerivedTable(
        lambda spec: 1 if spec.listing.solver == "nash" else None
    )
    assert dict(table) == {KUHN: 1, LEDUC: 1}
    assert len(table) == 2 and KUHN in table and TTT not in table
    with pytest.raises(KeyError):
        table[TTT]


def test_the_default_listing_is_random_only_with_no_solver() -> None:
    generic = get_spec("openspiel/blackjack")
    assert dataclasses.replace(generic.listing, no_solver="") == Listing()
    assert generic.listing.solver is None and generic.listing.opponents == ("random",)
    assert "--base-url" in generic.listing.no_solver


def test_spec_says_rules_source_and_reward_range() -> None:
    assert get_spec(KUHN).rules_source == "OpenSpiel kuhn_poker"
    assert get_spec(KUHN).reward_range == (-2.0, 2.0)
    assert get_spec(TTT).reward_range == (-1.0, 1.0)
    assert get_spec(MINI).rules_source.startswith("OpenSpiel hanabi(colors=2,")


def test_import_stays_lazy_about_curated_games() -> None:
    curated_modules = sorted({path.split(":")[0] for path in CURATED.values()})
    code = (
        "import sys, strategic_arena, strategic_arena.arena.defaults, opponents.registry; "
        f"print(sorted(set({curated_modules!r}) & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_envs_shows_everything_one_spec_says(capsys: pytest.CaptureFixture[str]) -> None:
    from strategic_arena.cli import main

    assert main(["envs", KUHN]) == 0
    shown = dict(line.split(":", 1) for line in capsys.readouterr().out.splitlines())
    facts = {label: value.strip() for label, value in shown.items()}
    digest = get_spec(KUHN).prompt_version["digest"]
    assert facts["rules"] == "OpenSpiel kuhn_poker" and facts["seats"] == "2"
    assert facts["teams"] == "seat 0: team 0, seat 1: team 1"
    assert facts["reward range"] == "-2 to 2"
    assert facts["prompt version"] == f"default@{digest[:12]}"
    assert facts["solver-suite entrant"] == "nash"
    assert facts["default opponents"] == "random, nash"
    assert facts["protocols"] == "marshal: nash"
    assert facts["ladder games per pair"] == "400"
    assert main(["envs", "chess-v9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown env id 'chess-v9'" in err[0]


def test_envs_lists_the_curated_text_games_too(capsys: pytest.CaptureFixture[str]) -> None:
    from strategic_arena.cli import main

    assert main(["envs"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [
        *sa.list_envs(),
        *sa.list_text_envs(),
        "openspiel/<game_name>",
        "textarena/<EnvId>",
        "debate-v0(...)",
    ]
    assert "spiral_negotiation-v0" in listed
