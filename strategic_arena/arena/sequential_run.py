"""``eval --until decided``: play each matchup pair by pair until its sequential test decides.

A run of fixed size plays all its games (:func:`strategic_arena.arena.runner.run_async`). A
sequential run has the same games -- the same keys, deals, seeds and store, up to a cap per
matchup -- but plays them in batches and stops each matchup once its test
(:mod:`strategic_arena.arena.sequential`) is decided:

1. Read every matchup's test from the store (never from memory: what decides is what is
   stored).
2. Choose the next batch: for each open test, the next ``width`` pairs from the pair it waits
   for (both games of each; a game already stored or given up is not played again), with
   ``width = ceil(concurrency / (2 * open tests))`` so that a batch fills the concurrency. A
   pair may be played that the decision then does not need (the test decides at the first pair
   whose LLR crosses a bound): at most ``width - 1`` pairs per test.
3. Play the batch with the runner (its leases too: in a shared store every worker reads the
   same tests and offers the same games), then go back to 1.

It ends when no open test has a pair left to play: each is decided, at its cap, or waits for a
game that a server failure stopped in this call (the runner never replays a game in the call
that played it; the next call of the same command replays it and goes on).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from strategic_arena.arena import runner
from strategic_arena.arena.leases import DEFAULT_LEASE_S
from strategic_arena.arena.runner import GameTask, Progress, RunSummary
from strategic_arena.arena.sequential import Matchup, MatchupTest, decide, pair_outcomes
from strategic_arena.arena.sprt import Sprt
from strategic_arena.arena.store import ResultsStore

#: A matchup's tasks by pair index (the two seatings of one deal).
Pairs = dict[int, list[GameTask]]


@dataclass(frozen=True)
class SequentialResult:
    """What :func:`run_async` did: the runner's account of the call and each test's state."""

    summary: RunSummary
    tests: tuple[MatchupTest, ...]


def matchups(tasks: Sequence[GameTask], candidate: str) -> dict[Matchup, Pairs]:
    """The tasks of each matchup of ``candidate``, by pair index.

    Raises:
        ValueError: a task that is not the candidate against exactly one opponent.
    """
    groups: dict[Matchup, Pairs] = defaultdict(lambda: defaultdict(list))
    for task in tasks:
        names = [entrant.name for entrant in task.seats]
        others = list(dict.fromkeys(name for name in names if name != candidate))
        if candidate not in names or len(others) != 1:
            raise ValueError(f"game {task.key} is not {candidate} against one opponent")
        groups[Matchup(task.env_id, candidate, others[0])][task.index].append(task)
    return {matchup: dict(pairs) for matchup, pairs in groups.items()}


@dataclass
class _State:
    """The store's view of the run between batches."""

    tests: list[MatchupTest]
    scored: set[str]
    tries: Mapping[str, int]


def _read(
    store: ResultsStore,
    run_id: int,
    groups: Mapping[Matchup, Pairs],
    sprt: Sprt,
    max_replays: int,
) -> _State:
    """Step 1: every matchup's test, and which games are scored or tried, from the store."""
    tries = store.incomplete_counts(run_id)
    given_up = [key for key, count in tries.items() if count > max_replays]
    games = store.games(run_id, include_incomplete=True)
    candidate = next(iter(groups)).candidate
    outcomes, stored = pair_outcomes(games, candidate, given_up)
    tests = [
        decide(m, outcomes.get(m, {}), sprt, max(pairs) + 1, stored.get(m, 0))
        for m, pairs in groups.items()
    ]
    return _State(tests, {game.game_key for game in games if game.scored}, tries)


def _pairs_to_play(
    pairs: Pairs,
    start: int,
    width: int,
    playable: Callable[[str], bool],
    tried: set[str],
) -> list[GameTask]:
    """Step 2 for one test: the games of its next ``width`` unfinished pairs from ``start``.

    Empty when the pair the test waits for holds a game this call already tried.
    """
    chosen: list[GameTask] = []
    taken = 0
    for index in sorted(i for i in pairs if i >= start):
        needed = [task for task in pairs[index] if playable(task.key)]
        if not needed:  # stored, or given up: nothing to play
            continue
        if index == start and any(task.key in tried for task in needed):
            return []
        chosen += [task for task in needed if task.key not in tried]
        taken += 1
        if taken == width:
            break
    return chosen


def next_batch(
    state: _State,
    groups: Mapping[Matchup, Pairs],
    tried: set[str],
    max_replays: int,
    concurrency: int,
) -> list[GameTask]:
    """Step 2: the games to play next (none: every test is decided, capped or waiting)."""
    open_tests = [test for test in state.tests if test.status == "open"]
    if not open_tests:
        return []
    width = max(1, -(-concurrency // (2 * len(open_tests))))

    def playable(key: str) -> bool:
        return key not in state.scored and state.tries.get(key, 0) <= max_replays

    batch: list[GameTask] = []
    for test in open_tests:
        assert test.next_pair is not None
        batch += _pairs_to_play(groups[test.matchup], test.next_pair, width, playable, tried)
    return batch


class _BatchProgress(Progress):
    """The progress line of a sequential run: games against the cap, and tests decided."""

    decided = 0
    tests = 0
    closing = False

    def line(self) -> str:
        """The runner's line with the tests decided so far."""
        return f"{super().line()} | tests decided {self.decided}/{self.tests}"

    def update(
        self,
        *,
        error: bool = False,
        failed: bool = False,
        incomplete: bool = False,
        final: bool = False,
    ) -> None:
        """Count a game; the line is finished once, after the last batch."""
        if final and not self.closing:
            return
        super().update(error=error, failed=failed, incomplete=incomplete, final=final)


@dataclass
class _Tally:
    """The batches' runner summaries added up."""

    played: int = 0
    games_with_errors: int = 0
    incomplete: int = 0
    given_up: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    def add(self, summary: RunSummary) -> None:
        self.played += summary.played
        self.games_with_errors += summary.games_with_errors
        self.incomplete += summary.incomplete
        self.given_up += summary.given_up
        self.failed += summary.failed
        self.refused += summary.refused

    def summary(
        self, run_id: int, scored: set[str], unscored: set[str], started: float
    ) -> RunSummary:
        """The call's :class:`RunSummary`: the tests' scored games, and those tried unscored."""
        return RunSummary(
            run_id,
            total=len(scored) + len(unscored),
            resumed=len(scored) - self.played,
            played=self.played,
            games_with_errors=self.games_with_errors,
            incomplete=self.incomplete,
            given_up=self.given_up,
            failed=self.failed,
            refused=self.refused,
            elapsed_s=time.perf_counter() - started,
        )


async def run_async(
    store: ResultsStore,
    run_name: str,
    tasks: Sequence[GameTask],
    sprt: Sprt,
    candidate: str,
    *,
    seed: int,
    concurrency: int = 8,
    settings: Mapping[str, Any] | None = None,
    progress: bool = True,
    max_replays: int = 3,
    lease_s: float = DEFAULT_LEASE_S,
) -> SequentialResult:
    """Play run ``run_name``'s matchups until each test is decided (steps 1-3 above).

    Args:
        store: where games go (the run must exist: :func:`runner.prepare`).
        run_name: the run.
        tasks: every game the run may play: each matchup's pairs up to its cap.
        sprt: the test of every matchup.
        candidate: the evaluated model (the first player of every test).
        seed: the run's root seed.
        concurrency: games in flight at once.
        settings: the run's public settings.
        progress: print the progress line.
        max_replays: how often a later call replays a game a server failure stopped.
        lease_s: in a shared store, a worker's lease on a game.

    Returns:
        The call's summary (its ``total`` is the tests' scored games plus the games this call
        left unscored) and every test's state after the last batch.
    """
    started = time.perf_counter()
    groups = matchups(tasks, candidate)
    run_id = store.run_id(run_name)
    keys = {task.key for task in tasks}
    state = await asyncio.to_thread(_read, store, run_id, groups, sprt, max_replays)
    bar = None
    if progress:
        bar = _BatchProgress(len(tasks), len(state.scored & keys), label=run_name)
        bar.tests = len(groups)
    tally, tried = _Tally(), set[str]()
    while batch := next_batch(state, groups, tried, max_replays, concurrency):
        if bar is not None:
            bar.decided = sum(test.status != "open" for test in state.tests)
        summary = await runner.run_async(
            store,
            run_name,
            tasks,
            seed=seed,
            concurrency=concurrency,
            settings=settings,
            progress=bar if bar is not None else False,
            max_replays=max_replays,
            lease_s=lease_s,
            only={task.key for task in batch},
        )
        tally.add(summary)
        tried |= {task.key for task in batch}
        state = await asyncio.to_thread(_read, store, run_id, groups, sprt, max_replays)
    if bar is not None:
        bar.decided = sum(test.status != "open" for test in state.tests)
        bar.closing = True
        bar.update(final=True)
    scored = state.scored & keys
    result = tally.summary(run_id, scored, tried - scored, started)
    return SequentialResult(result, tuple(state.tests))


def run(
    store: ResultsStore,
    run_name: str,
    tasks: Sequence[GameTask],
    sprt: Sprt,
    candidate: str,
    **kwargs: Any,
) -> SequentialResult:
    """:func:`run_async` for synchronous callers (one event loop for every batch)."""
    return asyncio.run(run_async(store, run_name, tasks, sprt, candidate, **kwargs))
