"""The curated TextArena entries: paper settings, golden prompts, the match loop and the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ta = pytest.importorskip("textarena", reason="the [textarena] extra is not installed")

import strategic_arena as sa  # noqa: E402
from strategic_arena.actions import TEXT_MOVE, Action  # noqa: E402
from strategic_arena.arena.match import play_match_sync  # noqa: E402
from strategic_arena.arena.replay import replay_game  # noqa: E402
from strategic_arena.arena.store import ResultsStore  # noqa: E402
from strategic_arena.games import textarena_games  # noqa: E402
from strategic_arena.games.codenames_words import (  # noqa: E402
    PACKAGED_WORDS,
    codenames_word_source,
)
from strategic_arena.players import RandomPlayer  # noqa: E402
from strategic_arena.prompting import render_messages  # noqa: E402
from strategic_arena.styles import STYLES, get_style  # noqa: E402

GOLDEN = Path(__file__).parent.parent / "golden"
#: The styles that can play a free-text game (``spin_bench`` answers with menu ids).
TEXT_STYLES = [name for name in STYLES if not get_style(name).menu_only]


@pytest.fixture(autouse=True)
def packaged_codenames_words(monkeypatch: pytest.MonkeyPatch) -> None:
    """Codenames dealt from the package's words, whatever NLTK data the machine has.

    The golden prompts pin those boards; where NLTK's corpus is installed the entry deals from
    it instead (``test_codenames_deals_from_nltk_where_its_corpus_is``).
    """
    monkeypatch.setattr(textarena_games, "codenames_word_source", lambda: "package")


#: Every curated entry plays here (Codenames from the package's words offline).
PLAYABLE = sa.list_text_envs()


def golden_views(env_id: str) -> list[sa.SeatView]:
    """The first decision of seed 0, and the decision after three sample moves of seed 1."""
    env = sa.make(env_id)
    env.reset(seed=0)
    first = env.seat_view(env.agent_selection)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    moves = env.spec.sample_moves
    for _ in range(3):
        if env.terminations[env.agent_selection]:
            break
        env.step(moves[int(rng.integers(len(moves)))])
    return [first, env.seat_view(env.agent_selection)]


def rendered(env_id: str, style: str) -> str:
    parts = []
    for number, view in enumerate(golden_views(env_id)):
        for message in render_messages(env_id, view, style):
            parts.append(f"===== decision {number} / {message['role']} =====\n{message['content']}")
    return "\n".join(parts) + "\n"


@pytest.mark.parametrize("style", TEXT_STYLES)
@pytest.mark.parametrize("env_id", PLAYABLE)
def test_golden_prompt(env_id: str, style: str, update_golden: bool) -> None:
    path = GOLDEN / env_id / f"{style}.txt"
    text = rendered(env_id, style)
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"missing {path}; run pytest --update-golden"
    assert text == path.read_text(encoding="utf-8"), (
        f"prompt changed: run pytest {__file__} --update-golden and review the diff of {path}"
    )


@pytest.mark.parametrize("env_id", PLAYABLE)
def test_prompt_states_rules_view_and_a_valid_example(env_id: str) -> None:
    spec = sa.get_spec(env_id)
    view = golden_views(env_id)[0]
    with pytest.raises(ValueError, match="only menu games have"):
        render_messages(env_id, view, "spin_bench")
    for style in TEXT_STYLES:
        system, user = render_messages(env_id, view, style)
        assert spec.rules in system["content"]
        assert view.text in user["content"]
        assert "# Legal actions" not in user["content"]  # no menu: moves are texts
        example = system["content"].split("Example:\n", 1)[1]
        assert sa.validate(env_id, example, {}, style) == Action(TEXT_MOVE, spec.example), style


@pytest.mark.parametrize(
    ("env_id", "setting"),
    [
        ("spiral_negotiation-v0", "The game lasts for 10 turns in total."),
        ("spiral_kuhn_poker-v0", "You are Player 1 in a 5 round game of Kuhn Poker."),
        ("spiral_pig_dice-v0", "First to 50 points wins"),
        ("spiral_truth_and_deception-v0", "You will have a conversation for 6 turns."),
        ("spiral_snake-v0", "2-Player Snake on a 5×5 grid."),
        ("mindgames_colonel_blotto-v0", "Units to allocate: 20"),
        ("mindgames_three_player_ipd-v0", "The match lasts 5 rounds."),
    ],
)
def test_the_paper_setting_reaches_textarena(env_id: str, setting: str) -> None:
    env = sa.make(env_id)
    env.reset(seed=0)
    assert setting in env.observe(env.agent_selection)["text"]


def test_the_ipd_entry_has_three_chat_turns_a_round() -> None:
    env = sa.make("mindgames_three_player_ipd-v0")
    env.reset(seed=0)
    assert len(env.possible_agents) == 3
    assert "converse freely for the next 3 rounds" in env.observe("player_0")["text"]


def test_curated_negotiation_is_textarena_with_spirals_wrapper() -> None:
    # SPIRAL wrapped the raw env in LLMObservationWrapper: the whole conversation is observed.
    moves = ["[Offer: 2 Wheat -> 1 Ore]", "Maybe later. [Deny]", "[Offer: 1 Sheep -> 1 Wood]"]
    for seed in (0, 3):
        direct = ta.wrappers.LLMObservationWrapper(env=ta.make("SimpleNegotiation-v0-raw"))
        direct.reset(num_players=2, seed=seed)
        expected, done, ply = [], False, 0
        while not done:
            expected.append(direct.get_observation())
            done, _ = direct.step(action=moves[ply % 3])
            ply += 1
        rewards, _ = direct.close()
        env = sa.make("spiral_negotiation-v0")
        env.reset(seed=seed)
        seen, ply = [], 0
        for agent in env.agent_iter():
            if env.terminations[agent]:
                env.step(None)
                continue
            seen.append((env.agent_name_mapping[agent], env.observe(agent)["text"]))
            env.step(moves[ply % 3])
            ply += 1
        assert seen == expected
        assert env.returns() == [float(rewards[0]), float(rewards[1])]
    assert "[Player 1] Maybe later. [Deny]" in seen[-1][1]  # the conversation so far


@pytest.mark.parametrize("env_id", ["spiral_kuhn_poker-v0", "mindgames_three_player_ipd-v0"])
def test_the_match_loop_stores_and_replays_every_move_text(env_id: str, tmp_path: Path) -> None:
    seats = sa.get_spec(env_id).num_players
    record = play_match_sync(env_id, [RandomPlayer(seed) for seed in range(seats)], seed=5)
    # Random sample moves may be illegal: SPIRAL's entries end the game on the first refused
    # one (a forfeit, with TextArena's reason); either way every move text replays.
    assert record.status in ("complete", "forfeit") and record.moves
    refused = [move for move in record.moves if move.error is not None]
    assert len(refused) == (record.status == "forfeit")
    assert all(move.action == TEXT_MOVE for move in record.moves)
    with ResultsStore(tmp_path / "arena.sqlite") as store:
        run_id = store.run("test", 0, {})
        assert store.add_game(run_id, "g0", record)
        game_id = store.games(run_id)[0].id
        stored = store.moves(game_id)
        assert [move.action_text for move in stored] == [m.action_text for m in record.moves]
        replayed = replay_game(store, game_id)
    assert replayed.env.returns() == list(record.returns)


@pytest.mark.parametrize("env_id", PLAYABLE)
def test_every_entry_passes_the_conformance_check(env_id: str) -> None:
    from strategic_arena.testing import check_game

    result = check_game(env_id, num_cycles=30, round_trip_games=1, max_decisions=4)
    assert result.decisions >= 1 and result.move_texts >= result.decisions
    assert result.eval_games == 0  # no solver-suite entrant for a free-text game


def test_the_generic_adapter_passes_the_conformance_check() -> None:
    from strategic_arena.testing import check_game

    result = check_game("textarena/SimpleNegotiation-v0", num_cycles=30, round_trip_games=1)
    assert result.decisions >= 1


def test_codenames_deals_its_board_from_the_packaged_words_offline() -> None:
    env = sa.make("mindgames_codenames-v0")
    env.reset(seed=0)
    board = env.spiel_state.referee_env().board
    assert len(board) == 25 and set(board) <= set(PACKAGED_WORDS)
    assert sorted(board.values()) == sorted("R" * 9 + "B" * 8 + "N" * 7 + "A")


def test_codenames_deals_from_nltk_where_its_corpus_is(monkeypatch: pytest.MonkeyPatch) -> None:
    # With NLTK's source the entry is TextArena's own Codenames (NLTK's words, tagged nouns):
    # here, without the corpus, TextArena cannot start it; with it, it deals NLTK's nouns.
    installed = codenames_word_source() == "nltk"
    monkeypatch.setattr(textarena_games, "codenames_word_source", lambda: "nltk")
    env = sa.make("mindgames_codenames-v0")
    if not installed:
        with pytest.raises(ValueError, match="TextArena cannot start mindgames_codenames-v0"):
            env.reset(seed=0)
        return
    env.reset(seed=0)
    assert not set(env.spiel_state.referee_env().board) <= set(PACKAGED_WORDS)


def test_the_packaged_words_fit_textarenas_filter() -> None:
    # TextArena keeps words shorter than 8 letters; a clue is a \w+ token: no spaces, no hyphens.
    assert len(PACKAGED_WORDS) >= 25 and len(set(PACKAGED_WORDS)) == len(PACKAGED_WORDS)
    assert all(word.isalpha() and word.islower() and len(word) < 8 for word in PACKAGED_WORDS)


def test_codenames_seats_are_two_teams_of_two() -> None:
    spec = sa.get_spec("mindgames_codenames-v0")
    assert (spec.num_players, spec.teams) == (4, (0, 0, 1, 1))


def test_no_move_history_section_for_a_free_text_game() -> None:
    # The game's own observation says what the seat saw of the moves (Blotto's are sealed).
    view = golden_views("mindgames_colonel_blotto-v0")[1]
    _, user = render_messages("mindgames_colonel_blotto-v0", view, "marshal", include_history=True)
    assert "# Moves so far" not in user["content"]
    assert (
        user["content"]
        == render_messages("mindgames_colonel_blotto-v0", view, "marshal")[1]["content"]
    )
