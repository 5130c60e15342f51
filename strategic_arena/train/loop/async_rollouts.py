"""The rollout worker of the asynchronous loop: games keep being played while the learner trains.

With ``max_staleness: k >= 1`` the trainer hands the worker *rounds*: round ``r`` is the games
:func:`~strategic_arena.train.loop.rollout.plan_games` plans for step ``r`` (same seeds, opponents
and seats as the synchronous step ``r``). One thread plays the rounds one after another, each in a
fresh event loop, through the same :class:`~strategic_arena.train.loop.rollout.RolloutRunner` as the
synchronous loop; the learner stays in the main thread and takes round ``s``'s games for step
``s`` (:meth:`RolloutWorker.take`).

**Pacing.** The trainer submits round ``r`` only once the weights of version ``r - k`` are in
the engine (at the start rounds ``0..k``; after the sync of version ``v``, round ``v + k``), so
the oldest turn of round ``r`` is at most ``k`` versions behind step ``r``: the worker is never
more than ``k`` rounds ahead, and the staleness filter
(:func:`strategic_arena.train.algo.staleness.filter_stale`) drops nothing unless the pacing is
broken (it still enforces the rule). With ``k = 1`` this is the one-step-off-policy pipeline:
round ``s + 1`` is played while step ``s`` trains.

**Idle time.** :attr:`RolloutWorker.idle_s` accumulates the time the worker waited for a round
(the rollouts waiting for new weights); :meth:`RolloutWorker.take` returns how long the learner
waited for its games.

:class:`AsyncRounds` is the trainer's side: the worker, the pacing and the staleness filter.

**Failures.** An exception of a round (a dead server) is raised again by :meth:`take` of that
round, in the main thread; :meth:`close` stops the worker after its current round (a daemon
thread: a process that exits does not wait for it).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from strategic_arena.rl.episode import Episode
from strategic_arena.train.algo.staleness import filter_stale
from strategic_arena.train.loop.rollout import GamePlan, RolloutRunner


@dataclass(frozen=True)
class PlayedRound:
    """One round's finished games, and how many of its games were dropped (failed)."""

    episodes: list[Episode]
    dropped: int = 0


#: Plays one round's plans (``plans, round``) and returns what it played.
PlayRound = Callable[[Sequence[GamePlan], int], Coroutine[Any, Any, PlayedRound]]


class RolloutWorker:
    """One background thread playing submitted rounds in order (see the module docstring).

    Args:
        play: the coroutine function that plays a round.
        context: a context entered around each round in the worker's thread (the learner's
            compute dtype for an in-process engine: autocast state is per thread).
        first_round: the first round to be submitted (a resumed run's step).
    """

    def __init__(
        self,
        play: PlayRound,
        context: Callable[[], AbstractContextManager[Any]] | None = None,
        *,
        first_round: int = 0,
    ) -> None:
        self._play = play
        self._context = context
        self._submitted: queue.Queue[tuple[int, Sequence[GamePlan]] | None] = queue.Queue()
        self._done = threading.Condition()
        self._results: dict[int, PlayedRound | BaseException] = {}
        self._next_round = first_round
        self._waiting_since: float | None = None
        self.idle_s = 0.0
        self.busy_s = 0.0
        self.episodes = 0
        self._thread = threading.Thread(target=self._run, name="rollout-worker", daemon=True)
        self._thread.start()

    @property
    def submitted(self) -> int:
        """The number of rounds submitted so far (the next round to submit)."""
        return self._next_round

    def submit(self, round_: int, plans: Sequence[GamePlan]) -> None:
        """Queue round ``round_`` (rounds must come in order, without gaps)."""
        if round_ != self._next_round:
            raise ValueError(f"round {round_} submitted, round {self._next_round} expected")
        self._next_round += 1
        self._submitted.put((round_, plans))

    def take(self, round_: int) -> tuple[PlayedRound, float]:
        """Wait for round ``round_``; returns what it played and the seconds waited.

        Raises what the round raised (in the worker's thread).
        """
        if round_ >= self._next_round:
            raise ValueError(f"round {round_} was never submitted")
        started = time.perf_counter()
        with self._done:
            while round_ not in self._results:
                if not self._thread.is_alive():
                    raise RuntimeError(f"the rollout worker stopped before round {round_}")
                self._done.wait(timeout=1.0)
            result = self._results.pop(round_)
        waited = time.perf_counter() - started
        if isinstance(result, BaseException):
            raise result
        return result, waited

    def idle_time(self) -> float:
        """Seconds the worker has waited for rounds so far (a wait going on included)."""
        since = self._waiting_since
        return self.idle_s + (time.perf_counter() - since if since is not None else 0.0)

    def close(self, timeout_s: float = 0.0) -> None:
        """Stop after the current round (waiting at most ``timeout_s`` for the thread)."""
        self._submitted.put(None)
        if timeout_s > 0:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        played = False  # the wait before the first round is start-up, not idle time
        while True:
            started = time.perf_counter()
            if played:
                self._waiting_since = started
            item = self._submitted.get()
            began = time.perf_counter()
            if played:
                self.idle_s += began - started
                self._waiting_since = None
            if item is None:
                return
            played = True
            round_, plans = item
            result: PlayedRound | BaseException
            try:
                if self._context is None:
                    result = asyncio.run(self._play(plans, round_))
                else:
                    with self._context():
                        result = asyncio.run(self._play(plans, round_))
                self.episodes += len(result.episodes)
            except BaseException as error:  # handed to the main thread by take()
                result = error
            self.busy_s += time.perf_counter() - began
            with self._done:
                self._results[round_] = result
                self._done.notify_all()
            if isinstance(result, BaseException):
                return


class AsyncRounds:
    """The asynchronous loop's batch source: paced rounds from a worker, filtered for staleness.

    Args:
        rollouts: the runner that plays a round's plans.
        plan: the plans of round ``r`` (the synchronous step ``r``'s games).
        max_staleness: ``rollout.max_staleness`` (``k`` >= 1).
        last_round: the run's last round (``run.steps - 1``).
        context: a context entered around each round in the worker's thread.
        first_round: the first round (a resumed run's step).
    """

    def __init__(
        self,
        rollouts: RolloutRunner,
        plan: Callable[[int], Sequence[GamePlan]],
        *,
        max_staleness: int,
        last_round: int,
        context: Callable[[], AbstractContextManager[Any]] | None = None,
        first_round: int = 0,
    ) -> None:
        async def play(plans: Sequence[GamePlan], round_: int) -> PlayedRound:
            played = await rollouts.play_indexed(plans, round_)
            return PlayedRound([episode for _, episode in played], rollouts.dropped)

        self.plan = plan
        self.max_staleness = max_staleness
        self.last_round = last_round
        self.worker = RolloutWorker(play, context=context, first_round=first_round)
        self._idle_s = 0.0

    def submit(self, version: int) -> None:
        """Hand the worker every round the weights of ``version`` (now in the engine) may play.

        Rounds up to ``version + max_staleness`` (and not past the last) may start, so no
        round's oldest turn is more than ``max_staleness`` versions behind the step that
        trains it.
        """
        last = min(version + self.max_staleness, self.last_round)
        while self.worker.submitted <= last:
            round_ = self.worker.submitted
            self.worker.submit(round_, self.plan(round_))

    def take(self, step: int) -> tuple[list[Episode], dict[str, float]]:
        """Round ``step``'s games less the stale ones, and the metrics of getting them."""
        played, _ = self.worker.take(step)
        report = filter_stale(played.episodes, step, self.max_staleness)
        metrics = report.metrics()
        metrics["train/dropped_games"] = float(played.dropped)
        return report.kept, metrics

    def idle_since_last(self) -> float:
        """Seconds the worker waited for new weights since the previous call."""
        total = self.worker.idle_time()
        idle, self._idle_s = total - self._idle_s, total
        return idle

    def close(self) -> None:
        """Stop the worker after its current round."""
        self.worker.close()
