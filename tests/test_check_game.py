"""strategic_arena.testing.check_game: every registered game conforms; a broken one is caught."""

from __future__ import annotations

import pytest

import strategic_arena as sa
from strategic_arena.games.tic_tac_toe import TicTacToe
from strategic_arena.styles import style_names
from strategic_arena.testing import GameCheckError, check_game

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")


@pytest.mark.parametrize("env_id", sa.list_envs())
def test_every_registered_game_passes_the_conformance_check(env_id: str) -> None:
    result = check_game(env_id)
    assert result.env_id == env_id
    assert result.decisions > 0 and result.move_texts >= result.decisions
    # The default eval: 2 games against each default opponent (and 2 in self-play in a
    # cooperative game), every one scored.
    spec = sa.get_spec(env_id)
    pairings = len(spec.listing.default_opponents) + int(spec.cooperative)
    # A game whose spec names no solver-suite entrant (saying why) has no default eval.
    assert result.eval_games == (2 * pairings if spec.listing.solver else 0)


def test_a_generic_game_is_checked_without_the_eval() -> None:
    result = check_game("openspiel/blackjack", num_cycles=30)
    assert result.eval_games == 0 and result.move_texts > 0


def test_spirals_parser_cannot_write_a_bracketed_move_and_the_check_says_so() -> None:
    # Blotto's moves read "[0,0,10]": SPIRAL brackets every move, so its parser never reads
    # one back; every other style does.
    with pytest.raises(GameCheckError, match=r"openspiel/blotto: .* in the spiral style"):
        check_game("openspiel/blotto", num_cycles=30, max_decisions=4, round_trip_games=1)
    others = [name for name in style_names() if name != "spiral"]
    result = check_game("openspiel/blotto", num_cycles=30, max_decisions=4, styles=others)
    assert result.move_texts > 0 and result.eval_games == 0


class _Ambiguous(TicTacToe):
    """Tic-Tac-Toe whose menu names the centre cell like the corner: two moves read alike."""

    def menu(self, state: object, player: int) -> dict[int, str]:
        menu = super().menu(state, player)  # type: ignore[arg-type]
        if 0 in menu and 4 in menu:
            menu[4] = menu[0]
        return menu


def test_two_moves_that_read_alike_fail_the_round_trip() -> None:
    with pytest.raises(GameCheckError, match=r"tic_tac_toe-v0: move 4 .* reads back as"):
        check_game(_Ambiguous(), num_cycles=20, eval_games=0)


def test_an_unknown_id_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown env id"):
        check_game("chess-v9")
