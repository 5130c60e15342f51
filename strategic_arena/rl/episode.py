"""The trainer's data model: an :class:`Episode` is one game, a :class:`Turn` one policy decision.

Rollouts fill everything up to ``error_kind``; the later stages of a training step fill the rest
in place, each stage a function you can test alone:

1. generate -- the match loop plays the game and records the policy's turns;
2. score -- :func:`strategic_arena.rl.rewards.score` sets ``Turn.reward`` and
   ``Turn.eligible``;
3. advantage -- an estimator of :mod:`strategic_arena.train.algo.estimators` sets
   ``Turn.advantage``;
4. update -- the learner turns ``prompt_ids``, ``response_ids``, ``logprobs`` and ``advantage``
   into a PPO loss.

Only the learning policy's decisions are turns: an opponent's moves are part of the game
(``returns``, ``forfeited_by``), not training data. This module needs only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``Episode.status`` values: the game ended by its rules, or by a seat's invalid move.
EPISODE_STATUSES: tuple[str, ...] = ("complete", "forfeit")


@dataclass
class Turn:
    """One decision of the learning policy: the prompt it saw, what it generated, what came of it.

    Attributes:
        env_id: the game.
        seat: the seat that decided.
        role: the seat's role name used for grouping advantages (e.g. ``"player 0"``).
        prompt_ids: token ids of the prompt, chat template applied.
        response_ids: token ids the engine generated.
        logprobs: the engine's log-probabilities of ``response_ids`` (same length); the
            behaviour policy of the PPO ratio.
        text: the decoded response.
        error_kind: ``None`` for a valid, legal, well-formatted move; otherwise why it was not
            one, an :data:`strategic_arena.actions.ErrorKind` (``"format"``,
            ``"illegal_action"``, ``"truncated"``, ...).
        reward: this turn's reward r_t, set by :func:`strategic_arena.rl.rewards.score`.
        eligible: whether the turn is training data, set by the same function (eligibility
            gating: a turn whose outcome was never observed is left out).
        advantage: set by the advantage estimator; 0.0 when ineligible.
        weight_version: the version of the weights that generated the response (the trainer
            step whose update they hold; ``None``: unknown).
        game_reward: what the game itself paid this seat from this decision until the seat's
            next one (OpenSpiel's per-move rewards, unscaled: Hanabi's +1 per card played, to
            both seats, at the move that plays it; 0 in games that pay only at the end), set by
            the rollout (:mod:`strategic_arena.train.algo.game_rewards`). The score stage pays it at
            this turn; the seat's last turn still settles the whole game reward.
        value: a value head's estimate V of the turn's prompt, set before the advantage stage
            when the estimator needs one (``advantage.type: ppo``); ``None``: none.
        value_target: the return the value head is trained towards, set by such an estimator.
        move_index: where this turn's move is in :attr:`Episode.moves` (``None``: its answer
            never reached the game, e.g. a forfeit); reward definitions that replay the game
            (:mod:`strategic_arena.rl.definitions`) find the turn's move by it.
    """

    env_id: str
    seat: int
    role: str
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    text: str
    error_kind: str | None
    reward: float = 0.0
    eligible: bool = True
    advantage: float = 0.0
    weight_version: int | None = None
    game_reward: float = 0.0
    value: float | None = None
    value_target: float | None = None
    move_index: int | None = None

    def __post_init__(self) -> None:
        if len(self.logprobs) != len(self.response_ids):
            raise ValueError(
                f"a turn needs one log-prob per response token: {len(self.logprobs)} log-probs "
                f"for {len(self.response_ids)} tokens"
            )

    @property
    def valid(self) -> bool:
        """Whether the response was a valid, legal, well-formatted move."""
        return self.error_kind is None


@dataclass
class Episode:
    """One finished game and the learning policy's turns in it.

    Attributes:
        env_id: the game.
        seed: the env seed; replays the game's chance events exactly.
        learner_seats: the seats the learning policy played (all of them in self-play, one
            against a fixed opponent).
        opponent: ``"self"`` for self-play, else the opponent's name.
        returns: final game returns by seat as OpenSpiel reports them, after any forfeit (see
            :meth:`strategic_arena.games.base.GameSpec.forfeit_returns`).
        status: ``"complete"`` (ended by the rules) or ``"forfeit"`` (ended by an invalid move).
        forfeited_by: the seat whose invalid move ended the game; ``None`` unless forfeited.
        turns: the policy's turns in play order, the learner seats interleaved.
        num_seats: the number of seats of the game.
        num_moves: the decisions of every seat in the game, opponents' included (SPIRAL's
            game length, in turns); ``None`` when unknown.
        final_rewards: what the game's last move paid each seat (OpenSpiel's rewards of the
            final transition; the whole return in games that pay only at the end); ``None``
            when unknown. MARSHAL's ``draw_reward`` replaces a final payment of 0.
        moves: every move that reached the game, every seat's, as ``(seat, text)`` in order
            (the free-text games' replayable history; empty where unknown or unneeded).
    """

    env_id: str
    seed: int
    learner_seats: tuple[int, ...]
    opponent: str
    returns: tuple[float, ...]
    status: str
    forfeited_by: int | None
    turns: list[Turn]
    num_seats: int = 2
    num_moves: int | None = None
    final_rewards: tuple[float, ...] | None = None
    moves: tuple[tuple[int, str], ...] = ()

    def __post_init__(self) -> None:
        if self.status not in EPISODE_STATUSES:
            raise ValueError(
                f"unknown episode status {self.status!r}; use one of {EPISODE_STATUSES}"
            )
        if (self.status == "forfeit") != (self.forfeited_by is not None):
            raise ValueError(
                f"status {self.status!r} with forfeited_by={self.forfeited_by}: a forfeit names "
                "the seat that forfeited, a complete game names none"
            )
        if len(self.returns) != self.num_seats:
            raise ValueError(f"{len(self.returns)} returns for {self.num_seats} seats")
        seats = (*self.learner_seats, *(() if self.forfeited_by is None else (self.forfeited_by,)))
        if any(not 0 <= seat < self.num_seats for seat in seats):
            raise ValueError(f"seats must lie in [0, {self.num_seats}): got {seats}")

    def trajectory(self, seat: int) -> list[Turn]:
        """That seat's turns, in play order."""
        return [turn for turn in self.turns if turn.seat == seat]
