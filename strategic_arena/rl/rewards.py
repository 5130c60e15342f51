"""Per-turn rewards and eligibility gating: the *score* stage of a training step.

Rewards follow MARSHAL (section 3.4 and its repository) and gating follows In2AI (MindGames
Arena); ``docs/references.md``, "Rewards used in training", is the specification. Rewards are
computed only once the episode is over, because a turn's reward can depend on what came after
it. The reward r_t of a learner turn is the sum of

1. a **format term**: ``+format_reward`` (0.05) for a valid, legal, well-formatted move, or
   ``invalid_penalty`` (-10) for an invalid one. A turn is invalid when it has an
   ``error_kind``, and the last turn of the seat that forfeited is always invalid (its invalid
   move is what ended the game). Under a retry policy a re-asked error turn is penalised too:
   error steps stay in training with their penalty (In2AI).
2. a **length penalty** of its ``len(response_ids)`` (:func:`length_penalty`, after Kimi k1.5),
   whatever the turn's validity.
3. the **game reward**. Games that pay during play (Hanabi: +1 to both seats per card played)
   pay each turn what the game gave its seat from that decision to the seat's next one
   (``Turn.game_reward`` times ``game_scale``: MARSHAL's per-turn reward), and the seat's
   **last** turn settles the rest, so that the seat's game rewards over the episode add up to
   the **terminal game reward** (:func:`game_reward`) below -- except for the non-offending
   seats of a forfeit, which keep what play paid them and add ``forfeit_other_reward`` (as
   MARSHAL's code does). In games that pay only at the end (every zero-sum curated game) all of
   it lands on the last turn, as before:

   * a game that ended by its rules: ``returns[seat] * game_scale[env_id]``; if the game's
     last move paid the seat exactly 0 (``Episode.final_rewards``: a draw in the zero-sum
     games, whose last move pays the whole return; in Hanabi a last move that plays no card)
     and ``draw_reward`` is set, that 0 becomes ``draw_reward`` (unscaled, like the format
     reward: it is a shaping constant, not a game outcome), as MARSHAL's code does at the
     final step. Without ``final_rewards`` (episodes built by hand) the return itself is
     tested for 0;
   * a forfeit, for the offender: its forfeit return times the scale (the lost game, -1 in the
     competitive games; 0 in Hanabi, whose forfeit ends the shared score at 0). Together with
     the format term the offender's last turn gets loss + ``invalid_penalty`` and no format
     reward. ``draw_reward`` never applies: a forfeit is not a draw;
   * a forfeit, for every other seat: ``forfeit_other_reward`` (unscaled), 0 by default as in
     MARSHAL's code, whatever OpenSpiel's forfeit returns say (the +1 a zero-sum forfeit hands
     the opponent was not earned by play); SPIRAL gives it +0.5. ``draw_reward`` does not
     apply either: the game was cut short, not drawn.

   So in a forfeited Hanabi game the cards played before the forfeit were paid at their turns;
   the offender's last turn takes them back (its forfeit return: the shared score ends at 0)
   besides its penalty, as MARSHAL's code does (``-returns - 10``), and its partner keeps them.

**Gating** (``gate_unobserved``, In2AI): a turn whose outcome was never observed is not
training data, rather than training data with an arbitrary reward. Every seat observes the
result of its moves at its next decision, so the only unobserved turn is the last turn of a seat
that did *not* forfeit, in an episode that ended by a forfeit: its valid move was followed by
the offender's invalid move, which ended the game before the move had any consequence. This is
the same in cooperative Hanabi (the partner's invalid move ends the game; the hint or play just
made is never seen to help or hurt), in self-play (both seats are learners: the offender's turns
stay in, the other seat's last turn is gated) and against a fixed opponent (the learner's last
turn is gated when the opponent forfeits). If that last turn was itself an error (a ``random``
illegal-move policy played a move for it), its penalty is an observed outcome and it stays
eligible. Gated turns still get their reward filled in (for logging); the advantage stage skips
them, so no reward of a gated turn reaches any other turn's return either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from strategic_arena.rl.episode import Episode


@dataclass(frozen=True)
class RewardConfig:
    """How a finished episode is turned into per-turn rewards (defaults: MARSHAL's values).

    Attributes:
        game_scale: multiplier of the game reward per env id, for multi-game normalization
            (MARSHAL scales Tic-Tac-Toe by 2 so every game's maximum is 4:
            ``{"tic_tac_toe-v0": 2.0}``); a missing env id means 1.0.
        format_reward: reward of a turn whose response was a valid, legal, well-formatted move.
        invalid_penalty: reward of a turn whose response was not (it replaces the format
            reward; an invalid move also ends the game with the offender's loss under the
            ``forfeit`` policy).
        draw_reward: if set (MARSHAL's code uses 0.1), replaces a payment of exactly 0 by the
            last move of a game that ended by its rules (a draw; a Hanabi game whose last move
            played no card); ``None`` leaves it 0.
        length_alpha: weight of the length penalty; 0 disables it.
        length_min: L_min, the shortest valid response in tokens.
        length_max: L_max, the soft token budget of one response; longer ones are penalised.
        gate_unobserved: leave turns whose outcome was never observed out of training.
        forfeit_other_reward: the terminal reward of every seat but the offender in a
            forfeited game (MARSHAL: 0; SPIRAL: +0.5), unscaled.
        definitions: the reward definition of each env id that is not scored by these rules
            (``game``), by name from :mod:`strategic_arena.rl.definitions` (which checks the
            names and dispatches): In2AI's ``in2ai_episode`` or ``in2ai_steps`` for the
            MindGames games.
    """

    game_scale: Mapping[str, float] = field(default_factory=dict)
    format_reward: float = 0.05
    invalid_penalty: float = -10.0
    draw_reward: float | None = None
    length_alpha: float = 0.5
    length_min: int = 11
    length_max: int = 2048
    gate_unobserved: bool = True
    forfeit_other_reward: float = 0.0
    definitions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.length_max <= self.length_min:
            raise ValueError(
                f"length_max ({self.length_max}) must exceed length_min ({self.length_min})"
            )
        if self.length_alpha < 0:
            raise ValueError(f"length_alpha must be >= 0, got {self.length_alpha}")

    def scale(self, env_id: str) -> float:
        """The game-reward multiplier of ``env_id`` (1.0 unless ``game_scale`` names it)."""
        return float(self.game_scale.get(env_id, 1.0))


def length_penalty(num_tokens: int, cfg: RewardConfig) -> float:
    """The length penalty of a response of ``num_tokens`` tokens (always <= 0).

    ``alpha * min(0, 1 - (L - L_min) / (L_max - L_min))`` as in MARSHAL's code: zero up to
    ``L_max``, then falling linearly, by ``alpha`` every ``L_max - L_min`` tokens (with the
    defaults about -0.25 at 3072 tokens and -0.5 at 4096).
    """
    if cfg.length_alpha == 0:
        return 0.0
    slack = 1.0 - (num_tokens - cfg.length_min) / (cfg.length_max - cfg.length_min)
    return cfg.length_alpha * min(0.0, slack)


def game_reward(episode: Episode, seat: int, cfg: RewardConfig) -> float:
    """The terminal game reward of ``seat``, added to that seat's last turn.

    The outcome by the rules (``returns[seat]`` times the game's scale, plus ``draw_reward`` if
    set and the last move paid the seat exactly 0); in a forfeit, the offender's forfeit return
    times the scale and ``forfeit_other_reward`` (0 in MARSHAL's code) for every other seat.
    See the module docstring for why.
    """
    if episode.forfeited_by is not None:
        if seat != episode.forfeited_by:
            return cfg.forfeit_other_reward
        return episode.returns[seat] * cfg.scale(episode.env_id)
    reward = episode.returns[seat] * cfg.scale(episode.env_id)
    final = reward if episode.final_rewards is None else episode.final_rewards[seat]
    if final == 0.0 and cfg.draw_reward is not None:
        return reward + cfg.draw_reward  # the 0 the last move paid becomes draw_reward
    return reward


def unobserved_turns(episode: Episode) -> list[int]:
    """Indices into ``episode.turns`` of the turns whose outcome was never observed.

    The last turn of each learner seat other than the offender, in a forfeited episode, when
    that turn was a valid move: the game ended at the offender's invalid move before the move
    had any consequence. Error turns are never listed (their penalty is their outcome).
    """
    if episode.forfeited_by is None:
        return []
    unobserved = []
    for seat in episode.learner_seats:
        if seat == episode.forfeited_by:
            continue
        indices = [i for i, turn in enumerate(episode.turns) if turn.seat == seat]
        if indices and episode.turns[indices[-1]].error_kind is None:
            unobserved.append(indices[-1])
    return sorted(unobserved)


def score_episode(episode: Episode, cfg: RewardConfig) -> None:
    """Fill ``reward`` and ``eligible`` of every turn of ``episode`` (rules: module docstring).

    Raises:
        ValueError: a turn belongs to a seat that is not one of ``episode.learner_seats``.
    """
    strangers = {turn.seat for turn in episode.turns} - set(episode.learner_seats)
    if strangers:
        raise ValueError(
            f"{episode.env_id} seed {episode.seed}: turns of seats {sorted(strangers)}, which "
            f"are not learner seats {episode.learner_seats}"
        )
    for seat in episode.learner_seats:
        trajectory = episode.trajectory(seat)
        paid = 0.0  # game reward already paid to the seat's earlier turns
        for t, turn in enumerate(trajectory):
            is_last = t == len(trajectory) - 1
            invalid = turn.error_kind is not None or (is_last and seat == episode.forfeited_by)
            reward = cfg.invalid_penalty if invalid else cfg.format_reward
            reward += length_penalty(len(turn.response_ids), cfg)
            paid_now = turn.game_reward * cfg.scale(episode.env_id)
            if not is_last:
                reward += paid_now
                paid += paid_now
            elif episode.forfeited_by is not None and seat != episode.forfeited_by:
                # The partner of a forfeit keeps what play paid it (MARSHAL's code).
                reward += paid_now + game_reward(episode, seat, cfg)
            else:
                reward += game_reward(episode, seat, cfg) - paid
            turn.reward = reward
            turn.eligible = True
    if cfg.gate_unobserved:
        for index in unobserved_turns(episode):
            episode.turns[index].eligible = False


def score(episodes: Iterable[Episode], cfg: RewardConfig) -> None:
    """Score every episode in place by these rules (:func:`score_episode`).

    ``cfg.definitions`` is not read here: :func:`strategic_arena.rl.definitions.score` scores
    each game by its definition (these rules where none is named).
    """
    for episode in episodes:
        score_episode(episode, cfg)
