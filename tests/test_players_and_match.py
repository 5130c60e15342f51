"""Players, the match loop, the CLI demo and the illegal-move policies."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pytest
from cases import CURATED
from gymnasium.utils.env_checker import check_env

import strategic_arena as sa
from strategic_arena.actions import ActionError
from strategic_arena.arena import play_match_sync
from strategic_arena.cli import main
from strategic_arena.players import HumanPlayer, RandomPlayer
from strategic_arena.turn import Decision, GameState, Player
from strategic_arena.wrappers import IllegalMovePolicy, TextActionWrapper, single_agent


class Scripted:
    """Plays the given action ids in order (an invalid id or None tests forfeits)."""

    def __init__(self, actions: list[int | None], name: str = "scripted") -> None:
        self.name = name
        self.actions = list(actions)

    async def act(self, state: GameState, seat: int) -> Decision:
        action = self.actions.pop(0)
        error = None if action is not None else ActionError("no_action", "scripted")
        return Decision(action=action, text=str(action), error=error)


def test_players_satisfy_the_protocol() -> None:
    assert isinstance(RandomPlayer(0), Player)
    assert isinstance(HumanPlayer(), Player)
    assert isinstance(Scripted([]), Player)


@pytest.mark.parametrize("env_id", CURATED)
def test_play_match_is_seeded_and_replays_exactly(env_id: str) -> None:
    seats = sa.get_spec(env_id).num_players  # Hanabi with 3-5 players: a player per seat
    first = play_match_sync(env_id, [RandomPlayer(1 + i) for i in range(seats)], seed=11)
    again = play_match_sync(env_id, [RandomPlayer(1 + i) for i in range(seats)], seed=11)
    assert first.history == again.history and first.returns == again.returns
    assert first.status == "complete" and first.moves
    # Replay from the seed and the recorded moves through a fresh env.
    env = sa.make(env_id)
    env.reset(seed=first.seed)
    for move in first.moves:
        assert env.agent_name_mapping[env.agent_selection] == move.seat
        assert env.legal_action_texts(env.agent_selection)[move.action] == move.action_text  # type: ignore[index]
        env.step(move.action)
    assert tuple(env.returns()) == first.returns
    assert tuple(env.spiel_state.history()) == first.history


def test_forfeit_on_invalid_move() -> None:
    record = play_match_sync("tic_tac_toe-v0", [Scripted([4, 4]), Scripted([0])], seed=0)
    assert record.status == "forfeit" and record.forfeited_by == 0
    assert record.returns == (-1.0, 1.0)
    assert record.moves[-1].error is not None and record.moves[-1].action is None
    record = play_match_sync("kuhn_poker-v0", [Scripted([None]), Scripted([])], seed=0)
    assert record.forfeited_by == 0 and record.moves[0].error.kind == "no_action"  # type: ignore[union-attr]


def test_wrong_number_of_players() -> None:
    with pytest.raises(ValueError, match="2 seats"):
        play_match_sync("tic_tac_toe-v0", [RandomPlayer(0)], seed=0)


def test_human_player_reads_until_legal() -> None:
    lines = iter(["castle", "O(1,1)", "top left"])
    shown: list[str] = []
    human = HumanPlayer(read_line=lambda _prompt: next(lines), write=shown.append)
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    decision = asyncio.run(human.act(GameState("tic_tac_toe-v0", env.spiel_state.clone()), 0))
    assert decision.action == 0 and decision.attempts == 3
    assert [e.kind for e in decision.errors] == ["unknown_action", "illegal_action"]
    assert any("Legal actions" in line for line in shown)
    assert [attempt.response for attempt in decision.tries] == ["castle", "O(1,1)", "top left"]
    assert decision.tries[0].feedback in shown and decision.tries[-1].error is None


def test_cli_demo_prints_prompts_and_moves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "--- system ---" in out and "--- user ---" in out and ">>> seat 0 plays" in out
    assert "=== game over" in out
    assert (
        main(["play", "tic_tac_toe-v0", "--players", "random", "random:seed=5", "--no-prompts"])
        == 0
    )
    assert "--- user ---" not in capsys.readouterr().out


def test_cli_errors_are_clear(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "chess-v0"]) == 2
    assert "unknown env id" in capsys.readouterr().err
    assert main(["play", "tic_tac_toe-v0", "--players", "random"]) == 2
    assert main(["play", "tic_tac_toe-v0", "--players", "random", "wizard"]) == 2
    assert "unknown opponent" in capsys.readouterr().err


def test_console_script_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "strategic_arena.cli", "envs"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(env_id in result.stdout for env_id in CURATED)


@pytest.mark.parametrize("seat", [0, 1])
@pytest.mark.parametrize("env_id", CURATED)
def test_single_agent_view_passes_check_env(env_id: str, seat: int) -> None:
    env = single_agent(env_id, opponent=RandomPlayer(3), seat=seat)
    check_env(env, skip_render_check=True)


def test_single_agent_rewards_sum_to_the_return() -> None:
    env = single_agent("mini_hanabi-v0", seat=1)
    rng = np.random.default_rng(0)
    for seed in range(20):
        observation, _ = env.reset(seed=seed)
        total, terminated = 0.0, False
        while not terminated:
            action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
            observation, reward, terminated, _, _ = env.step(action)
            total += reward
        assert total == env.env.returns()[1]


def test_single_agent_illegal_action_forfeits() -> None:
    env = single_agent("tic_tac_toe-v0", seat=0)
    env.reset(seed=0)
    env.step(4)
    _, reward, terminated, _, info = env.step(4)
    assert terminated and reward == -1.0 and info["error"].kind == "illegal_action"


def answer(text: str) -> str:
    return f"<think>thinking</think><answer>{text}</answer>"


def test_text_wrapper_forfeit_policy() -> None:
    env = TextActionWrapper(sa.make("tic_tac_toe-v0"), policy="forfeit")
    env.reset(seed=0)
    env.step(answer("center"))
    assert env.infos["player_0"]["action"].id == 4
    env.step(answer("X(0,0)"))  # O wrote X's mark
    info = env.infos["player_1"]
    assert info["error"].kind == "illegal_action" and info["action"] is None
    assert all(env.terminations.values()) and env.unwrapped.returns() == [1.0, -1.0]


def test_text_wrapper_retry_policy_then_forfeit() -> None:
    env = TextActionWrapper(sa.make("kuhn_poker-v0"), policy="retry:2")
    env.reset(seed=0)
    for attempt in (1, 2):
        env.step("no tags at all")
        info = env.infos["player_0"]
        assert env.agent_selection == "player_0" and info["attempt"] == attempt
        assert "feedback" in info and info["error"].kind == "no_action"
    env.step("still nothing")
    assert all(env.terminations.values()) and len(env.infos["player_0"]["errors"]) == 3
    env.reset(seed=0)
    env.step("bad")
    env.step(answer("check"))
    assert env.infos["player_0"]["action"].text == "check" and env.infos["player_0"]["attempt"] == 2


def test_text_wrapper_random_policy_is_seeded() -> None:
    picks = []
    for _ in range(2):
        env = TextActionWrapper(sa.make("connect_four-v0"), policy="random")
        env.reset(seed=4)
        env.step(answer("column 9"))
        picks.append(env.infos["player_0"]["action"].id)
        assert env.infos["player_0"]["error"].kind == "unknown_action"
        assert env.agent_selection == "player_1"
    assert picks[0] == picks[1]


def test_policy_parsing() -> None:
    assert IllegalMovePolicy.parse("retry:3") == IllegalMovePolicy("retry", 3)
    with pytest.raises(ValueError, match="illegal-move policy"):
        IllegalMovePolicy.parse("retry")


def test_text_wrapper_retry_does_not_repeat_rewards() -> None:
    env = TextActionWrapper(sa.make("mini_hanabi-v0"), policy="retry:1")
    rng = np.random.default_rng(0)
    for seed in range(10):
        env.reset(seed=seed)
        seen = dict.fromkeys(env.possible_agents, 0.0)
        retried: set[tuple[str, int]] = set()
        turn = 0
        for agent in env.agent_iter(500):
            _, reward, terminated, _, _ = env.last()
            seen[agent] += reward
            if terminated:
                env.step(None)
                continue
            if reward and (agent, turn) not in retried:  # a bad answer first, then a move
                retried.add((agent, turn))
                env.step("nonsense")
                continue
            menu = env.unwrapped.legal_action_texts(agent)
            env.step(answer(menu[int(rng.choice(list(menu)))]))
            turn += 1
        assert [seen[a] for a in env.possible_agents] == env.unwrapped.returns()


class Explorer:
    """Plays its copy of the state forward before answering (it must not affect the match)."""

    name = "explorer"

    async def act(self, state: GameState, seat: int) -> Decision:
        legal = state.legal_actions(seat)
        state.spiel_state.apply_action(legal[0])
        return Decision(action=legal[0], text="")


def test_a_player_mutating_its_copy_changes_nothing() -> None:
    record = play_match_sync("tic_tac_toe-v0", [Explorer(), RandomPlayer(1)], seed=0)
    assert record.status == "complete"
    record = play_match_sync("leduc_holdem-v0", [Explorer(), Explorer()], seed=0)
    assert record.status == "complete"


def test_cli_plays_generic_openspiel_games(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "openspiel/tic_tac_toe", "--no-prompts"]) == 0
    assert "=== game over" in capsys.readouterr().out


def test_single_agent_takes_opponent_specs_like_opponents_make() -> None:
    env = single_agent("tic_tac_toe-v0", opponent="random", seat=1)
    observation, _ = env.reset(seed=3)
    assert env.opponent.name == "random"
    terminated = False
    while not terminated:
        legal = np.flatnonzero(observation["action_mask"])
        observation, _, terminated, _, _ = env.step(int(legal[0]))
    env.close()


def test_single_agent_refuses_what_is_not_an_opponent_at_once() -> None:
    with pytest.raises(ValueError, match="unknown opponent 'nonsense'"):
        single_agent("tic_tac_toe-v0", opponent="nonsense")
    with pytest.raises(ValueError, match="cannot play"):
        single_agent("tic_tac_toe-v0", opponent="nash")
    with pytest.raises(TypeError, match="opponent must be a Player"):
        single_agent("tic_tac_toe-v0", opponent=42)  # type: ignore[arg-type]


def _episode(env: object, seed: int) -> list[str]:
    """The observation texts of one episode where the agent always plays its first legal move."""
    observation, _ = env.reset(seed=seed)  # type: ignore[attr-defined]
    texts, terminated = [observation["text"]], False
    while not terminated:
        legal = np.flatnonzero(observation["action_mask"])
        observation, _, terminated, _, _ = env.step(int(legal[0]))  # type: ignore[attr-defined]
        texts.append(observation["text"])
    return texts


def test_single_agent_spec_opponents_replay_exactly_from_the_reset_seed() -> None:
    # MCTS with few simulations is random: only a reseeded opponent makes seeded episodes equal.
    env = single_agent("tic_tac_toe-v0", opponent="mcts:simulations=4", seat=1)
    runs = [_episode(env, seed) for seed in (5, 5, 6, 5)]
    assert runs[0] == runs[1] == runs[3]
    other = single_agent("tic_tac_toe-v0", opponent="mcts:simulations=4", seat=1)
    assert _episode(other, 5) == runs[0]  # a fresh env with the same seed: the same episode
    assert len({tuple(_episode(env, seed)) for seed in range(8)}) > 1  # seeds do matter
    env.close()
    other.close()


def test_single_agent_render_shows_only_the_seat_view() -> None:
    # Deals that differ only in the opponent's card must render identically for seat 0.
    env = single_agent("kuhn_poker-v0", opponent="random", seat=0)
    seen: dict[str, set[str]] = {}
    opponent_cards: dict[str, set[str]] = {}
    for seed in range(40):
        observation, _ = env.reset(seed=seed)
        state = env.env.spiel_state
        mine = state.information_state_string(0)
        seen.setdefault(mine, set()).add(env.render() or "")
        opponent_cards.setdefault(mine, set()).add(state.information_state_string(1))
        assert env.render() == observation["text"]
    assert any(len(cards) > 1 for cards in opponent_cards.values())
    assert all(len(texts) == 1 for texts in seen.values())
    env.close()
