"""One game from the model's seat: what every framework adapter steps.

A :class:`GameSession` holds a :class:`~strategic_arena.env.TextGameEnv` behind a
:class:`~strategic_arena.wrappers.TextActionWrapper` (the answer style and the illegal-move
policy), the model's seat, and the opponents that play every other seat in-process
(:func:`opponents.make`). ``reset(seed, seat)`` starts a game and lets the opponents move until
the model is to act; ``step(response)`` reads the model's answer, plays it (or applies the
policy) and lets the opponents reply. ``messages()`` is the prompt of the model's next decision,
``tools()`` the ``play`` tool of the ``tools`` style.

**Seeds fix the episode**: the env's chance events and every opponent's generator derive from
the seed, so a seed and a seat give the same game for the same answers, in any process.

**Rewards** are the trainer's (:mod:`strategic_arena.rl.rewards`, MARSHAL's values by
default), the model's turns read as one episode against a fixed opponent. The total is the sum
of three parts, reported apart so frameworks can log them: ``game`` (the outcome: the seat's
return times the game's scale; a forfeit costs the offender the forfeit loss and gives the other
seats ``forfeit_other_reward``), ``format`` (``format_reward`` per valid move) and ``invalid``
(``invalid_penalty`` per invalid answer, the one that forfeited included). No length penalty:
the adapters see text, not token counts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import opponents
from strategic_arena.actions import Action, ActionError
from strategic_arena.asking import Asking
from strategic_arena.env import make
from strategic_arena.players import game_header
from strategic_arena.prompting import Message, render_messages
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.rl.rewards import RewardConfig, game_reward
from strategic_arena.seeding import derive_seed
from strategic_arena.styles import get_style
from strategic_arena.turn import GameState, Player, SeatInformation
from strategic_arena.validation import Style
from strategic_arena.views import SeatView
from strategic_arena.wrappers import TextActionWrapper

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to completion from synchronous code, even inside a running loop.

    Frameworks call adapters both from plain threads and from inside their own event loop;
    in the latter case the coroutine runs on a fresh loop in a worker thread.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@dataclass(frozen=True)
class StepOutcome:
    """What became of one answer of the model.

    Attributes:
        action: the move played for the model (``None``: none, the answer was invalid).
        error: why the answer was not a legal move, if it was not.
        feedback: set when the policy re-asks (``retry:k``): the message for the model.
        done: whether the game is over.
    """

    action: Action | None
    error: ActionError | None
    feedback: str | None
    done: bool


class GameSession:
    """A game of ``env_id`` from one seat, the other seats played by ``opponent``.

    Args:
        env_id: the game.
        opponent: the opponent spec of every other seat (``"random"``, ``"mcts:simulations=50"``,
            ``"nash"``, ``"hanabi_bot"``...; see :mod:`opponents`).
        asking: how the model is asked (:class:`~strategic_arena.asking.Asking`: the answer
            style, illegal-move policy, strictness, history, prompt set, required reasoning);
            default: its defaults.
        rewards: the reward definitions (MARSHAL's values by default).
    """

    def __init__(
        self,
        env_id: str,
        opponent: str = "random",
        *,
        asking: Asking | None = None,
        rewards: RewardConfig | None = None,
    ) -> None:
        asking = asking or Asking()
        self.env_id = env_id
        self.opponent = opponent
        self.asking = asking
        self.style: Style = asking.style
        self.include_history = asking.include_history
        self.prompts = asking.prompt_set()
        self.reward_config = rewards or RewardConfig()
        self.wrapper = TextActionWrapper(
            make(env_id),
            asking.style,
            asking.policy,
            strict=asking.strict,
            require_reasoning=asking.require_reasoning,
        )
        self.env = self.wrapper.text_env
        self.spec = self.env.spec
        opponents.make(opponent, env_id, seed=0)  # a bad spec fails now, not at the first reset
        self._make_opponent = opponents.make
        self.seed = 0
        self.seat = 0
        self._players: dict[int, Player] = {}
        self._turns: list[Turn] = []
        self._started = False

    @property
    def num_seats(self) -> int:
        """The game's number of seats."""
        return len(self.env.possible_agents)

    @property
    def agent(self) -> str:
        """The model's agent name (``player_<seat>``)."""
        return self.env.possible_agents[self.seat]

    @property
    def done(self) -> bool:
        """Whether the game is over (by its rules or by a forfeit)."""
        return bool(self.env.terminations[self.agent])

    async def areset(self, seed: int, seat: int | None = None) -> None:
        """Start the game of ``seed`` with the model in ``seat`` (default ``seed % seats``)."""
        seat = seed % self.num_seats if seat is None else seat
        if not 0 <= seat < self.num_seats:
            raise ValueError(f"seat must lie in [0, {self.num_seats}), got {seat}")
        self.seed, self.seat = int(seed), int(seat)
        self.wrapper.reset(seed=self.seed)
        self._players = {
            other: self._make_opponent(
                self.opponent,
                self.env_id,
                seed=derive_seed(self.seed, "integrations", self.env_id, other),
            )
            for other in range(self.num_seats)
            if other != self.seat
        }
        self._turns = []
        self._started = True
        await self._opponents_move()

    def reset(self, seed: int, seat: int | None = None) -> None:
        """:meth:`areset` from synchronous code."""
        run_sync(self.areset(seed, seat))

    def view(self) -> SeatView:
        """What the model's seat sees now."""
        return self.env.seat_view(self.agent, history=self.include_history)

    def messages(self) -> list[Message]:
        """The system and user messages of the model's current decision."""
        return render_messages(
            self.spec,
            self.view(),
            self.style,
            include_history=self.include_history,
            prompts=self.prompts,
        )

    def tools(self) -> list[dict[str, Any]]:
        """The tools the style offers at the current decision (``play`` in ``tools``; else none)."""
        if self.done:
            return []
        options = get_style(self.style).request_options(self.view().legal_actions.values())
        return list(options.get("tools", []))

    def information(self) -> SeatInformation:
        """What the model's seat may know now (:class:`~strategic_arena.turn.SeatInformation`)."""
        return SeatInformation.of(self.spec, self.env.spiel_state, self.seat)

    def game_header(self) -> str:
        """The decision as ``strategic-arena serve`` reads it: its game header, as JSON.

        The seat's information and the style only, as :class:`~strategic_arena.LLMPlayer` sends
        it: nothing the model's seat may not know (no other seat's cards), and within
        :data:`~strategic_arena.game_header.GAME_HEADER_CAP` bytes (a compact form past it).
        """
        return game_header(self.information(), self.style)

    async def astep(
        self, response: str, *, reasoning: str | None = None, finish_reason: str | None = None
    ) -> StepOutcome:
        """Read the model's ``response``, play it or apply the policy, then the opponents'."""
        if not self._started or self.done:
            raise RuntimeError("the game is over (or not started); call reset()")
        agent = self.agent
        self.wrapper.step(response, reasoning=reasoning, finish_reason=finish_reason)
        info = self.env.infos[agent]
        error: ActionError | None = info["error"]
        self._record(response, None if error is None else error.kind)
        if "feedback" in info:
            return StepOutcome(None, error, str(info["feedback"]), False)
        await self._opponents_move()
        return StepOutcome(info["action"], error, None, self.done)

    def step(
        self, response: str, *, reasoning: str | None = None, finish_reason: str | None = None
    ) -> StepOutcome:
        """:meth:`astep` from synchronous code."""
        return run_sync(self.astep(response, reasoning=reasoning, finish_reason=finish_reason))

    def abandon(self, reason: str = "the model stopped without moving") -> None:
        """End an unfinished game as the model's forfeit (it stopped answering: ``no_action``)."""
        if self.done:
            return
        self._record("", "no_action")
        self.env.forfeit(self.agent)
        self.env.infos[self.agent] = {"error": ActionError("no_action", reason)}

    def returns(self) -> tuple[float, ...]:
        """Every seat's return so far (final once the game is over)."""
        return tuple(float(value) for value in self.env.returns())

    def episode(self) -> Episode:
        """The model's turns as a trainer :class:`Episode` (for the reward definitions)."""
        forfeiter = self.env.forfeited_by
        return Episode(
            env_id=self.env_id,
            seed=self.seed,
            learner_seats=(self.seat,),
            opponent=self.opponent,
            returns=self.returns(),
            status="complete" if forfeiter is None else "forfeit",
            forfeited_by=None if forfeiter is None else self.env.agent_name_mapping[forfeiter],
            turns=list(self._turns),
            num_seats=self.num_seats,
        )

    def reward_parts(self) -> dict[str, float]:
        """``game``, ``format`` and ``invalid`` (see the module docstring); 0 until it is over."""
        if not self.done:
            return {"game": 0.0, "format": 0.0, "invalid": 0.0}
        episode = self.episode()
        cfg = self.reward_config
        game = game_reward(episode, self.seat, cfg) if episode.turns else 0.0
        # every invalid answer (the forfeiting one too) carries its error kind here
        valid = sum(turn.valid for turn in episode.turns)
        invalid = len(episode.turns) - valid
        return {
            "game": game,
            "format": valid * cfg.format_reward,
            "invalid": invalid * cfg.invalid_penalty if invalid else 0.0,
        }

    def reward(self) -> float:
        """The model's total reward for the game (0 until it is over)."""
        return sum(self.reward_parts().values())

    def outcome_text(self) -> str:
        """A closing message for the model: how the game ended and its return."""
        if not self.done:
            return "The game is not over."
        returns = self.returns()
        mine = returns[self.seat]
        forfeiter = self.env.forfeited_by
        if forfeiter == self.agent:
            error = self.env.infos[self.agent].get("error")
            why = f" ({error.kind}: {error.detail})" if isinstance(error, ActionError) else ""
            how = f"you forfeited{why}"
        elif forfeiter is not None:
            how = "your opponent forfeited"
        else:
            how = "it ended by the rules"
        return f"The game is over: {how}. Your return: {mine:+g}."

    def _record(self, response: str, error_kind: str | None) -> None:
        """One answer of the model, as a trainer turn (no token ids: the adapters see text)."""
        self._turns.append(
            Turn(
                env_id=self.env_id,
                seat=self.seat,
                role=self.spec.player_name(self.seat),
                prompt_ids=[],
                response_ids=[],
                logprobs=[],
                text=response,
                error_kind=error_kind,
            )
        )

    async def _opponents_move(self) -> None:
        """Let the other seats act until the model is to move or the game is over."""
        env = self.env
        while not self.done and env.agent_selection != self.agent:
            agent = env.agent_selection
            seat = env.agent_name_mapping[agent]
            decision = await self._players[seat].act(
                GameState(self.env_id, env.spiel_state.clone(), env.spec), seat
            )
            verdict = env.judge(agent, decision)  # a menu action, or a free-text move
            if verdict.outcome == "incomplete":  # an opponent's server failed: no game to score
                raise RuntimeError(f"the opponent of seat {seat} failed: {verdict.error}")
            if verdict.action is None:
                env.forfeit(agent)
            else:
                env.play(verdict)
