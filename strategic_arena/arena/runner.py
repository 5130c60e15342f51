"""Runs: many games between entrants, scheduled concurrently, stored as they finish, resumable.

A run is a list of :class:`GameTask` -- one per game -- built from entrants and env ids by
:func:`versus` (candidates against opponents: the arena's evaluation) or :func:`round_robin`
(everyone against everyone: the baseline ladder). Scheduling rules:

* **Every seat equally.** A matchup of two different players is played in every seat rotation
  (:func:`seat_rotations`: each player in each seat, the other in every other seat; with two
  seats, both seatings), with ``num_games`` split evenly between them (rounded up to a
  multiple of the seatings). Games of any number of seats are scheduled this way.
* **Paired deals.** Game ``i`` of an env has the same env seed in every seating and against every
  opponent, so seat swaps and opponents are compared on the same cards (duplicate format).
* **Seeds from the run seed.** Env seeds and player seeds (opponents' generators included) are
  derived from the run's root seed and the game's key by
  :func:`strategic_arena.seeding.derive_seed`: a rerun plays the same games. ``eval`` draws the
  root seed from the OS (:func:`strategic_arena.seeding.secret_seed`) unless the user fixes
  one, stores it with the run (:func:`prepare`) and never sends it: an endpoint that knows this
  code cannot rebuild the deals.
* **Games start in a secret order.** The games are played in an order shuffled by a generator
  derived from the root seed (:func:`schedule`), so counting game starts does not tell an
  endpoint which game (and so which paired deal) it is playing.
* **Cooperative games** (Hanabi) are played in self-play (the player in every seat) and with each
  partner that can play them.

:func:`run` plays the tasks under an asyncio concurrency limit, writes each finished game with
its moves in one transaction (:meth:`ResultsStore.add_game`) and skips games already stored
under the run's name, so rerunning after a crash or ``kill -9`` completes only what is missing.

Every game ends as a stored outcome, whatever goes wrong: a malformed reply is the model's
invalid answer (the backend's checks, :mod:`strategic_arena.backends`), and an exception
anywhere in a game -- a player that raises, a builder that fails -- stops it as ``incomplete``
with the exception as its error, like a server failure. Nothing is dropped, so coverage sees
every game a player breaks.

A game that a player's server broke (an infrastructure error after the backend's retries: see
:mod:`strategic_arena.arena.match`) is stored as ``incomplete`` and scored nowhere; the next
call plays it again from the start (same seeds), as long as the key has fewer than
``1 + max_replays`` incomplete tries. A call never replays a game it has just played: a server
that is down fails fast, and the user reruns when it is back.

A game whose request the server *refused* (an HTTP 3xx or a 4xx other than 408/429, error
kind ``refused``: a wrong URL, key, model name or parameter -- or an endpoint that refuses
whenever it is losing) is stored as ``incomplete`` like a server failure, and counts as one of
its key's tries: the run goes on with the other games, the summary carries the server's
message (:attr:`RunSummary.refused`), and a refused game is replayed by later calls at most
``max_replays`` times, then given up for good. So a run against a selective refuser finishes
after ``1 + max_replays`` calls, its refused games final and left out of every score (the
leaderboard leaves the player unranked), instead of stopping every call at its first refusal.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

import opponents
from opponents.registry import KINDS, parse_spec
from strategic_arena.actions import ActionError
from strategic_arena.arena.leases import DEFAULT_LEASE_S, Leases
from strategic_arena.arena.match import MatchRecord, MoveRecord, play_match
from strategic_arena.arena.store import ResultsStore, StoreError
from strategic_arena.backends import OpenAIBackend
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line
from strategic_arena.env import TextGameEnv, make
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.players import LLMPlayer
from strategic_arena.seeding import derive_seed
from strategic_arena.turn import Decision, GameState, Player

PlayerBuilder = Callable[[str, int], Player]
"""Builds an entrant's player for one game: ``(env_id, seed) -> Player``."""


@dataclass(frozen=True)
class Entrant:
    """A participant of a run: a name unique in the run, what it is, and how to build it.

    Attributes:
        name: the name games and reports use.
        kind: what it is (``llm``, ``mcts``, ``nash``...), stored with the player.
        params: public parameters stored with the player (never secrets).
        build: makes the player for one game.
        envs: env ids it can play; ``None`` means every env.
        env_prefixes: env id prefixes it can also play (``openspiel/`` for ``random``).
    """

    name: str
    kind: str
    params: Mapping[str, Any]
    build: PlayerBuilder = field(compare=False, repr=False)
    envs: tuple[str, ...] | None = None
    env_prefixes: tuple[str, ...] = ()

    def plays(self, env_id: str) -> bool:
        """Whether this entrant can play ``env_id``."""
        return (
            self.envs is None
            or env_id in self.envs
            or any(env_id.startswith(prefix) for prefix in self.env_prefixes)
        )

    @classmethod
    def opponent(cls, spec: str) -> Entrant:
        """A built-in opponent from its spec (``mcts:simulations=100``), named by the spec."""
        name, params = parse_spec(spec)

        def build(env_id: str, seed: int) -> Player:
            return opponents.make(spec, env_id, seed=seed)

        kind = KINDS[name]
        return cls(spec, name, dict(params), build, tuple(kind.envs), kind.env_prefixes)

    @classmethod
    def llm(cls, backend: OpenAIBackend, *, name: str | None = None) -> Entrant:
        """A model behind an OpenAI-compatible endpoint, played by :class:`LLMPlayer`.

        The stored parameters are the model, base URL, how it is asked (the backend's
        :class:`~strategic_arena.asking.Asking`) and how it samples (its
        :class:`~strategic_arena.asking.Sampling`, then the asking's request fields); the API
        key lives only inside ``backend`` and is never stored. Settings that older runs did
        not store (thinking in history, shuffled actions, required reasoning, a prefix) are
        stored only when set, so stored players stay the same.

        A user's prompt set (not the package's own) is part of the player's identity: its
        ``name@digest`` is stored with the parameters and, unless ``name`` is given, appended
        to the player's name, so the games of different prompts are reported and rated apart
        (a store refuses one name with two prompt sets).
        """
        asking = backend.asking
        prompts = asking.prompt_set()  # a bad folder fails here, before any game
        sampling = backend.sampling
        params: dict[str, Any] = {
            "model": backend.model,
            "base_url": shown(backend.base_url),
            "style": asking.style,
            "policy": asking.policy,
            "include_history": asking.include_history,
            "strict": asking.strict,
            **sampling.request_fields(),
            **sampling.extra_fields(),
            **asking.request_fields(),
        }
        if asking.thinking_in_history != "keep":
            params["thinking_in_history"] = asking.thinking_in_history
        if asking.shuffle_actions:
            params["shuffle_actions"] = True
        if asking.require_reasoning is not None:
            params["require_reasoning"] = asking.require_reasoning
        if asking.response_prefix:
            params["response_prefix"] = asking.response_prefix
        if asking.system_prompt is not None:
            params["system_prompt"] = asking.system_prompt
        label = name or backend.model
        if not prompts.is_default:
            params["prompts"] = prompts.label
            label = name or f"{label}+prompts-{prompts.label}"

        def build(env_id: str, seed: int) -> Player:
            return LLMPlayer(backend, asking, name=label, seed=seed)

        return cls(label, "llm", params, build)


@dataclass(frozen=True)
class GameTask:
    """One game to play: its key in the run, env, seed and the entrant in each seat."""

    key: str
    env_id: str
    seed: int
    seats: tuple[Entrant, ...]
    index: int = 0


def seat_rotations(
    first: Entrant, second: Entrant, sides: Sequence[int] = (0, 1)
) -> list[tuple[Entrant, ...]]:
    """Every seat rotation of ``first`` against ``second``; one seating for self-play.

    ``sides`` gives each seat its side (:func:`sides`: its team in a team game, else the seat
    itself). ``first`` takes each side in turn, ``second`` every other seat (two seats: both
    seatings, ``first`` moving first, then second; three seats: ``first`` in seat 0, 1, then
    2). Deals are paired across rotations (the same game index gets the same deal), so no
    seat's advantage favours either entrant.
    """
    if first == second:
        return [(first,) * len(sides)]
    order = list(dict.fromkeys(sides))
    return [tuple(first if side == mine else second for side in sides) for mine in order]


def sides(spec: GameSpec) -> tuple[int, ...]:
    """The side of each seat for :func:`seat_rotations`: its team, or the seat itself.

    A cooperative game's one team is not a side (the opponent is the player's partner there):
    the player then takes one seat at a time.
    """
    return tuple(range(spec.num_players)) if spec.cooperative else spec.teams


def _both_ways(first: Entrant, second: Entrant, spec: GameSpec) -> list[tuple[Entrant, ...]]:
    """The rotations of ``first`` against ``second``, then those of ``second`` not yet listed.

    Two seats: the same two seatings as :func:`seat_rotations`; more: each entrant alone (or
    as a whole team) against the other in every seat.
    """
    listed = seat_rotations(first, second, sides(spec))
    return listed + [s for s in seat_rotations(second, first, sides(spec)) if s not in listed]


def _tasks(
    env_id: str, seatings: Sequence[tuple[Entrant, ...]], num_games: int, seed: int
) -> list[GameTask]:
    """``num_games`` games split evenly over ``seatings`` (rounded up), deals paired by index."""
    per_seating = -(-num_games // len(seatings))
    tasks = []
    for seats in seatings:
        names = "/".join(entrant.name for entrant in seats)
        for index in range(per_seating):
            tasks.append(
                GameTask(
                    key=f"{env_id}/{names}/{index}",
                    env_id=env_id,
                    seed=derive_seed(seed, env_id, index),
                    seats=tuple(seats),
                    index=index,
                )
            )
    return tasks


def _check_names(entrants: Iterable[Entrant]) -> None:
    seen: dict[str, Entrant] = {}
    for entrant in entrants:
        other = seen.setdefault(entrant.name, entrant)
        if other != entrant:
            raise ValueError(f"two different players are named {entrant.name!r}")


def versus(
    candidates: Sequence[Entrant],
    opponents: Sequence[Entrant],
    env_ids: Sequence[str],
    num_games: int,
    seed: int,
) -> list[GameTask]:
    """Every candidate against every opponent that plays each env, in every seat rotation.

    Each candidate plays each opponent in :func:`seat_rotations`: the candidate in each seat
    in turn, the opponent in every other seat (two seats: both seatings). ``num_games`` games
    per candidate and opponent are split evenly over the rotations (rounded up). In a
    cooperative game each candidate also plays in self-play; in a competitive one a
    candidate without an applicable opponent is an error (the user asked for a game no chosen
    opponent can play). A game of one seat is played by each candidate alone.
    """
    if num_games < 1:
        raise ValueError("num_games must be at least 1")
    _check_names([*candidates, *opponents])
    tasks: list[GameTask] = []
    for env_id in env_ids:
        spec = get_spec(env_id)
        rivals = [opponent for opponent in opponents if opponent.plays(env_id)]
        for candidate in candidates:
            if not candidate.plays(env_id):
                continue
            if spec.num_players == 1:  # a one-seat game (a puzzle) has no opponent
                tasks += _tasks(env_id, [(candidate,)], num_games, seed)
                continue
            pairs = [candidate] if spec.cooperative else []
            pairs += [rival for rival in rivals if rival != candidate]
            if not pairs:
                raise ValueError(
                    f"no chosen opponent plays {env_id}; "
                    f"opponents given: {', '.join(o.name for o in opponents) or 'none'}"
                )
            for rival in pairs:
                seatings = seat_rotations(candidate, rival, sides(spec))
                tasks += _tasks(env_id, seatings, num_games, seed)
    return tasks


def round_robin(
    entrants: Sequence[Entrant], env_ids: Sequence[str], num_games: int, seed: int
) -> list[GameTask]:
    """Every pair of entrants that both play an env, every seat rotation (the baseline ladder).

    Each pair plays each entrant alone in every seat against the other (two seats: both
    seatings). Cooperative games add each entrant's self-play.
    """
    if num_games < 1:
        raise ValueError("num_games must be at least 1")
    _check_names(entrants)
    tasks: list[GameTask] = []
    for env_id in env_ids:
        spec = get_spec(env_id)
        able = [entrant for entrant in entrants if entrant.plays(env_id)]
        if spec.num_players == 1:  # a one-seat game: each entrant alone
            tasks += [t for entrant in able for t in _tasks(env_id, [(entrant,)], num_games, seed)]
            continue
        for i, first in enumerate(able):
            partners = able[i:] if spec.cooperative else able[i + 1 :]
            for second in partners:
                seatings = _both_ways(first, second, spec)
                tasks += _tasks(env_id, seatings, num_games, seed)
    return tasks


def schedule(tasks: Sequence[GameTask], seed: int) -> list[GameTask]:
    """``tasks`` in the order they start: a permutation drawn from the run's root ``seed``.

    The key and seeds of each game stay the same (resuming is unaffected); only the order of
    game starts changes, so an endpoint cannot tell a game's index (its deal) by counting them.
    """
    order = np.random.default_rng(derive_seed(seed, "schedule")).permutation(len(tasks))
    return [tasks[int(i)] for i in order]


def prepare(
    store: ResultsStore,
    run_name: str,
    seed: int | None,
    settings: Mapping[str, Any],
    make_tasks: Callable[[int], list[GameTask]],
) -> tuple[int, list[GameTask]]:
    """The root seed and tasks of run ``run_name``, the run and its players recorded.

    Args:
        store: where the run goes.
        run_name: the run.
        seed: the user's root seed, or ``None``: the stored run's seed when it exists (a
            resumed run), else a secret seed drawn from the OS.
        settings: public settings stored with a new run.
        make_tasks: the run's tasks from its root seed (:func:`versus`, :func:`round_robin`).

    Everything is written in one transaction, so a refused run (bad tasks, a player name
    taken) leaves nothing behind.
    """
    with store.transaction():
        root = store.open_run(run_name, seed, settings).seed
        tasks = make_tasks(root)
        register(store, {entrant.name: entrant for t in tasks for entrant in t.seats}.values())
    return root, tasks


class _Contained:
    """A player whose exceptions end its decision as an infrastructure error (never raised).

    The match then stops the game as ``incomplete`` with the moves so far, so the game is
    stored and counted whatever the player (or its endpoint) did.
    """

    def __init__(self, player: Player) -> None:
        self.player = player
        self.name = player.name

    def __getattr__(self, attribute: str) -> Any:
        # Everything else is the player's own (its prompt set, which the match records).
        return getattr(self.player, attribute)

    async def act(self, state: GameState, seat: int) -> Decision:
        try:
            return await self.player.act(state, seat)
        except Exception as error:
            failure = ActionError("endpoint", f"the player raised {_described(error)}")
            return Decision(None, error=failure, errors=(failure,))


def _described(error: BaseException) -> str:
    """``Type: message`` of an exception, on one line and cut to a few hundred characters."""
    return printable_line(f"{type(error).__name__}: {error}", limit=300)


def _broken(task: GameTask, seat: int, error: BaseException) -> MatchRecord:
    """The incomplete record of a game that raised outside a player's decision."""
    failure = ActionError("endpoint", f"the game raised {_described(error)}")
    move = MoveRecord(0, seat, None, "", "", failure, Decision(None, error=failure))
    return MatchRecord(
        env_id=task.env_id,
        seed=task.seed,
        players=tuple(entrant.name for entrant in task.seats),
        moves=(move,),
        returns=tuple(0.0 for _ in task.seats),
        status="incomplete",
        infrastructure_error=f"endpoint: {failure.detail}",
    )


@dataclass
class RunSummary:
    """What a call to :func:`run` did.

    Attributes:
        run_id: the run's id in the store.
        total: games in the run.
        resumed: games found already stored (skipped).
        played: games played, scored and stored by this call.
        games_with_errors: stored games in which some answer was invalid.
        incomplete: games this call stored as incomplete (a server failed; a rerun replays
            them).
        given_up: games left incomplete for good (``1 + max_replays`` incomplete tries).
        failed: ``(key, error)`` of games that raised outside a player's decision (a player
            could not be built, the env failed); they are stored as incomplete too.
        refused: ``(key, server's message)`` of games whose request the server refused; they
            are stored as incomplete (an endpoint cannot make a game vanish by refusing in a
            lost position), replayed by later calls up to ``max_replays`` times like any
            incomplete game, then given up.
        elapsed_s: wall-clock seconds of this call.
    """

    run_id: int
    total: int
    resumed: int = 0
    played: int = 0
    games_with_errors: int = 0
    incomplete: int = 0
    given_up: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def complete(self) -> bool:
        """Whether every game of the run is stored and scored."""
        return self.resumed + self.played == self.total


class Progress:
    """A one-line progress bar: share done, items done, errors, items/s and ETA.

    Items are ``unit`` (games by default; ``grade`` counts games and queries). The rate is
    measured from the first finished item on (start-up, loading a model, the first slow answer
    are not a rate), so it and the ETA appear once two items have finished; before that the line
    says ``rate pending``, never a zero rate beside a made-up ETA.

    On a terminal the line is redrawn in place; otherwise (logs, CI) a line is printed at most
    every ``interval_s`` seconds and at the end.

    ``seconds_per`` names one item (``step``) for work slower than an item a second: the line
    then says seconds per item instead of items per second. ``count_errors`` off leaves out the
    invalid-answer count (a training step has none to report).
    """

    def __init__(
        self,
        total: int,
        resumed: int,
        *,
        label: str = "",
        stream: TextIO | None = None,
        interval_s: float = 5.0,
        unit: str = "games",
        clock: Callable[[], float] = time.perf_counter,
        seconds_per: str | None = None,
        count_errors: bool = True,
    ) -> None:
        # The label names a run or a player, which may come from an endpoint: escaped once here.
        self.total, self.resumed, self.unit = total, resumed, unit
        self.seconds_per, self.count_errors = seconds_per, count_errors
        self.label = printable_line(label)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval_s = 0.1 if self.tty else interval_s
        self.clock = clock
        self.started = clock()
        self._last = 0.0
        self._first_done: float | None = None  # when the first item finished
        self._last_done = 0.0  # when the latest item finished
        self.done = self.errors = self.failed = self.incomplete = 0

    def rate(self) -> float | None:
        """Items per second since the first finished item (``None`` until there is one)."""
        if self._first_done is None or self.done < 2:
            return None
        elapsed = self._last_done - self._first_done
        return (self.done - 1) / elapsed if elapsed > 0 else None

    def line(self) -> str:
        """The current status line."""
        rate = self.rate()
        # Workers sharing a run: games another worker stored after this one counted its resumed
        # games can make the sum pass the total; the line never says more than all of them.
        left = max(self.total - self.resumed - self.done - self.failed - self.incomplete, 0)
        if rate is None:
            speed = " | rate pending"
        elif self.seconds_per is not None:
            speed = f" | {1 / rate:.3g} s/{self.seconds_per} | ETA {_duration(left / rate)}"
        else:
            speed = f" | {rate:.3g} {self.unit}/s | ETA {left / rate:.0f}s"
        finished = min(self.resumed + self.done, self.total)
        share = finished / self.total if self.total else 1.0
        filled = round(20 * share)
        parts = [
            f"{self.label} " if self.label else "",
            f"[{'#' * filled}{'-' * (20 - filled)}] {100 * share:3.0f}% ",
            f"{finished}/{self.total} {self.unit}",
            f" ({self.resumed} resumed)" if self.resumed else "",
            f" | {self.errors} with invalid answers" if self.count_errors else "",
            f" | {self.incomplete} incomplete (server failures)" if self.incomplete else "",
            f" | failed {self.failed}" if self.failed else "",
            speed,
        ]
        return "".join(parts)

    def update(
        self,
        *,
        error: bool = False,
        failed: bool = False,
        incomplete: bool = False,
        final: bool = False,
    ) -> None:
        """Count one game (or none, with ``final``) and redraw if due."""
        if failed:
            self.failed += 1
        elif incomplete:
            self.incomplete += 1
        elif not final:
            self.done += 1
            self.errors += int(error)
        now = self.clock()
        if not (failed or incomplete or final):
            if self._first_done is None:
                self._first_done = now
            self._last_done = now
        if final or now - self._last >= self.interval_s:
            self._last = now
            end = "\n" if final or not self.tty else ""
            prefix = "\r\x1b[2K" if self.tty else ""
            print(prefix + self.line(), end=end, file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    """``seconds`` as ``42s``, ``12m05s`` or ``3h07m``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (
        f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
    )


def register(store: ResultsStore, entrants: Iterable[Entrant]) -> None:
    """Record each entrant (name, kind, public parameters) in the store."""
    for entrant in entrants:
        store.player(entrant.name, entrant.kind, entrant.params)


async def run_async(
    store: ResultsStore,
    run_name: str,
    tasks: Sequence[GameTask],
    *,
    seed: int,
    concurrency: int = 8,
    settings: Mapping[str, Any] | None = None,
    progress: Progress | bool = True,
    max_replays: int = 3,
    lease_s: float = DEFAULT_LEASE_S,
    only: Collection[str] | None = None,
) -> RunSummary:
    """Play the tasks of run ``run_name`` that are not stored yet; see the module docstring.

    In a store that workers share (PostgreSQL), this call is one worker: it plays the games
    it leases (:mod:`strategic_arena.arena.leases`), however many other calls on any machine
    play the same run, and its summary and progress count the whole run.

    Args:
        store: where games go.
        run_name: the run (created on first use; resuming needs the same seed).
        tasks: the games of the run (from :func:`versus` or :func:`round_robin`).
        seed: the run's seed (stored; derived seeds come from it).
        concurrency: games in flight at once.
        settings: public settings stored with the run.
        progress: a :class:`Progress`, ``True`` for one on stderr, ``False`` for none.
        max_replays: how many times a game left incomplete by a server failure is played
            again by later calls before it is given up.
        lease_s: in a shared store, how long a worker's lease on a game lasts unrenewed
            (a dead worker's games wait this long before another worker takes them).
        only: the keys this call may play (``None``: every task); the summary counts those
            only. ``eval --until decided`` plays a run batch by batch with it
            (:mod:`strategic_arena.arena.sequential_run`); in a shared store any game of the
            run another worker offered may still be leased to this one.
    """
    _check_run(tasks, concurrency, max_replays)
    started = time.perf_counter()
    with store.transaction():  # a refused run or player leaves nothing behind
        run_id = store.run(run_name, seed, dict(settings or {}))
        register(store, {entrant.name: entrant for t in tasks for entrant in t.seats}.values())
    stored = await asyncio.to_thread(store.completed_keys, run_id)
    tries = await asyncio.to_thread(store.incomplete_counts, run_id)
    wanted = tasks if only is None else [task for task in tasks if task.key in only]
    unscored = [task for task in wanted if task.key not in stored]
    pending = deque(schedule([task for task in unscored if tries[task.key] <= max_replays], seed))
    summary = RunSummary(
        run_id,
        total=len(wanted),
        resumed=len(wanted) - len(unscored),
        given_up=len(unscored) - len(pending),
    )
    bar = progress if isinstance(progress, Progress) else None
    if progress is True:
        bar = Progress(summary.total, summary.resumed, label=run_name)
    source = _Leased(store, run_id, tasks, pending, lease_s) if store.shared else _Local(pending)
    await source.start()
    played = _Played(store, run_id, summary, tries, max_replays, bar, source)

    async def worker() -> None:
        envs: dict[str, TextGameEnv] = {}  # one env per game per worker, reset for each game
        while (task := await source.next()) is not None:
            record = await _play_task(task, seed, envs, summary)
            try:
                await played.store_game(task, record)
            except BaseException:  # the store failed (a full disk, a deleted run): start
                pending.clear()  # nothing more; the games in flight end, the error is raised
                raise

    # Every worker ends before an error is raised: one store failure is one error, not one
    # traceback per worker printed at the loop's shutdown.
    try:
        ended = await asyncio.gather(
            *(worker() for _ in range(min(concurrency, len(pending)))), return_exceptions=True
        )
    finally:
        await source.close()
    failures = [outcome for outcome in ended if isinstance(outcome, BaseException)]
    if failures:
        raise failures[0]
    # Shared: games other workers stored count as resumed, so the summary covers the run.
    summary.resumed = await source.scored(summary.resumed + summary.played) - summary.played
    summary.elapsed_s = time.perf_counter() - started
    if bar is not None:
        bar.update(final=True)
    return summary


def _check_run(tasks: Sequence[GameTask], concurrency: int, max_replays: int) -> None:
    """Refuse settings no run can have (one line each)."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if max_replays < 0:
        raise ValueError("max_replays must be at least 0")
    keys = [task.key for task in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate game keys in the task list")


async def _play_task(
    task: GameTask, seed: int, envs: dict[str, TextGameEnv], summary: RunSummary
) -> MatchRecord:
    """One game of ``task``, with the run's seats; a failure of ours is an incomplete record."""
    seat = 0
    try:
        players: list[Player] = []
        for seat, entrant in enumerate(task.seats):
            player = entrant.build(task.env_id, derive_seed(seed, task.key, seat))
            players.append(_Contained(player))
        env = envs.get(task.env_id)
        if env is None:
            env = envs[task.env_id] = make(task.env_id)
        record = await play_match(task.env_id, players, task.seed, env=env)
    except Exception as error:  # ours: the game is stored as incomplete all the same
        summary.failed.append((task.key, _described(error)))
        envs.pop(task.env_id, None)  # its state is unknown now
        record = _broken(task, seat, error)
    refusal = _refusal(record)
    if refusal is not None:  # stored as one more try of its key, like a failure
        summary.refused.append((task.key, refusal))
    names = tuple(entrant.name for entrant in task.seats)
    return dataclasses.replace(record, players=names)


@dataclasses.dataclass
class _Played:
    """Stores each played game and counts it in the summary and on the progress line."""

    store: ResultsStore
    run_id: int
    summary: RunSummary
    tries: Mapping[str, int]
    max_replays: int
    bar: Progress | None
    source: _Local | _Leased

    async def store_game(self, task: GameTask, record: MatchRecord) -> None:
        """Store ``record``, then count it.

        Off the event loop: a store waiting for a lock must not stall the requests of the
        other games in flight.
        """
        added = await asyncio.to_thread(self.store.add_game, self.run_id, task.key, record)
        summary, bar = self.summary, self.bar
        if not added:
            summary.resumed += 1  # another process running this run stored it first
            return
        if record.status == "incomplete":
            summary.incomplete += 1
            summary.given_up += int(self.tries[task.key] + 1 > self.max_replays)
            if bar is not None:
                bar.update(incomplete=True)
            return
        had_error = any(move.decision.errors or move.error for move in record.moves)
        summary.played += 1
        summary.games_with_errors += int(had_error)
        if bar is not None:
            # Shared: the whole run's count, every worker's games (this one's are `done`).
            bar.resumed = await self.source.scored(bar.resumed + bar.done) - bar.done
            bar.update(error=had_error)


class _Local:
    """The games of one process alone: its pending list, in order (a SQLite store)."""

    def __init__(self, pending: deque[GameTask]) -> None:
        self.pending = pending

    async def start(self) -> None:
        """Nothing to set up."""

    async def next(self) -> GameTask | None:
        """The next game to play, ``None`` when there is none."""
        return self.pending.popleft() if self.pending else None

    async def scored(self, counted: int) -> int:
        """Scored games of the run: what this process counted (nobody else writes)."""
        return counted

    async def close(self) -> None:
        """Nothing to release."""


class _Leased:
    """The games this worker leases from a store that workers share (PostgreSQL).

    Offers its pending games, claims them one at a time, renews its leases while it plays, and
    when nothing is free waits while other workers hold leases (one may die and leave its games).
    """

    def __init__(
        self,
        store: ResultsStore,
        run_id: int,
        tasks: Sequence[GameTask],
        pending: Sequence[GameTask],
        lease_s: float,
    ) -> None:
        self.tasks = {task.key: task for task in tasks}  # any game of the run may be leased
        self.order = [task.key for task in pending]
        self.leases = Leases(store, run_id, lease_s=lease_s)
        self.poll_s = min(1.0, lease_s / 4)
        self._renewing: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Offer this worker's games and start renewing its leases."""
        await asyncio.to_thread(self.leases.offer, self.order)
        self._renewing = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.leases.lease_s / 3)
            # A failed renewal is tried again at the next beat (on a new session if the old
            # one was dropped); a lease that lapses meanwhile costs a second play, never a
            # second stored game.
            with contextlib.suppress(StoreError):
                await asyncio.to_thread(self.leases.renew)

    async def next(self) -> GameTask | None:
        """The next game leased to this worker; ``None`` when every game is stored."""
        while True:
            key = await asyncio.to_thread(self.leases.claim)
            if key is not None:
                return self.tasks[key]
            if not await asyncio.to_thread(self.leases.others_playing):
                return None
            await asyncio.sleep(self.poll_s)  # until a lease expires or its game is stored

    async def scored(self, counted: int) -> int:
        """Scored games of the whole run, every worker's."""
        return await asyncio.to_thread(self.leases.scored)

    async def close(self) -> None:
        """Stop renewing and give back the games still held (an error or Ctrl-C stopped us)."""
        if self._renewing is not None:
            self._renewing.cancel()
        await asyncio.to_thread(self.leases.release)


def _refusal(record: MatchRecord) -> str | None:
    """The server's message when a refused request stopped the game (error kind ``refused``)."""
    for move in record.moves:
        for error in move.decision.errors:
            if error.kind == "refused":
                return error.detail
    return None


def run(store: ResultsStore, run_name: str, tasks: Sequence[GameTask], **kwargs: Any) -> RunSummary:
    """:func:`run_async` for synchronous callers."""
    return asyncio.run(run_async(store, run_name, tasks, **kwargs))
