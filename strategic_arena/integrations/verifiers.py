r"""The games as a verifiers environment (``vf-eval``, prime-rl): extra ``[verifiers]``.

verifiers loads an environment by importing a module and calling its ``load_environment``;
this module is one, so any of verifiers' entry points takes it by name::

    vf-eval strategic_arena.integrations.verifiers -a '{"games": ["kuhn_poker-v0"]}' \\
        -m MODEL -b http://127.0.0.1:8000/v1 -n 8

:class:`GameEnv` is a ``vf.MultiTurnEnv``. Each dataset row is one game (``info``: env id,
seed, seat); ``setup_state`` starts it with the other seats played in-process by the package's
opponents, and every model turn is answered by the environment with the next view (or, in the
``tools`` style, by a tool message to the ``play`` call). The game over, the closing message
gives the result and the rollout stops. One environment plays one game or many
(``games=[...]``: rows cycle through them; ``info["env_id"]`` names the game of each row).

The rubric is the trainer's reward definitions
(:class:`~strategic_arena.integrations.session.GameSession`): ``game`` + ``format`` +
``invalid``, weight 1 each. An invalid answer under the default ``forfeit`` policy ends the game
with the forfeit loss and ``invalid_penalty`` (-10): reward -11 in the two-player zero-sum games.

For a served solver (``strategic-arena serve``) as the model, forward the decision with
``--header-from-state "X-Strategic-Arena-Game: strategic_arena_game"``: the state keeps the
serve header of the current decision, the model's seat information only
(:class:`~strategic_arena.turn.SeatInformation`: nothing the seat may not know).
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
from strategic_arena.tools import tool_calls_text
from strategic_arena.validation import Style, ThinkingInHistory, history_text

vf: Any = require("verifiers", "the verifiers environment")
datasets: Any = require("datasets", "the verifiers environment's dataset")

#: The state key holding the serve header of the current decision.
GAME_STATE_KEY = "strategic_arena_game"


def _reward(part: str) -> Any:
    """A rubric function returning one part of the game's reward."""

    async def reward(state: Any) -> float:
        session: GameSession | None = state.get("session")
        return 0.0 if session is None else session.reward_parts()[part]

    reward.__name__ = part
    return reward


class GameEnv(vf.MultiTurnEnv):  # type: ignore[misc]
    """Games against the package's opponents as a verifiers multi-turn environment.

    Args:
        games: the env ids; dataset rows cycle through them.
        opponent: the opponent spec of the other seats, one for every game or one per env id.
        asking: how the model is asked (:class:`~strategic_arena.asking.Asking`: the answer
            style -- ``tools``: the model calls ``play(move)`` --, illegal-move policy,
            strictness, history, and what earlier answers keep when the conversation is sent
            again: ``thinking_in_history``).
        num_games: rows (games) per env id in each of the two datasets, ``dataset`` (training)
            and ``eval_dataset`` (evaluation: other seeds); seats alternate.
        seed: the datasets' seed; each row's game seed derives from it, the split, the env id
            and the row.
        rewards: reward definitions (MARSHAL's by default).
        **kwargs: passed to ``vf.MultiTurnEnv`` (``max_turns``, ``sampling_args``...).
    """

    def __init__(
        self,
        games: Sequence[str],
        opponent: str | dict[str, str] = "random",
        *,
        asking: Asking | None = None,
        num_games: int = 64,
        seed: int = 0,
        rewards: RewardConfig | None = None,
        **kwargs: Any,
    ) -> None:
        asking = asking or Asking()
        if not games or num_games < 1:
            raise ValueError("name at least one game and play at least one game of each")
        opponents = opponent if isinstance(opponent, dict) else dict.fromkeys(games, opponent)
        missing = [env_id for env_id in games if env_id not in opponents]
        if missing:
            raise ValueError(f"no opponent for {', '.join(missing)}")
        options: dict[str, Any] = {"asking": asking, "rewards": rewards}
        self.game_sessions = {  # one per game, to check the specs and render the dataset
            env_id: GameSession(env_id, opponents[env_id], **options) for env_id in games
        }
        self.session_options = options
        self.opponents = opponents
        self.style: Style = asking.style
        self.thinking_in_history: ThinkingInHistory = asking.thinking_in_history
        rubric = vf.Rubric(funcs=[_reward("game"), _reward("format"), _reward("invalid")])
        super().__init__(
            dataset=self._dataset(games, num_games, seed, "train"),
            eval_dataset=self._dataset(games, num_games, seed, "eval"),
            rubric=rubric,
            **kwargs,
        )

    def _dataset(self, games: Sequence[str], num_games: int, seed: int, split: str) -> Any:
        """One row per game: the first prompt, and the env id, seed and seat in ``info``."""
        rows = []
        for index, env_id in itertools.product(range(num_games), games):
            session = self.game_sessions[env_id]
            game_seed = derive_seed(seed, "verifiers", split, env_id, index)
            seat = index % session.num_seats
            session.reset(game_seed, seat)
            rows.append(
                {
                    "prompt": session.messages(),
                    "answer": "",
                    "info": {"env_id": env_id, "seed": game_seed, "seat": seat},
                }
            )
        return datasets.Dataset.from_list(rows)

    async def setup_state(self, state: Any) -> Any:
        """Start the row's game (the opponents move until it is the model's turn)."""
        info = state["info"]
        session = GameSession(
            info["env_id"], self.opponents[info["env_id"]], **self.session_options
        )
        await session.areset(int(info["seed"]), int(info["seat"]))
        state["session"] = session
        self._publish(state, session)
        return state

    @vf.stop  # type: ignore[untyped-decorator]
    async def game_over(self, state: Any) -> bool:
        """The rollout ends with the game."""
        session: GameSession | None = state.get("session")
        return session is not None and session.done

    @vf.cleanup  # type: ignore[untyped-decorator]
    async def abandon_unfinished(self, state: Any) -> None:
        """A game the model left unfinished (the turn limit) is its forfeit.

        Not after an error (the endpoint failed): that is the infrastructure's failure, and the
        game stays unfinished (reward 0; verifiers reports the error).
        """
        session: GameSession | None = state.get("session")
        if session is not None and state.get("error") is None:
            session.abandon("the rollout ended before the game")

    async def get_prompt_messages(self, state: Any) -> Any:
        """The conversation so far, earlier answers trimmed per ``thinking_in_history``."""
        messages = await super().get_prompt_messages(state)
        if self.thinking_in_history == "keep":
            return messages
        return [  # copies: the trajectory keeps the answers as they were given
            message.model_copy(
                update={
                    "content": history_text(message.content, self.style, self.thinking_in_history)
                }
            )
            if message.role == "assistant" and isinstance(message.content, str)
            else message
            for message in messages
        ]

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Play the model's last answer; reply with the next view, feedback or the result."""
        session: GameSession = state["session"]
        answer = messages[-1]
        calls = list(answer.tool_calls or [])
        text = tool_calls_text(
            answer.content if isinstance(answer.content, str) else "",
            [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls],
        )
        truncated = bool(state["trajectory"] and state["trajectory"][-1].get("is_truncated"))
        outcome = await session.astep(
            text,
            reasoning=answer.get("reasoning_content"),
            finish_reason="length" if truncated else None,
        )
        if outcome.feedback is not None:
            reply = outcome.feedback
        elif session.done:
            reply = session.outcome_text()
        else:
            reply = session.messages()[-1]["content"]
        self._publish(state, session)
        if calls:  # each call is answered by a tool message, as chat APIs require
            replies = [vf.ToolMessage(tool_call_id=calls[0].id, content=reply)]
            replies += [
                vf.ToolMessage(tool_call_id=call.id, content="Ignored: call play once.")
                for call in calls[1:]
            ]
        else:
            replies = [vf.UserMessage(content=reply)]
        if session.done:
            state["final_env_response"] = replies
        return replies

    def _publish(self, state: Any, session: GameSession) -> None:
        """The current decision's serve header and ``play`` tool, in the state."""
        state[GAME_STATE_KEY] = session.game_header()
        state["tool_defs"] = [
            vf.Tool(
                name=tool["function"]["name"],
                description=tool["function"]["description"],
                parameters=tool["function"]["parameters"],
            )
            for tool in session.tools()
        ]


def load_environment(
    games: str | Sequence[str] = "kuhn_poker-v0",
    opponent: str | dict[str, str] = "random",
    style: Style = "marshal",
    num_games: int = 64,
    seed: int = 0,
    policy: str = "forfeit",
    strict: bool = True,
    include_history: bool = False,
    thinking_in_history: ThinkingInHistory = "keep",
    rewards: dict[str, Any] | None = None,
    **kwargs: Any,
) -> GameEnv:
    """The entry point verifiers calls: a :class:`GameEnv` over one game or many.

    Args are :class:`GameEnv`'s (``games`` may be one env id), with the
    :class:`~strategic_arena.asking.Asking` fields given one by one, as JSON gives them
    (``style``, ``policy``, ``strict``, ``include_history``, ``thinking_in_history``);
    ``rewards`` holds
    :class:`~strategic_arena.rl.rewards.RewardConfig` fields as JSON gives them
    (``{"invalid_penalty": -1.0}``).
    """
    return GameEnv(
        [games] if isinstance(games, str) else list(games),
        opponent,
        asking=Asking(
            style=style,
            policy=policy,
            strict=strict,
            include_history=include_history,
            thinking_in_history=thinking_in_history,
        ),
        num_games=num_games,
        seed=seed,
        rewards=RewardConfig(**rewards) if rewards else None,
        **kwargs,
    )
