"""The reward definitions the trainer offers: a registry of small objects, one per definition.

A definition turns a finished :class:`~strategic_arena.rl.episode.Episode` into per-turn rewards
and eligibility, in place. ``rewards.definitions`` in the training config names one per game
(``{mindgames_colonel_blotto-v0: in2ai_steps}``); a game it does not name is scored by
``game``, MARSHAL's rules (:func:`strategic_arena.rl.rewards.score_episode`).

Registered:

* ``game`` -- the game's own reward (win/loss, chips, Hanabi's cards) with MARSHAL's format and
  length terms and In2AI's gating (:mod:`strategic_arena.rl.rewards`);
* ``in2ai_episode`` -- the same, with In2AI's game-specific episode reward (Appendix A:
  Blotto's margin, Codenames' fraction of words, the IPD's normalized payoff) in place of the
  win/loss of a game that ended by its rules (:mod:`strategic_arena.rl.mindgames`);
* ``in2ai_steps`` -- In2AI's delayed per-step attribution (Appendix B): every turn's reward
  from what its move led to, error floors, and the gating of steps without an outcome.

Adding one: a class with a ``name`` and ``score(episode, cfg)``, and an entry in
:data:`DEFINITIONS`; ``docs/training.md`` lists them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Protocol

from strategic_arena.rl import mindgames
from strategic_arena.rl.episode import Episode
from strategic_arena.rl.rewards import RewardConfig, score_episode

#: Error kinds of a move that parsed but broke a rule (the others did not parse).
RULE_ERRORS = frozenset({"illegal_action"})


class RewardDefinition(Protocol):
    """Fills ``reward`` and ``eligible`` of every turn of an episode."""

    name: str

    def score(self, episode: Episode, cfg: RewardConfig) -> None:
        """Score ``episode``'s turns in place."""


class GameReward:
    """``game``: MARSHAL's per-turn rewards over the game's own returns."""

    name = "game"

    def score(self, episode: Episode, cfg: RewardConfig) -> None:
        """:func:`~strategic_arena.rl.rewards.score_episode`."""
        score_episode(episode, cfg)


class In2AIEpisodeReward:
    """``in2ai_episode``: Appendix A's episode reward as the game reward of a finished game.

    A forfeited game keeps the ``game`` rules (the offender's loss and penalty): Appendix A.4
    gives an invalid action its own outcome before any score is compared.
    """

    name = "in2ai_episode"

    def score(self, episode: Episode, cfg: RewardConfig) -> None:
        """Score with the returns replaced by :func:`~.mindgames.episode_rewards`."""
        if episode.forfeited_by is not None:
            score_episode(episode, cfg)
            return
        facts = mindgames.replay_facts(episode.env_id, episode.seed, episode.moves)
        rewards = mindgames.episode_rewards(episode.env_id, facts)
        # The same turns (scored in place); no final_rewards: a 0 episode reward is no draw.
        score_episode(replace(episode, returns=rewards, final_rewards=None), cfg)


class In2AIStepRewards:
    """``in2ai_steps``: Appendix B's per-step attribution (:func:`~.mindgames.step_rewards`).

    A turn whose answer never reached the game (an error turn: empty, truncated, no action)
    gets the parse floor, or the invalid-action floor for a rule the validator saw broken;
    error turns stay eligible (they teach the format).
    """

    name = "in2ai_steps"

    def __init__(self, constants: mindgames.In2AIConstants = mindgames.CONSTANTS) -> None:
        self.constants = constants

    def score(self, episode: Episode, cfg: RewardConfig) -> None:
        """Fill every turn from the replayed game's verdicts."""
        facts = mindgames.replay_facts(episode.env_id, episode.seed, episode.moves)
        verdicts = mindgames.step_rewards(episode.env_id, facts, episode.returns, self.constants)
        for turn in episode.turns:
            if turn.move_index is None:
                rule = turn.error_kind in RULE_ERRORS
                floor = self.constants.invalid_action if rule else self.constants.parse_failure
                turn.reward, turn.eligible = floor, True
                continue
            verdict = verdicts[turn.move_index]
            turn.reward, turn.eligible = verdict.reward, verdict.eligible
            if turn.error_kind is not None:  # re-asked error turns: their own floor, kept
                rule = turn.error_kind in RULE_ERRORS
                floor = self.constants.invalid_action if rule else self.constants.parse_failure
                turn.reward, turn.eligible = min(verdict.reward, floor), True


#: Every reward definition by name.
DEFINITIONS: dict[str, RewardDefinition] = {
    definition.name: definition
    for definition in (GameReward(), In2AIEpisodeReward(), In2AIStepRewards())
}


def get_definition(name: str) -> RewardDefinition:
    """The definition called ``name``.

    Raises:
        ValueError: no such definition (the message lists the registered ones).
    """
    try:
        return DEFINITIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown reward definition {name!r}; use one of {', '.join(DEFINITIONS)}"
        ) from None


def check_definitions(cfg: RewardConfig) -> list[str]:
    """What is wrong with ``cfg.definitions`` (an unknown name), one line each."""
    return [
        f"rewards.definitions.{env_id}: unknown reward definition {name!r}; use one of "
        f"{', '.join(DEFINITIONS)}"
        for env_id, name in cfg.definitions.items()
        if name not in DEFINITIONS
    ]


def score(episodes: Iterable[Episode], cfg: RewardConfig) -> None:
    """Score every episode in place, each by its game's definition (``cfg.definitions``).

    A game no definition names is scored by ``game``
    (:func:`~strategic_arena.rl.rewards.score_episode`).

    Raises:
        ValueError: a definition name that is not registered.
    """
    for episode in episodes:
        get_definition(cfg.definitions.get(episode.env_id, "game")).score(episode, cfg)
