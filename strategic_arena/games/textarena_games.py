"""Curated TextArena entries: the games SPIRAL and the MindGames winner played, as they played them.

Each entry is TextArena's own game (TextArena 0.7.4, the ``textarena`` extra) with the paper's
parameters and the observation wrapper its model saw; nothing of the rules is rewritten here.
``docs/games.md`` lists each entry's paper setting and where TextArena 0.7.4 differs from the
release a paper ran on.

SPIRAL (Liu et al., 2025) trains on Tic-Tac-Toe, Kuhn Poker and Simple Negotiation and tests on
Pig Dice, Snake and Truth and Deception, all TextArena's.
Its environments wrap TextArena with ``LLMObservationWrapper`` (the whole conversation) where
its run scripts pass ``use_llm_obs_wrappers True`` (Kuhn Poker, Simple Negotiation) and with
``FirstLastObservationWrapper`` (the game prompt and the latest message) where they pass
``False`` (Tic-Tac-Toe, Pig Dice); Snake, a board game, gets the latter and Truth and Deception, a
conversation, the former, by the same rule. Every SPIRAL entry plays by SPIRAL's invalid-move
rule, ``error_allowance = 0`` (:data:`SPIRAL_ERROR_ALLOWANCE`): a move TextArena refuses ends the
game at once, the offender's forfeit.

The MindGames Arena generalization track plays Codenames (2 v 2, TextArena's defaults: 80
turns, the basic word list), Colonel Blotto (3 fields, 20 units, 9 rounds) and three-player
Iterated Prisoner's Dilemma (5 rounds of 3 free-chat turns, then simultaneous decisions; payoffs
3 / 5 / 0 / 1), each with TextArena's default wrappers.

Adding an entry: a factory below, its id in ``strategic_arena.games.TEXT_GAMES``, a
``prompts/<prompt_dir>/rules.txt`` and its tests (golden prompts come from ``--update-golden``).
"""

from __future__ import annotations

from typing import Any

from strategic_arena.games.codenames_words import PACKAGED_WORDS, codenames_word_source
from strategic_arena.games.textarena import TextArenaSpec

#: SPIRAL's rule for a move TextArena refuses: its training and evaluation scripts set
#: ``env.state.error_allowance = 0`` after every reset, so the offender loses at once (no
#: retry); its trainer then pays the offender -1.5 and the other seat +0.5
#: (``configs/spiral_multi_game.yaml``'s rewards).
SPIRAL_ERROR_ALLOWANCE = 0

#: SPIRAL's wrappers (see the module doc).
WHOLE_CONVERSATION = ("LLMObservationWrapper",)
FIRST_AND_LAST = ("FirstLastObservationWrapper",)


def spiral_negotiation() -> TextArenaSpec:
    """SPIRAL's Simple Negotiation: 5 resources, 10 turns, the whole conversation observed."""
    return TextArenaSpec(
        "SimpleNegotiation-v0-raw",
        env_id="spiral_negotiation-v0",
        title="Simple Negotiation",
        prompt_dir="spiral_negotiation",
        params={"max_turns": 10},
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=WHOLE_CONVERSATION,
        example="[Offer: 2 Wheat -> 1 Ore]",
        sample_moves=(
            "[Accept]",
            "[Deny]",
            "[Offer: 2 Wheat -> 1 Wood]",
            "[Offer: 1 Sheep -> 2 Wheat]",
            "[Offer: 1 Brick -> 1 Ore]",
        ),
    )


def spiral_tic_tac_toe() -> TextArenaSpec:
    """SPIRAL's Tic-Tac-Toe: TextArena's board game, the prompt and the latest board observed."""
    return TextArenaSpec(
        "TicTacToe-v0-raw",
        env_id="spiral_tic_tac_toe-v0",
        title="Tic-Tac-Toe",
        prompt_dir="spiral_tic_tac_toe",
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=FIRST_AND_LAST,
        example="[4]",
        sample_moves=tuple(f"[{cell}]" for cell in range(9)),
    )


def spiral_kuhn_poker() -> TextArenaSpec:
    """SPIRAL's Kuhn Poker: TextArena's multi-round game, 5 rounds, chips carried over."""
    return TextArenaSpec(
        "KuhnPoker-v0-raw",
        env_id="spiral_kuhn_poker-v0",
        title="Kuhn Poker (5 rounds)",
        prompt_dir="spiral_kuhn_poker",
        params={"max_rounds": 5},
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=WHOLE_CONVERSATION,
        example="[check]",
        sample_moves=("[check]", "[bet]", "[call]", "[fold]"),
    )


def spiral_pig_dice() -> TextArenaSpec:
    """SPIRAL's Pig Dice: first to 50 points, at most 50 turns."""
    return TextArenaSpec(
        "PigDice-v0-raw",
        env_id="spiral_pig_dice-v0",
        title="Pig Dice",
        prompt_dir="spiral_pig_dice",
        params={"winning_score": 50, "max_turns": 50},
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=FIRST_AND_LAST,
        example="[roll]",
        sample_moves=("[roll]", "[hold]"),
    )


def spiral_truth_and_deception() -> TextArenaSpec:
    """SPIRAL's Truth and Deception: 6 turns of conversation, then the guess."""
    return TextArenaSpec(
        "TruthAndDeception-v0-raw",
        env_id="spiral_truth_and_deception-v0",
        title="Truth and Deception",
        prompt_dir="spiral_truth_and_deception",
        params={"max_turns": 6},
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=WHOLE_CONVERSATION,
        example="[Fact 1]",
        sample_moves=("Which fact do you believe?", "I am certain of it.", "[Fact 1]", "[Fact 2]"),
    )


def spiral_snake() -> TextArenaSpec:
    """SPIRAL's Snake: two snakes on a 5x5 board with 2 apples, 40 turns."""
    return TextArenaSpec(
        "Snake-v0-raw",
        env_id="spiral_snake-v0",
        title="Snake",
        prompt_dir="spiral_snake",
        params={"width": 5, "height": 5, "num_apples": 2, "max_turns": 40},
        error_allowance=SPIRAL_ERROR_ALLOWANCE,
        wrappers=FIRST_AND_LAST,
        example="[up]",
        sample_moves=("[up]", "[down]", "[left]", "[right]"),
    )


class CodenamesSpec(TextArenaSpec):
    """TextArena's Codenames, dealt from the package's words where NLTK's corpus is missing.

    :mod:`strategic_arena.games.codenames_words` says which words and what that changes; the
    env is TextArena's own class with its default wrappers either way.
    """

    def make_env(self, textarena: Any) -> Any:
        """TextArena's env (NLTK's words), or its class over :data:`PACKAGED_WORDS` offline."""
        if codenames_word_source() == "nltk":
            return super().make_env(textarena)
        from textarena.envs.Codenames.env import CodenamesEnv
        from textarena.envs.registration import ENV_REGISTRY

        class PackagedWordsCodenames(CodenamesEnv):  # type: ignore[misc]
            def _load_word_list(self, hardcore: bool | None = False) -> None:
                self.word_list = list(PACKAGED_WORDS)

        registered = ENV_REGISTRY[self.textarena_id]
        env = PackagedWordsCodenames(**{**registered.kwargs, **self.params})
        for wrapper in registered.default_wrappers or ():
            env = wrapper(env)
        return env


def mindgames_codenames() -> TextArenaSpec:
    """MindGames' Codenames: 4 seats in two teams (spymaster and operative), 80 turns."""
    return CodenamesSpec(
        "Codenames-v0",
        players=4,
        env_id="mindgames_codenames-v0",
        title="Codenames",
        prompt_dir="mindgames_codenames",
        params={"hardcore": False, "max_turns": 80},
        seat_teams=(0, 0, 1, 1),  # TextArena: Red = spymaster 0, operative 1; Blue = 2, 3
        example="[ocean 2]",
        sample_moves=("[pass]", "[ocean 2]"),
    )


def mindgames_colonel_blotto() -> TextArenaSpec:
    """MindGames' Colonel Blotto: 3 fields, 20 units, up to 9 rounds."""
    return TextArenaSpec(
        "ColonelBlotto-v0",
        env_id="mindgames_colonel_blotto-v0",
        title="Colonel Blotto",
        prompt_dir="mindgames_colonel_blotto",
        params={"num_fields": 3, "num_total_units": 20, "num_rounds": 9},
        example="[A5 B10 C5]",
        sample_moves=("[A5 B10 C5]", "[A7 B7 C6]", "[A10 B5 C5]", "[A0 B10 C10]"),
    )


def mindgames_three_player_ipd() -> TextArenaSpec:
    """MindGames' three-player Iterated Prisoner's Dilemma: 5 rounds of 3 chat turns each."""
    return TextArenaSpec(
        "ThreePlayerIPD-v0",
        players=3,
        env_id="mindgames_three_player_ipd-v0",
        title="Three-Player Iterated Prisoner's Dilemma",
        prompt_dir="mindgames_three_player_ipd",
        params={
            "num_rounds": 5,
            "communication_turns": 3,
            "cooperate_reward": 3,
            "defect_reward": 5,
            "sucker_reward": 0,
            "mutual_defect_reward": 1,
        },
        example="[1 cooperate] [2 cooperate]",
        sample_moves=(
            "Let us all cooperate.",
            "[1 cooperate] [2 cooperate]",
            "[1 defect] [2 defect]",
            "[1 cooperate] [2 defect]",
        ),
    )
