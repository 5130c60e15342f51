"""The games as an OpenEnv environment: a server any OpenEnv client can reset and step.

OpenEnv's contract is an ``Environment`` with ``reset``/``step``/``state`` over typed pydantic
``Action``/``Observation``/``State`` models, served by ``openenv.core.create_app`` (HTTP and a
WebSocket session per client) and spoken to by an ``EnvClient``. Here:

* :class:`TextGameAction` -- the model's answer: ``message`` (its response text, in the session's
  answer style; for the ``tools`` style, the ``play`` call as Hermes text, which
  :func:`strategic_arena.tools.tool_calls_text` writes from an API's ``tool_calls``), with an
  optional ``reasoning`` and ``finish_reason`` as the API returned them;
* :class:`TextGameObservation` -- the chat ``messages`` of the model's next decision, the legal
  moves, the ``play`` tool (``tools`` style), the last answer's error or the policy's
  ``feedback``, the returns; ``reward`` is the game's total reward once it is over (the trainer's
  definitions; its parts in ``metadata``), else 0;
* :class:`TextGameEnvironment` -- a :class:`~strategic_arena.integrations.session.GameSession`;
  ``reset(seed=..., seat=..., env_id=...)`` honours the seed (same seed, same deal and same
  opponent moves); without one, seeds come from the environment's own seeded generator;
* :func:`create_game_app` / :class:`GameServer` -- the server (``GameServer`` runs it on loopback
  in a thread: ``with GameServer("kuhn_poker-v0") as server: server.base_url``);
* :class:`TextGameClient` -- the typed client (``TextGameClient(base_url=...).sync()``).

Serve from a shell: ``python -m strategic_arena.integrations.openenv --env kuhn_poker-v0``.
Extra ``[openenv]``.
"""

from __future__ import annotations

import argparse
import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from strategic_arena._extras import require
from strategic_arena.asking import Asking
from strategic_arena.integrations.session import GameSession, run_sync
from strategic_arena.rl.rewards import RewardConfig
from strategic_arena.settings_options import ASKING_FLAGS, add_settings_options, settings_from_args

core: Any = require("openenv.core", "the OpenEnv environment")
client_types: Any = require("openenv.core.client_types", "the OpenEnv client")
pydantic: Any = require("pydantic", "the OpenEnv environment")
Field = pydantic.Field


class TextGameAction(core.Action):  # type: ignore[misc]
    """The model's answer to its current decision."""

    message: str = Field(description="the model's response text, in the session's answer style")
    reasoning: str | None = Field(default=None, description="reasoning returned apart, if any")
    finish_reason: str | None = Field(default=None, description="the API's finish reason")


class TextGameObservation(core.Observation):  # type: ignore[misc]
    """What the model sees: its next prompt, or how the game ended."""

    env_id: str = Field(description="the game")
    seat: int = Field(description="the model's seat")
    messages: list[dict[str, str]] = Field(
        default_factory=list, description="system and user messages of the next decision"
    )
    legal_actions: list[str] = Field(default_factory=list, description="the legal moves")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="the play tool to offer (tools style)"
    )
    error: str | None = Field(default=None, description="why the last answer was not a move")
    feedback: str | None = Field(default=None, description="the re-ask message (retry policy)")
    returns: list[float] = Field(default_factory=list, description="every seat's return so far")
    outcome: str | None = Field(default=None, description="how the game ended, once over")


class TextGameState(core.State):  # type: ignore[misc]
    """The episode: game, seed, seat and what the model's seat may know.

    ``information`` is the seat's :class:`~strategic_arena.turn.SeatInformation` as JSON (the
    payload ``strategic-arena serve`` reads): never another seat's cards. ``seed`` is the seed
    the client passed to ``reset``, and ``None`` when the environment drew one: a drawn seed
    decides the deal, so showing it would show the other seats' cards.
    """

    env_id: str = ""
    seed: int | None = None
    seat: int = 0
    information: dict[str, Any] = Field(default_factory=dict)
    done: bool = False


class TextGameEnvironment(core.Environment):  # type: ignore[misc]
    """Games of the package against its opponents, as an OpenEnv environment.

    Args:
        env_id: the default game (``reset(env_id=...)`` picks another).
        opponent: the opponent spec of the other seats, one for all games or one per env id.
        asking: how the model is asked (:class:`~strategic_arena.asking.Asking`: the answer
            style, illegal-move policy, strictness, history, prompt set, required reasoning).
        rewards: the reward definitions (MARSHAL's by default).
        seed: seed of the generator that draws a game seed when ``reset`` gets none.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own instance and game

    def __init__(
        self,
        env_id: str = "kuhn_poker-v0",
        opponent: str | dict[str, str] = "random",
        *,
        asking: Asking | None = None,
        rewards: RewardConfig | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.default_env_id = env_id
        self.opponent = opponent
        self.asking = asking or Asking()
        self.options: dict[str, Any] = {"asking": self.asking, "rewards": rewards}
        self._rng = np.random.default_rng(seed)
        self._sessions: dict[str, GameSession] = {}
        self.session = self._session_for(env_id)
        self._episode_id: str | None = None
        self._given_seed: int | None = None
        self._steps = 0

    def _session_for(self, env_id: str) -> GameSession:
        """The session of ``env_id`` (built once; a bad id or opponent raises ValueError)."""
        if env_id not in self._sessions:
            opponent = self.opponent if isinstance(self.opponent, str) else self.opponent[env_id]
            self._sessions[env_id] = GameSession(env_id, opponent, **self.options)
        return self._sessions[env_id]

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        seat: int | None = None,
        env_id: str | None = None,
        **kwargs: Any,
    ) -> TextGameObservation:
        """Start a game: ``seed`` fixes it (drawn if absent); ``seat`` defaults to seed % seats."""
        self.session = self._session_for(env_id or self.default_env_id)
        game_seed = int(self._rng.integers(2**31)) if seed is None else int(seed)
        await self.session.areset(game_seed, seat)
        self._given_seed = None if seed is None else game_seed
        self._episode_id = episode_id
        self._steps = 0
        return self._observation(None, None)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        seat: int | None = None,
        env_id: str | None = None,
        **kwargs: Any,
    ) -> TextGameObservation:
        """:meth:`reset_async` from synchronous code."""
        return run_sync(self.reset_async(seed, episode_id, seat, env_id))

    async def step_async(
        self, action: TextGameAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextGameObservation:
        """Play the model's answer, then the opponents' replies."""
        if self.session.done:
            return self._observation("the game is over; call reset()", None)
        outcome = await self.session.astep(
            action.message, reasoning=action.reasoning, finish_reason=action.finish_reason
        )
        self._steps += 1
        error = None if outcome.error is None else f"{outcome.error.kind}: {outcome.error.detail}"
        return self._observation(error, outcome.feedback)

    def step(
        self, action: TextGameAction, timeout_s: float | None = None, **kwargs: Any
    ) -> TextGameObservation:
        """:meth:`step_async` from synchronous code."""
        return run_sync(self.step_async(action))

    @property
    def state(self) -> TextGameState:
        """The current episode."""
        session = self.session
        return TextGameState(
            episode_id=self._episode_id,
            step_count=self._steps,
            env_id=session.env_id,
            seed=self._given_seed,
            seat=session.seat,
            information=session.information().payload(),
            done=session.done,
        )

    def get_metadata(self) -> Any:
        """Name, description and version of this environment."""
        return core.EnvironmentMetadata(
            name="strategic-arena",
            description="OpenSpiel text games against solvers: "
            f"{self.default_env_id}, opponent {self.opponent}, style {self.asking.style}",
            version="0.1.0",
        )

    def _observation(self, error: str | None, feedback: str | None) -> TextGameObservation:
        """The observation of the session's current position."""
        session = self.session
        done = session.done
        parts = session.reward_parts()
        return TextGameObservation(
            env_id=session.env_id,
            seat=session.seat,
            messages=[] if done else [dict(m) for m in session.messages()],
            legal_actions=[] if done else list(session.view().legal_actions.values()),
            tools=session.tools(),
            error=error,
            feedback=feedback,
            returns=list(session.returns()),
            outcome=session.outcome_text() if done else None,
            done=done,
            reward=sum(parts.values()) if done else 0.0,
            metadata={"reward_parts": parts} if done else {},
        )


def create_game_app(*, max_sessions: int = 64, **options: Any) -> Any:
    """The OpenEnv FastAPI app (``options``: :class:`TextGameEnvironment`'s).

    Each client session gets its own environment; up to ``max_sessions`` run at once.
    """
    TextGameEnvironment(**options)  # bad options fail here, not at the first session
    return core.create_app(
        functools.partial(TextGameEnvironment, **options),
        TextGameAction,
        TextGameObservation,
        env_name="strategic_arena",
        max_concurrent_envs=max_sessions,
        state_cls=TextGameState,
    )


class TextGameClient(core.EnvClient):  # type: ignore[misc]
    """The typed OpenEnv client of :class:`TextGameEnvironment` (async; ``.sync()`` for sync)."""

    def _step_payload(self, action: TextGameAction) -> dict[str, Any]:
        """The wire form of an action."""
        payload: dict[str, Any] = action.model_dump(exclude={"metadata"})
        return payload

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        """A ``StepResult`` of :class:`TextGameObservation` from the wire form."""
        observation = TextGameObservation(
            **payload.get("observation", {}),
            done=payload.get("done", False),
            reward=payload.get("reward"),
        )
        return client_types.StepResult(
            observation=observation,
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> TextGameState:
        """The episode state from the wire form."""
        return TextGameState(**payload)


class GameServer:
    """The OpenEnv server on loopback in a background thread (``with GameServer(...) as s``).

    Args:
        host / port: where to listen (port 0 picks a free one).
        max_sessions: concurrent client sessions allowed.
        **options: :class:`TextGameEnvironment`'s arguments.
    """

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, max_sessions: int = 64, **options: Any
    ) -> None:
        uvicorn = require("uvicorn", "the OpenEnv server")
        app = create_game_app(max_sessions=max_sessions, **options)
        config = uvicorn.Config(app, host=host, port=port, log_level="error")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self.host = host

    @property
    def base_url(self) -> str:
        """The server's URL (``http://host:port``; clients open a WebSocket on it)."""
        socket = self._server.servers[0].sockets[0]
        return f"http://{self.host}:{socket.getsockname()[1]}"

    def start(self) -> GameServer:
        """Start serving; returns once the server accepts connections."""
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the OpenEnv server failed to start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join()

    def __enter__(self) -> GameServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve one game's environment until interrupted."""
    parser = argparse.ArgumentParser(
        description="Serve a strategic-arena game as an OpenEnv environment."
    )
    parser.add_argument("--env", default="kuhn_poker-v0", help="env id (default kuhn_poker-v0)")
    parser.add_argument("--opponent", default="random", help="opponent spec (default random)")
    add_settings_options(parser.add_argument_group("how the model is asked"), Asking, ASKING_FLAGS)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-sessions", type=int, default=64, help="concurrent sessions (64)")
    args = parser.parse_args(argv)
    uvicorn = require("uvicorn", "the OpenEnv server")
    try:
        app = create_game_app(
            max_sessions=args.max_sessions,
            env_id=args.env,
            opponent=args.opponent,
            asking=settings_from_args(args, Asking()),
        )
    except ValueError as error:
        parser.error(str(error))
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
