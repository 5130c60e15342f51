"""The games as a TRL environment: ``GRPOTrainer(environment_factory=GameEnvironment)``.

TRL 1.x trains on multi-turn environments through ``environment_factory``: an object whose
public methods are the model's tools, with ``reset(**row)`` called before each rollout (its
string is appended to the prompt's last message) and ``get_reward()`` after it. Here the one
tool is ``play(move)``: the model moves by calling it, the opponents reply in-process, and the
tool's result is the model's next view (or how the game ended); the trainer trains on the tokens
the model produced. :func:`game_dataset` builds the rows (one game each: env id, seed, seat, and
the system prompt of the ``tools`` style)::

    from trl import GRPOConfig, GRPOTrainer
    from strategic_arena.integrations.trl import GameEnvironment, game_dataset

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,        # a chat template with tool calling (Qwen, Llama...)
        train_dataset=game_dataset(["kuhn_poker-v0"], num_games=64),
        environment_factory=GameEnvironment,
        args=GRPOConfig(...),
    )

Rewards are the trainer's definitions
(:class:`~strategic_arena.integrations.session.GameSession`): a rollout that ends with the game
unfinished (the model stopped calling ``play``) is the model's forfeit: the forfeit loss plus
``invalid_penalty``. Extra ``[trl]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from strategic_arena._extras import require
from strategic_arena.asking import Asking
from strategic_arena.integrations.session import GameSession
from strategic_arena.rl.rewards import RewardConfig
from strategic_arena.seeding import derive_seed
from strategic_arena.tools import MOVE_ARGUMENT, PLAY_TOOL, tool_call_text


def game_dataset(
    games: Sequence[str],
    *,
    num_games: int = 64,
    seed: int = 0,
    include_history: bool = False,
) -> Any:
    """Rows for :class:`GameEnvironment`: one game each, the games cycling, seats alternating.

    Columns: ``prompt`` (the ``tools`` style's system message and an empty user message, which
    ``reset`` fills with the first view), ``env_id``, ``seed`` and ``seat``.
    """
    datasets = require("datasets", "the TRL game dataset")
    rows = []
    sessions: dict[str, GameSession] = {}
    for index, env_id in itertools.product(range(num_games), games):
        if env_id not in sessions:
            asking = Asking(style="tools", include_history=include_history)
            sessions[env_id] = GameSession(env_id, asking=asking)
        session = sessions[env_id]
        game_seed = derive_seed(seed, "trl", env_id, index)
        seat = index % session.num_seats
        session.reset(game_seed, seat)
        system = session.messages()[0]
        rows.append(
            {
                "prompt": [system, {"role": "user", "content": ""}],
                "env_id": env_id,
                "seed": game_seed,
                "seat": seat,
            }
        )
    return datasets.Dataset.from_list(rows)


class GameEnvironment:
    """One game per rollout; the model's tool is :meth:`play` (TRL's ``environment_factory``).

    TRL calls the factory without arguments: pass ``GameEnvironment`` for the defaults, or a
    ``functools.partial`` of it with other settings.

    Args:
        opponent: the opponent spec of every other seat, or one per env id.
        policy: the illegal-move policy (``forfeit``, ``retry:K``, ``random``).
        include_history: list the public moves so far in each view.
        rewards: the reward definitions (MARSHAL's by default).
    """

    def __init__(
        self,
        opponent: str | dict[str, str] = "random",
        *,
        policy: str = "forfeit",
        include_history: bool = False,
        rewards: RewardConfig | None = None,
    ) -> None:
        self.opponent = opponent
        self.policy = policy
        self.include_history = include_history
        self.rewards = rewards
        self._sessions: dict[str, GameSession] = {}
        self.session: GameSession | None = None

    def reset(self, **row: Any) -> str:
        """Start the row's game; return its first view (appended to the prompt)."""
        env_id = str(row["env_id"])
        if env_id not in self._sessions:
            opponent = self.opponent if isinstance(self.opponent, str) else self.opponent[env_id]
            self._sessions[env_id] = GameSession(
                env_id,
                opponent,
                asking=Asking(
                    style="tools", policy=self.policy, include_history=self.include_history
                ),
                rewards=self.rewards,
            )
        self.session = self._sessions[env_id]
        self.session.reset(int(row["seed"]), int(row["seat"]))
        if self.session.done:  # the opponent ended the game before the model's first move
            return self.session.outcome_text()
        return self.session.messages()[-1]["content"]

    def play(self, move: str) -> str:
        """Make your move in the game.

        Args:
            move: Your move, written exactly as in the list of legal actions.

        Returns:
            Your next view of the game after the other players' replies, or how the game ended.
        """
        session = self._session()
        if session.done:
            return session.outcome_text()
        outcome = session.step(tool_call_text(PLAY_TOOL, {MOVE_ARGUMENT: move}))
        if outcome.feedback is not None:
            return outcome.feedback
        if session.done:
            return session.outcome_text()
        return session.messages()[-1]["content"]

    def get_reward(self) -> float:
        """The game's reward; an unfinished game is the model's forfeit (it stopped playing)."""
        session = self._session()
        session.abandon("the model stopped calling play before the game ended")
        return session.reward()

    def _session(self) -> GameSession:
        """The current game (``reset`` starts one)."""
        if self.session is None:
            raise RuntimeError("no game: TRL calls reset() before the rollout")
        return self.session
