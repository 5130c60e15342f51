"""Hanabi with 3 to 5 players: OpenSpiel's rules and returns, the relative-seat grammar, the
information boundary, the listing (no solver-suite entrant) and the conformance check."""

from __future__ import annotations

import re
from pathlib import Path

import pyspiel
import pytest

import strategic_arena as sa
from strategic_arena.actions import Action, ActionError
from strategic_arena.arena.endpoint import ModelOptions
from strategic_arena.arena.evaluate import check_suite_covers, default_envs, evaluate
from strategic_arena.games.hanabi import parse_observation
from strategic_arena.games.hanabi_players import HanabiPlayers
from strategic_arena.testing import check_game

IDS = ("hanabi_3p-v0", "hanabi_4p-v0", "hanabi_5p-v0")
CARD = re.compile(r"\b[RYGWB][1-5]\b")
#: The standard game, written out: what SPIN-Bench's Hanabi and the HLE's defaults are.
FULL = {"colors": 5, "ranks": 5, "max_information_tokens": 8, "max_life_tokens": 3}


def _spec(env_id: str) -> HanabiPlayers:
    spec = sa.get_spec(env_id)
    assert isinstance(spec, HanabiPlayers)
    return spec


def _deal(spec: HanabiPlayers, hands: list[list[str]]) -> pyspiel.State:
    """A state dealt ``hands`` (seat 0's cards first, as OpenSpiel deals them)."""
    state = spec.game.new_initial_state()
    for card in (card for hand in hands for card in hand):
        action = "RYGWB".index(card[0]) * 5 + int(card[1]) - 1
        assert state.action_to_string(action) == f"(Deal {card})"
        state.apply_action(action)
    assert not state.is_chance_node()
    return state


@pytest.mark.parametrize(
    ("env_id", "players", "hand"), [(IDS[0], 3, 5), (IDS[1], 4, 4), (IDS[2], 5, 4)]
)
def test_the_ids_are_the_full_game_with_its_standard_hand_sizes(
    env_id: str, players: int, hand: int
) -> None:
    spec = _spec(env_id)
    assert dict(spec.openspiel_params) == {**FULL, "hand_size": hand, "players": players}
    assert spec.num_players == players and spec.teams == (0,) * players
    assert spec.reward_range == (0.0, 25.0) and spec.optimum == 25.0
    # OpenSpiel's own action count: discards, plays, then colour and rank hints per target.
    assert (
        spec.grammar.num_actions
        == spec.game.num_distinct_actions()
        == 2 * hand + (players - 1) * 10
    )


@pytest.mark.parametrize("env_id", IDS)
def test_every_move_text_and_openspiel_string_reads_back_as_its_action(env_id: str) -> None:
    spec = _spec(env_id)
    state = spec.game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    texts = {action: spec.grammar.text(action) for action in range(spec.grammar.num_actions)}
    assert len(set(texts.values())) == len(texts)  # no two moves read alike
    for action, text in texts.items():
        menu = {action: text}
        assert spec.grammar.parse(text, menu) == Action(action, text)
        # OpenSpiel's own string: "(Reveal player +2 color R)", "(Play 1)", ...
        assert spec.grammar.parse(state.action_to_string(action), menu) == Action(action, text)


def test_hint_texts_name_the_target_by_relative_seat() -> None:
    grammar = _spec("hanabi_4p-v0").grammar
    everything = {a: grammar.text(a) for a in range(grammar.num_actions)}
    assert grammar.text(8) == "hint player +1 red"
    assert grammar.text(13) == "hint player +2 red"
    assert grammar.text(8 + 15 + 10) == "hint player +3 rank 1"
    assert grammar.parse("clue +2 reds", everything) == Action(13, "hint player +2 red")
    assert grammar.parse("Tell player +3 about the 1s", everything) == Action(
        33, "hint player +3 rank 1"
    )
    # No target, an absolute seat, or a seat beyond the table: ambiguous, so no move.
    for answer in ("hint red", "hint player 2 red", "hint player +4 red", "hint +1 +2 red"):
        outcome = grammar.parse(answer, everything)
        assert isinstance(outcome, ActionError) and outcome.kind == "unknown_action", answer


def _scripted(env: sa.TextGameEnv) -> list[str]:
    """A fixed script: play a card hinted as a 1 (while two lives are left); else hint the next
    player's 1s; else discard card 0; else the first legal move. Moves go through their text."""
    played: list[str] = []
    for agent in env.agent_iter():
        _, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        seat = env.agents.index(agent)
        menu = env.legal_action_texts(agent)
        seen = parse_observation(env.spiel_state.observation_string(seat))
        wanted = [
            f"play {i}"
            for i, card in enumerate(seen.hands[0])
            if card.hinted_rank == 1 and seen.lives > 1  # never risk the last life
        ]
        wanted += ["hint player +1 rank 1", "discard 0", next(iter(menu.values()))]
        text = next(text for text in wanted if text in menu.values())
        move = env.spec.grammar.parse(text, menu)
        assert isinstance(move, Action)
        played.append(text)
        env.step(move.id)
    return played


def test_a_scripted_three_player_game_pays_openspiels_returns() -> None:
    env = sa.make("hanabi_3p-v0")
    env.reset(seed=5)
    played = _scripted(env)
    history = env.spiel_state.history()
    # The same deals and moves straight through OpenSpiel, loaded from its own parameters.
    game = pyspiel.load_game("hanabi", {**FULL, "hand_size": 5, "players": 3})
    state = game.new_initial_state()
    moves = []
    for action in history:
        if not state.is_chance_node():
            moves.append(state.action_to_string(action))
        state.apply_action(action)
    assert state.is_terminal()
    assert env.returns() == list(state.returns())
    assert state.returns()[0] > 0  # the script scores: the comparison is not of zeros
    assert len(moves) == len(played)
    assert [_spec("hanabi_3p-v0").grammar.parse(m, {}) for m in moves] == [
        _spec("hanabi_3p-v0").grammar.parse(t, {}) for t in played
    ]


@pytest.mark.parametrize("env_id", IDS)
def test_a_seats_view_never_depends_on_its_own_cards(env_id: str) -> None:
    spec = _spec(env_id)
    n, size = spec.players, spec.hand_size
    pool = [f"{c}{r}" for r in (1, 2, 3, 4) for c in "RYGWB"]
    hands = [pool[seat * size : (seat + 1) * size] for seat in range(n)]
    for seat in range(n):
        other = [list(hand) for hand in hands]
        other[seat] = ["B5", "W5", "G5", "Y5", "R5"][:size]  # five cards in no other hand
        first, second = _deal(spec, hands), _deal(spec, other)
        # The same public moves in both: a round of hints, none of them to `seat`.
        for _ in range(n):
            actor = first.current_player()
            hint = min(
                action
                for action in first.legal_actions()
                if action >= 2 * size
                and (actor + spec.grammar.decode_target(action)[2]) % n != seat
            )
            first.apply_action(hint)
            second.apply_action(hint)
        assert spec.observation_text(first, seat) == spec.observation_text(second, seat)
        own = spec.observation_text(first, seat).split("Your hand")[1].split("Last moves")[0]
        assert not CARD.search(own)
        for viewer in range(n):
            if viewer != seat:  # every other seat sees the changed hand
                assert spec.observation_text(first, viewer) != spec.observation_text(second, viewer)


def test_no_solver_plays_them_and_eval_without_a_model_says_why(tmp_path: Path) -> None:
    for env_id in IDS:
        listing = _spec(env_id).listing
        assert listing.solver is None and "two-player" in listing.no_solver
        assert listing.opponents == ("random",) and listing.ladder_games is None
    with pytest.raises(ValueError, match="hanabi_3p-v0: no built-in player") as error:
        check_suite_covers(["hanabi_3p-v0"])
    assert "--base-url" in str(error.value) and "\n" not in str(error.value)
    db = tmp_path / "arena.sqlite"
    with pytest.raises(ValueError, match="solver suite plays no hanabi_4p-v0"):
        evaluate(db, ModelOptions(), envs=["hanabi_4p-v0"], num_games=2)
    assert not db.exists()
    # eval with neither --envs nor a model plays the suite's games; a model plays them all.
    two_player = ["tic_tac_toe-v0", "connect_four-v0", "kuhn_poker-v0", "leduc_holdem-v0"]
    two_player += ["mini_hanabi-v0", "simple_hanabi-v0"]
    assert default_envs(None) == two_player
    assert default_envs("http://127.0.0.1:1/v1") == [*two_player, *IDS]


@pytest.mark.parametrize("env_id", IDS)
def test_the_conformance_check_passes(env_id: str) -> None:
    result = check_game(env_id, num_cycles=40, round_trip_games=1, max_decisions=15)
    assert result.env_id == env_id and result.decisions > 0
    assert result.eval_games == 0  # no solver-suite entrant: the default eval is refused


def test_a_served_model_plays_every_seat_of_four_player_hanabi_over_http(tmp_path: Path) -> None:
    """A model behind ``--base-url`` takes every seat against random, and self-play; every
    stored game pays one shared score and replays."""
    pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
    from strategic_arena.arena.replay import replay_game
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.cli import main
    from strategic_arena.serve import PlayerServer

    db = tmp_path / "arena.sqlite"
    with PlayerServer("random", model="served") as server:
        args = ["eval", "--db", str(db), "--quiet", "--no-report", "--base-url", server.base_url]
        args += ["--envs", "hanabi_4p-v0", "--opponents", "random", "--num-games", "4"]
        assert main([*args, "--seed", "1"]) == 0
    with ResultsStore(db) as store:
        games = store.games()
        # Against random: the served model in each of the 4 seats; then self-play.
        served_seats = sorted(
            tuple(seat for seat, name in enumerate(game.players) if name == "served")
            for game in games
        )
        assert served_seats == sorted([(0,), (1,), (2,), (3,), *[(0, 1, 2, 3)] * 4])
        for game in games:
            assert game.status == "complete" and len(set(game.returns)) == 1  # one shared score
            assert tuple(replay_game(store, game.id).env.returns()) == game.returns
