"""Rollouts, the *generate* stage: the policy plays games through the arena's match loop.

One step's games are planned first (:func:`plan_games`), all randomness drawn from a generator
seeded by ``derive_seed(seed, step, "plan")`` (:mod:`strategic_arena.seeding`): for each
training game, ``games.episodes_per_game`` games, each with an env seed, an opponent drawn from the
pool by weight (self-play included) and, against an opponent, a learner seat drawn uniformly
(with its teammates, in a team game: :func:`learner_team`).
Then every game runs concurrently through :func:`strategic_arena.arena.match.play_match` --
the arena's one match loop -- with the policy in each learner seat as the arena's one model
player, :class:`strategic_arena.LLMPlayer`, over an :class:`EngineBackend`; the players'
requests meet in one :class:`~strategic_arena.train.engines.engine.EngineClient`, which batches them
into engine calls.

The player renders the seat's prompt (:func:`strategic_arena.render_messages`, role stated in
the system prompt) and validates the answer (:func:`strategic_arena.validate`) as in the arena;
the :class:`EngineBackend` applies the tokenizer's chat template, generates, and returns the
prompt tokens, response tokens and the engine's log-probs with the answer
(:class:`~strategic_arena.backends.TokenTrace`, kept in the decision). Each learner decision of
a finished game becomes a :class:`~strategic_arena.rl.episode.Turn`. An invalid answer
forfeits the game (MARSHAL's protocol); a game stopped by an endpoint opponent's failure
(incomplete) is not training data and is played again (:data:`INCOMPLETE_REPLAYS`); a game
that keeps failing is dropped from the step, with a warning and ``train/dropped_games``.

The :class:`OpponentPool` holds the configured opponents -- solvers and bots
(:func:`opponents.make`), frozen checkpoints (``checkpoint:PATH``), OpenAI-compatible endpoints
-- and the policy's own frozen snapshots; an entry joins at its ``from_step`` and stays.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from opponents.registry import KINDS, parse_spec
from strategic_arena.actions import TEXT_MOVE
from strategic_arena.arena.match import MatchRecord, play_match
from strategic_arena.asking import Asking
from strategic_arena.backends import (
    ChatResult,
    Messages,
    TokenTrace,
    with_system_prompt,
)
from strategic_arena.door import shown
from strategic_arena.env import TextGameEnv, make
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.players import LLMPlayer
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.seeding import derive_seed
from strategic_arena.train.algo.game_rewards import rewards_by_move, seat_game_rewards
from strategic_arena.train.config import GamesConfig, OpponentConfig, TrainConfig
from strategic_arena.train.engines.engine import BatchSampling, EngineClient, GenerationRequest
from strategic_arena.turn import Player

SELF_PLAY = "self"

log = logging.getLogger("strategic_arena.train")


class PromptEncoder:
    """Chat messages -> prompt token ids with the tokenizer's chat template.

    What a vLLM server does with the same messages and an
    :class:`~strategic_arena.backends.OpenAIBackend` over the same :class:`Asking`: the
    template with the generation prompt and the asking's ``answer.chat_template_kwargs``, then its
    ``answer.response_prefix`` (a prefill, part of the prompt), tokenized without added special
    tokens; the answer decoded with special tokens left out, the token that ended it kept.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        asking: how the model is asked (its prefix, template kwargs and persona, put before
            the system prompt as :class:`~strategic_arena.backends.OpenAIBackend` does, are
            used here).
    """

    def __init__(self, tokenizer: Any, asking: Asking | None = None) -> None:
        asking = asking or Asking()
        self.tokenizer = tokenizer
        self.response_prefix = asking.response_prefix
        self.chat_template_kwargs = dict(asking.chat_template_kwargs)
        self.system_prompt = asking.system_prompt

    def encode(
        self,
        messages: Sequence[Mapping[str, str]],
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[int]:
        """Token ids of ``messages`` with the generation prompt (and the prefix) appended.

        ``tools`` (the ``tools`` style's ``play`` tool) go to the chat template, which shows
        them to the model as its tool-calling format prescribes.
        """
        extra = {"tools": [dict(tool) for tool in tools]} if tools else {}
        text = self.tokenizer.apply_chat_template(
            with_system_prompt(messages, self.system_prompt),
            tokenize=False,
            add_generation_prompt=True,
            **extra,
            **self.chat_template_kwargs,
        )
        ids: list[int] = self.tokenizer(text + self.response_prefix, add_special_tokens=False)[
            "input_ids"
        ]
        return list(ids)

    def decode(self, token_ids: Sequence[int]) -> str:
        """The response text (special tokens such as the stop token left out)."""
        return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=True))


class EngineBackend:
    """The trainer's engine as a chat backend of :class:`~strategic_arena.LLMPlayer`.

    Messages go through the chat template to token ids, the engine client generates, and the
    answer comes back as a :class:`~strategic_arena.backends.ChatResult` whose ``trace`` holds
    the prompt ids, response ids and log-probs. Each request gets its own sampling seed,
    derived from ``seed`` and the request's number, so a game's answers are a function of the
    seeds alone. One backend serves one game (its request counter is the game's).

    Args:
        client: the engine client shared by the step's games.
        encoder: chat template and decoding.
        max_new_tokens: response budget.
        max_sequence_tokens: prompt + response budget (the response gets what is left).
        seed: this game's sampling seed.
        model: the name the backend reports.
        overlong_tokens_left: MARSHAL's over-long rule: an answer leaving this many tokens or
            fewer of ``max_sequence_tokens`` is reported cut off (``finish_reason``
            ``length``: the validator's ``truncated``); 0: off.
    """

    def __init__(
        self,
        client: EngineClient,
        encoder: PromptEncoder,
        *,
        max_new_tokens: int,
        max_sequence_tokens: int,
        seed: int,
        model: str = "policy",
        overlong_tokens_left: int = 0,
    ) -> None:
        self.client = client
        self.overlong_tokens_left = overlong_tokens_left
        self.encoder = encoder
        self.max_new_tokens = max_new_tokens
        self.max_sequence_tokens = max_sequence_tokens
        self.seed = seed
        self.model = model
        self.requests = 0

    async def complete(
        self,
        messages: Messages,
        *,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """Generate the answer to ``messages``.

        ``headers`` are for HTTP backends (unused). ``tools`` go to the chat template, as a
        tool-calling server shows them; ``tool_choice`` cannot be enforced on raw generation,
        so a model that answers without a call gets the validator's ``no_action``.
        """
        started = time.perf_counter()  # the decision's latency: encoding, queueing, generation
        prompt_ids = self.encoder.encode(messages, tools)
        budget = min(self.max_new_tokens, self.max_sequence_tokens - len(prompt_ids))
        request = GenerationRequest(
            prompt_ids, derive_seed(self.seed, self.requests), max_new_tokens=max(0, budget)
        )
        self.requests += 1
        generation = await self.client.generate(request)
        finish_reason = generation.finish_reason
        left = self.max_sequence_tokens - len(prompt_ids) - len(generation.token_ids)
        if self.overlong_tokens_left and left <= self.overlong_tokens_left:
            finish_reason = "length"  # the sequence budget is spent: an over-long answer
        return ChatResult(
            # The prefix is a prefill: the model's answer starts with it, so the validator reads
            # it as part of the answer (the tokens of the trace are the generated ones only).
            content=self.encoder.response_prefix + self.encoder.decode(generation.token_ids),
            finish_reason=finish_reason,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(generation.token_ids),
            latency_s=time.perf_counter() - started,
            trace=TokenTrace(
                tuple(prompt_ids),
                tuple(generation.token_ids),
                tuple(generation.logprobs),
                generation.weight_version,
            ),
        )


def configured_player(
    cfg: TrainConfig, client: EngineClient, encoder: PromptEncoder, seed: int, *, name: str
) -> LLMPlayer:
    """The policy (or a frozen model) as the one model player, asked as ``cfg.answer`` says.

    Invalid answers forfeit (MARSHAL's protocol); ``seed`` is the game's sampling seed.
    """
    backend = EngineBackend(
        client,
        encoder,
        max_new_tokens=BatchSampling.of(cfg.sampling).max_new_tokens,
        max_sequence_tokens=cfg.rollout.max_sequence_tokens,
        seed=seed,
        model=name,
        overlong_tokens_left=cfg.rollout.overlong_tokens_left,
    )
    return LLMPlayer(backend, cfg.answer, name=name, seed=seed)


def learner_turns(
    record: MatchRecord,
    learner_seats: Sequence[int],
    spec: GameSpec,
    paid: Sequence[Sequence[float]] | None = None,
) -> list[Turn]:
    """The :class:`Turn` of every learner decision of ``record`` that carries a token trace.

    Each turn carries what the game paid its seat from that decision to the seat's next one
    (:mod:`strategic_arena.train.algo.game_rewards`: Hanabi's +1 per card played); ``paid`` is
    :func:`~strategic_arena.train.algo.game_rewards.rewards_by_move` of the record when the caller
    has it already.
    """
    seats = [move.seat for move in record.moves]
    if paid is None:
        paid = rewards_by_move(spec, record.history, seats)
    game_rewards: dict[int, float] = {}
    if paid is not None:
        for seat in set(learner_seats):
            mine = [i for i, who in enumerate(seats) if who == seat]
            game_rewards.update(zip(mine, seat_game_rewards(paid, seats, seat), strict=True))
    turns = []
    sent = -1  # index of the latest move that reached the game (Episode.moves)
    for index, move in enumerate(record.moves):
        trace = move.decision.trace
        sent += move.action == TEXT_MOVE
        if move.seat not in learner_seats or trace is None:
            continue
        turns.append(
            Turn(
                env_id=record.env_id,
                seat=move.seat,
                role=spec.player_name(move.seat),
                prompt_ids=list(trace.prompt_ids),
                response_ids=list(trace.response_ids),
                logprobs=list(trace.logprobs),
                text=move.response,
                error_kind=None if move.error is None else move.error.kind,
                weight_version=trace.weight_version,
                game_reward=game_rewards.get(index, 0.0),
                move_index=sent if move.action == TEXT_MOVE else None,
            )
        )
    return turns


# -- the opponent pool -------------------------------------------------------------------------


@dataclass
class PoolEntry:
    """One opponent of the pool.

    Attributes:
        name: label in episodes and metrics (the spec, or ``snapshot@step-N``).
        weight: sampling weight.
        games: env ids it plays (``None``: all it can).
        from_step: the step it joins at.
        config: the configured entry (``None`` for snapshots).
        snapshot: directory of a frozen snapshot of the policy.
    """

    name: str
    weight: float
    games: tuple[str, ...] | None
    from_step: int
    config: OpponentConfig | None = None
    snapshot: str | None = None


@dataclass
class OpponentPool:
    """Configured opponents plus frozen snapshots, with a step-based curriculum.

    Snapshots are the pool's only mutable state (:meth:`state_dict`); everything else comes
    from the config.
    """

    entries: list[PoolEntry]
    self_play_weight: float
    snapshots: list[PoolEntry] = field(default_factory=list)

    @classmethod
    def from_config(cls, games: GamesConfig) -> OpponentPool:
        """The pool of the ``games`` section (no snapshots yet)."""
        entries = [
            PoolEntry(
                name=o.name or (o.spec if o.base_url is None else f"{o.spec}@{shown(o.base_url)}"),
                weight=o.weight,
                games=tuple(o.games) if o.games is not None else None,
                from_step=o.from_step,
                config=o,
            )
            for o in games.opponents
        ]
        return cls(entries, games.self_play_weight)

    def add_snapshot(self, path: str, step: int, weight: float, keep: int) -> None:
        """Add a frozen snapshot of the policy (dropping the oldest beyond ``keep``)."""
        self.snapshots.append(PoolEntry(f"snapshot@step-{step}", weight, None, step, snapshot=path))
        del self.snapshots[: max(0, len(self.snapshots) - keep)]

    def available(self, env_id: str, step: int) -> list[PoolEntry]:
        """Entries that play ``env_id`` at ``step`` (self-play not included)."""
        result = []
        for entry in [*self.entries, *self.snapshots]:
            if entry.from_step > step or entry.weight <= 0:
                continue
            if entry.games is not None and env_id not in entry.games:
                continue
            config = entry.config
            if config is not None and config.base_url is None and not _plays(config.spec, env_id):
                continue
            result.append(entry)
        return result

    def sample(self, env_id: str, step: int, rng: np.random.Generator) -> PoolEntry | None:
        """An entry by weight, or ``None`` for self-play."""
        entries = self.available(env_id, step)
        weights = np.array([self.self_play_weight] + [e.weight for e in entries], dtype=float)
        if weights.sum() <= 0:
            raise ValueError(f"no opponent with positive weight plays {env_id} at step {step}")
        choice = int(rng.choice(len(weights), p=weights / weights.sum()))
        return None if choice == 0 else entries[choice - 1]

    def state_dict(self) -> dict[str, Any]:
        """The snapshots (the configured entries are rebuilt from the config)."""
        return {"snapshots": [dataclasses.asdict(entry) for entry in self.snapshots]}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.snapshots = [
            PoolEntry(
                name=s["name"],
                weight=s["weight"],
                games=tuple(s["games"]) if s["games"] is not None else None,
                from_step=s["from_step"],
                snapshot=s["snapshot"],
            )
            for s in state.get("snapshots", [])
        ]


def _plays(spec: str, env_id: str) -> bool:
    """Whether an opponent spec (or ``checkpoint:``) can play ``env_id``."""
    if spec.startswith("checkpoint:"):
        return True
    name, _ = parse_spec(spec)
    return KINDS[name].plays(env_id)


# -- planning and playing ----------------------------------------------------------------------


@dataclass(frozen=True)
class GamePlan:
    """One game of a step: env, seed, opponent (``None``: self-play) and learner seats."""

    index: int
    env_id: str
    seed: int
    opponent: PoolEntry | None
    learner_seats: tuple[int, ...]


def plan_games(
    games: GamesConfig,
    seed: int,
    pool: OpponentPool,
    step: int,
    *,
    env_ids: Sequence[str] | None = None,
    round_: int = 0,
) -> list[GamePlan]:
    """The step's games, drawn from ``(seed, step)`` alone (see the module docstring).

    ``games`` says which games and how many of each (``env_ids``: only these); ``round_`` > 0
    plans a further round of the step's games (the episode bank's
    over-collection): drawn from ``(seed, step, round_)``, their indices following the earlier
    rounds' so that every game's sampling seed differs.
    """
    key = (step, "plan") if round_ == 0 else (step, "plan", round_)
    rng = np.random.default_rng(derive_seed(seed, *key))
    env_ids = env_ids or games.ids
    first = round_ * len(env_ids) * games.episodes_per_game
    plans: list[GamePlan] = []
    for env_id in env_ids:
        spec = get_spec(env_id)
        seats = spec.num_players
        for _ in range(games.episodes_per_game):
            env_seed = int(rng.integers(2**31))
            opponent = pool.sample(env_id, step, rng)
            if opponent is None:
                learner: tuple[int, ...] = tuple(range(seats))
            else:
                learner = learner_team(spec, int(rng.integers(seats)))
            plans.append(GamePlan(first + len(plans), env_id, env_seed, opponent, learner))
    return plans


def learner_team(spec: GameSpec, seat: int) -> tuple[int, ...]:
    """The learner's seats against an opponent, given the seat drawn: that seat's whole team.

    In a team game (:attr:`GameSpec.teams`, e.g. two against two) the policy plays every seat
    of its team and the opponent the others; where every seat is its own team, and in a
    cooperative game (whose one team the opponent joins as the policy's partner), the seat
    alone.
    """
    if spec.cooperative:
        return (seat,)
    teams = spec.teams
    return tuple(s for s in range(spec.num_players) if teams[s] == teams[seat])


def episode_from_record(record: MatchRecord, plan: GamePlan, spec: GameSpec) -> Episode:
    """The :class:`Episode` of a finished game (complete or forfeited)."""
    paid = rewards_by_move(spec, record.history, [move.seat for move in record.moves])
    return Episode(
        env_id=record.env_id,
        seed=record.seed,
        learner_seats=plan.learner_seats,
        opponent=SELF_PLAY if plan.opponent is None else plan.opponent.name,
        returns=tuple(float(r) for r in record.returns),
        status=record.status,
        forfeited_by=record.forfeited_by,
        turns=learner_turns(record, plan.learner_seats, spec, paid),
        num_seats=spec.num_players,
        num_moves=len(record.moves),
        final_rewards=tuple(paid[-1]) if paid else None,
        moves=played_moves(record),
    )


def played_moves(record: MatchRecord) -> tuple[tuple[int, str], ...]:
    """``(seat, text)`` of every move of ``record`` that reached the game (its free-text moves).

    Menu games keep their action history instead (``record.history``): none here.
    """
    return tuple((move.seat, move.action_text) for move in record.moves if move.action == TEXT_MOVE)


#: Times a game stopped by a server failure (an endpoint opponent's) is played again.
INCOMPLETE_REPLAYS = 2


@dataclass(frozen=True)
class SeatPolicy:
    """A co-trained policy as the rollouts see it: its name, engine client and encoder."""

    name: str
    client: EngineClient
    encoder: PromptEncoder


class RolloutRunner:
    """Plays planned games concurrently and returns their episodes.

    Args:
        cfg: the run's config.
        client: the policy's engine client.
        encoder: the policy's prompt encoder.
        opponent_factory: builds the non-policy player of a pool entry for one game.
        seat_policies: several co-trained policies (:mod:`strategic_arena.train.loop.cotrain`):
            the policy of each learner seat, which plays it through its own client; each
            policy's player in a game samples from its own seed, ``(game seed, name)``.
            ``None``: the one policy (``client``) in every learner seat.
    """

    def __init__(
        self,
        cfg: TrainConfig,
        client: EngineClient,
        encoder: PromptEncoder,
        opponent_factory: Callable[[PoolEntry, str, int, int], Player],
        seat_policies: Mapping[int, SeatPolicy] | None = None,
    ) -> None:
        self.cfg = cfg
        self.client = client
        self.encoder = encoder
        self.opponent_factory = opponent_factory
        self.seat_policies = seat_policies
        self.dropped = 0

    def learner_players(self, seats: Sequence[int], seed: int) -> dict[int, Player]:
        """The player of each learner seat of one game (one player object per policy)."""
        if self.seat_policies is None:
            policy = configured_player(self.cfg, self.client, self.encoder, seed, name="policy")
            return dict.fromkeys(seats, policy)
        made: dict[str, Player] = {}
        players: dict[int, Player] = {}
        for seat in seats:
            owner = self.seat_policies[seat]
            if owner.name not in made:
                made[owner.name] = configured_player(
                    self.cfg,
                    owner.client,
                    owner.encoder,
                    derive_seed(seed, owner.name),
                    name=owner.name,
                )
            players[seat] = made[owner.name]
        return players

    def clients(self) -> list[EngineClient]:
        """Every engine client the rollouts use (closed after each round of games)."""
        if self.seat_policies is None:
            return [self.client]
        distinct = {id(p.client): p.client for p in self.seat_policies.values()}
        return list(distinct.values())

    async def play(self, plans: Sequence[GamePlan], step: int) -> list[Episode]:
        """Play every plan (``rollout.max_concurrent_episodes`` at once), episodes in order."""
        return [episode for _, episode in await self.play_indexed(plans, step)]

    async def play_indexed(self, plans: Sequence[GamePlan], step: int) -> list[tuple[int, Episode]]:
        """``(plan.index, episode)`` of every plan not dropped, in plan order.

        A game an endpoint opponent's server broke ``INCOMPLETE_REPLAYS + 1`` times is dropped
        (counted in :attr:`dropped`): one flaky opponent must not end a training run. If every
        game of the step is dropped there is nothing to train on, and that raises.
        """
        self.dropped = 0
        limit = asyncio.Semaphore(self.cfg.rollout.max_concurrent_episodes)
        envs: dict[str, list[TextGameEnv]] = {}

        async def one(plan: GamePlan) -> Episode | None:
            async with limit:
                spec = get_spec(plan.env_id)
                seed = derive_seed(self.cfg.run.seed, step, plan.index, "policy")
                # A game an endpoint opponent's server broke (incomplete) is no training data:
                # it is played again from the start, a few times at most.
                for _ in range(INCOMPLETE_REPLAYS + 1):
                    learners = self.learner_players(plan.learner_seats, seed)
                    players: list[Player] = []
                    for seat in range(spec.num_players):
                        if seat in learners:
                            players.append(learners[seat])
                        else:
                            assert plan.opponent is not None
                            players.append(
                                self.opponent_factory(plan.opponent, plan.env_id, seat, plan.seed)
                            )
                    free = envs.setdefault(plan.env_id, [])
                    env = free.pop() if free else make(plan.env_id)
                    record = await play_match(plan.env_id, players, plan.seed, env=env)
                    free.append(env)
                    if record.status != "incomplete":
                        return episode_from_record(record, plan, spec)
                self.dropped += 1
                log.warning(
                    "%s game %d dropped: the opponent's server failed in %d tries (%s)",
                    plan.env_id,
                    plan.index,
                    INCOMPLETE_REPLAYS + 1,
                    record.infrastructure_error,
                )
                return None

        try:
            results = await asyncio.gather(*(one(plan) for plan in plans))
        finally:
            for client in self.clients():
                await client.aclose()
        kept = [(p.index, e) for p, e in zip(plans, results, strict=True) if e is not None]
        if plans and not kept:
            raise RuntimeError(
                f"every game of step {step} was dropped: the opponents' servers failed in "
                f"{INCOMPLETE_REPLAYS + 1} tries of each (see the warnings above)"
            )
        return kept
