"""Random playouts per second: our text envs against PettingZoo's classic envs and raw pyspiel.

Compared, per game (tic-tac-toe and connect four), in one process on one machine:

* ``ours``: ``strategic_arena.make("tic_tac_toe-v0")`` / ``make("connect_four-v0")``, driven the
  standard PettingZoo AEC way, with the text observation computed by ``env.last()`` and read
  (its length is summed, so nothing can be skipped);
* ``pettingzoo``: ``pettingzoo.classic.tictactoe_v3.env()`` / ``connect_four_v3.env()`` (with
  PettingZoo's default wrappers), driven by the identical loop (they have no text);
* ``pyspiel``: ``pyspiel.load_game(...)`` driven from Python: ``new_initial_state``, then a random
  legal action applied until the state is terminal.

Every implementation picks its moves with :func:`choose` (a uniformly random legal action drawn by
a ``numpy.random.Generator`` seeded per repeat, never the global RNG). A *step* is one move
played; the AEC loops' dead ``step(None)`` calls at the end of a game are not counted. Each
measurement is the median of ``--repeats`` repeats after one warm-up; a repeat plays for a fixed
time (``--seconds``) or a fixed number of games (``--games``). With ``--games`` and the same
seed, the three implementations play the same games (tic-tac-toe up to PettingZoo's transposed
cell numbering), so their workloads are identical. The repeats of one game's implementations are
interleaved (repeat ``i`` of each before repeat ``i + 1`` of any), so a change of the machine's
load during the run falls on all of them alike.

Our tic-tac-toe env memoizes observations in a process-wide table (``memoize_observations``); the
warm-up fills it, so the numbers are for a warm memo. Connect four is not memoized.

The clock (``--clock``) is wall time by default (the regression guard's baseline is in wall
time); ``--clock cpu`` times every repeat, and bounds its time budget, by this thread's CPU
time, which does not count the time the loop waited for a core on a shared machine.

PettingZoo's classic envs import ``pygame`` at module level, so ``pygame-ce`` must be installed.

Usage::

    python benchmarks/bench_env_playouts.py [--seconds S | --games N] [--repeats R]
        [--seed SEED] [--clock wall|cpu] [--json PATH] [--profile] [--profile-games N]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyspiel

import strategic_arena

#: (label, our env id, PettingZoo module name under ``pettingzoo.classic``, OpenSpiel game name).
GAMES: tuple[tuple[str, str, str, str], ...] = (
    ("tic_tac_toe", "tic_tac_toe-v0", "tictactoe_v3", "tic_tac_toe"),
    ("connect_four", "connect_four-v0", "connect_four_v3", "connect_four"),
)
IMPLEMENTATIONS: tuple[str, ...] = ("ours", "pettingzoo", "pyspiel")

Playout = Callable[[int, "Uniforms"], tuple[int, int]]
"""``playout(games, rng) -> (moves played, text characters read)``."""


@dataclass(frozen=True)
class Result:
    """The median over repeats of one implementation on one game."""

    game: str
    implementation: str
    games_per_s: float
    steps_per_s: float
    steps_per_game: float
    games_per_s_min: float
    games_per_s_max: float
    repeats: int
    games_per_repeat: list[int]


class Uniforms:
    """Uniform floats in [0, 1) from a ``numpy.random.Generator``, drawn in blocks.

    One ``rng.integers`` call per move costs about as much as a whole step of a fast env, so
    the harness draws 4,096 floats at a time and keeps its own overhead small and identical
    for every implementation.
    """

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._block: list[float] = []

    def __call__(self) -> float:
        """The next uniform float."""
        if not self._block:
            self._block = self._rng.random(4096).tolist()
            self._block.reverse()
        return self._block.pop()


def choose(legal: Sequence[int] | npt.NDArray[np.intp], uniform: Uniforms) -> int:
    """A uniformly random element of ``legal`` (the one procedure every implementation uses)."""
    return int(legal[int(uniform() * len(legal))])


def aec_playout(env: Any, *, text: bool, seed: int) -> Playout:
    """Random playouts of the AEC env ``env``; ``text``: read ``obs["text"]`` at every ``last()``.

    The env is reset with ``seed`` once, then with ``reset()``, as a long-running loop would; the
    moves come from ``rng`` alone, so the AEC and pyspiel loops draw the same random numbers.
    """
    seeded = False

    def play(games: int, rng: Uniforms) -> tuple[int, int]:
        nonlocal seeded
        moves = 0
        text_chars = 0
        for _ in range(games):
            if seeded:
                env.reset()
            else:
                env.reset(seed=seed)
                seeded = True
            for _agent in env.agent_iter():
                obs, _reward, termination, truncation, _info = env.last()
                if text:
                    text_chars += len(obs["text"])
                if termination or truncation:
                    action = None
                else:
                    action = choose(obs["action_mask"].nonzero()[0], rng)
                    moves += 1
                env.step(action)
        return moves, text_chars

    return play


def pyspiel_playout(game: Any) -> Playout:
    """Random playouts of the OpenSpiel game ``game`` (a ``pyspiel.Game``) from Python."""

    def play(games: int, rng: Uniforms) -> tuple[int, int]:
        moves = 0
        for _ in range(games):
            state = game.new_initial_state()
            while not state.is_terminal():
                state.apply_action(choose(state.legal_actions(), rng))
                moves += 1
        return moves, 0

    return play


def pettingzoo_env(module_name: str) -> Any:
    """``pettingzoo.classic.<module_name>.env()``; explains a missing ``pygame``."""
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    try:
        from pettingzoo import classic
    except ImportError as error:  # pragma: no cover - pettingzoo is a core dependency
        raise SystemExit(f"pettingzoo is not installed: {error}") from error
    try:
        module = getattr(classic, module_name)
    except ModuleNotFoundError as error:
        raise SystemExit(
            f"pettingzoo.classic.{module_name} needs {error.name!r} (pip install pygame-ce)"
        ) from error
    return module.env()


def make_playout(
    implementation: str, env_id: str, pz_module: str, spiel_name: str, seed: int
) -> Playout:
    """The playout function of ``implementation`` for one game."""
    if implementation == "ours":
        return aec_playout(strategic_arena.make(env_id), text=True, seed=seed)
    if implementation == "pettingzoo":
        return aec_playout(pettingzoo_env(pz_module), text=False, seed=seed)
    if implementation == "pyspiel":
        return pyspiel_playout(pyspiel.load_game(spiel_name))
    raise ValueError(f"unknown implementation {implementation!r}")


#: The clocks a repeat can be timed by (see the module docstring).
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


def run_repeat(
    play: Playout,
    seed: int,
    *,
    seconds: float | None,
    games: int | None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[int, int, float]:
    """One repeat: ``(games, moves, elapsed seconds)`` for a time budget or a game count.

    ``clock`` times the repeat (and bounds a time budget): wall time or this thread's CPU time.
    """
    rng = Uniforms(np.random.default_rng(seed))
    if games is not None:
        start = clock()
        moves, _ = play(games, rng)
        return games, moves, clock() - start
    assert seconds is not None
    # Batches of games between clock reads.
    batch = 16
    played = moves = 0
    start = clock()
    deadline = start + seconds
    while True:
        batch_moves, _ = play(batch, rng)
        played += batch
        moves += batch_moves
        now = clock()
        if now >= deadline:
            return played, moves, now - start


def measure(
    label: str,
    plays: dict[str, Playout],
    *,
    seconds: float | None,
    games: int | None,
    repeats: int,
    seed: int,
    clock: Callable[[], float] = time.perf_counter,
) -> list[Result]:
    """Each implementation of one game: a warm-up, then the median of ``repeats`` repeats.

    The repeats are interleaved (repeat ``i`` of every implementation, with ``seed + i``, before
    repeat ``i + 1`` of any), so a change of the machine's load during the run falls on every
    implementation alike and the ratios between them stay paired.
    """
    warm_seconds = None if seconds is None else min(seconds, 0.5)
    warm_games = None if games is None else max(1, games // 5)
    for play in plays.values():
        run_repeat(play, seed, seconds=warm_seconds, games=warm_games, clock=clock)
    runs: dict[str, list[tuple[int, int, float]]] = {name: [] for name in plays}
    for i in range(repeats):
        for name, play in plays.items():
            runs[name].append(run_repeat(play, seed + i, seconds=seconds, games=games, clock=clock))
    return [summary(label, name, repeat_runs) for name, repeat_runs in runs.items()]


def summary(label: str, implementation: str, runs: Sequence[tuple[int, int, float]]) -> Result:
    """The median and spread of ``runs``, each ``(games, moves, elapsed seconds)``."""
    games_rates = [played / elapsed for played, _, elapsed in runs]
    return Result(
        game=label,
        implementation=implementation,
        games_per_s=statistics.median(games_rates),
        steps_per_s=statistics.median(moves / elapsed for _, moves, elapsed in runs),
        steps_per_game=sum(moves for _, moves, _ in runs) / sum(played for played, _, _ in runs),
        games_per_s_min=min(games_rates),
        games_per_s_max=max(games_rates),
        repeats=len(runs),
        games_per_repeat=[played for played, _, _ in runs],
    )


def ratios(results: Sequence[Result]) -> dict[str, dict[str, dict[str, float]]]:
    """Per game: ``ours/<other>`` for games/s and steps/s."""
    by_key = {(r.game, r.implementation): r for r in results}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label, *_ in GAMES:
        ours = by_key.get((label, "ours"))
        if ours is None:
            continue
        for other in IMPLEMENTATIONS[1:]:
            theirs = by_key.get((label, other))
            if theirs is not None:
                out.setdefault(label, {})[f"ours/{other}"] = {
                    "games_per_s": ours.games_per_s / theirs.games_per_s,
                    "steps_per_s": ours.steps_per_s / theirs.steps_per_s,
                }
    return out


def format_table(results: Sequence[Result]) -> str:
    """The results as a fixed-width table, with the ratios of ours to each other row."""
    by_key = {(r.game, r.implementation): r for r in results}
    header = (
        f"{'game':<13} {'implementation':<14} {'games/s':>10} {'steps/s':>11} "
        f"{'steps/game':>10} {'games/s min-max':>19} {'ours/this':>9}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        ours = by_key.get((r.game, "ours"))
        ratio = "" if ours is None else f"{ours.games_per_s / r.games_per_s:.3f}"
        spread = f"{r.games_per_s_min:,.0f}-{r.games_per_s_max:,.0f}"
        lines.append(
            f"{r.game:<13} {r.implementation:<14} {r.games_per_s:>10,.0f} {r.steps_per_s:>11,.0f} "
            f"{r.steps_per_game:>10.2f} {spread:>19} {ratio:>9}"
        )
    lines.append("")
    for label, pairs in ratios(results).items():
        for name, value in pairs.items():
            lines.append(
                f"{label}: {name} = {value['games_per_s']:.3f} (games/s), "
                f"{value['steps_per_s']:.3f} (steps/s)"
            )
    return "\n".join(lines)


def profile_ours(env_id: str, games: int, seed: int, top: int = 15) -> str:
    """Profile ``games`` playouts of our ``env_id`` (after a warm-up): top ``top`` by tottime."""
    play = aec_playout(strategic_arena.make(env_id), text=True, seed=seed)
    play(max(1, games // 5), Uniforms(np.random.default_rng(seed)))
    rng = Uniforms(np.random.default_rng(seed))
    profiler = cProfile.Profile()
    profiler.enable()
    play(games, rng)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return stream.getvalue()


def _version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or ``None``."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Machine and package versions recorded with the results."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "versions": {
            name: _version(name)
            for name in ("strategic-arena", "open_spiel", "pettingzoo", "numpy", "pygame-ce")
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument(
        "--seconds", type=float, help="time budget of each repeat (default 1.0 without --games)"
    )
    budget.add_argument("--games", type=int, help="games per repeat, instead of a time budget")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--implementations", nargs="+", choices=IMPLEMENTATIONS, default=list(IMPLEMENTATIONS)
    )
    clock_help = "time repeats by wall time (the guard's baseline) or by this thread's CPU time"
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall", help=clock_help)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print a cProfile of our tic_tac_toe-v0 loop (top 15 by tottime)",
    )
    parser.add_argument("--profile-games", type=int, default=5000)
    args = parser.parse_args(argv)
    seconds: float | None = args.seconds
    games: int | None = args.games
    if seconds is None and games is None:
        seconds = 1.0
    if (seconds is not None and seconds <= 0) or (games is not None and games <= 0):
        parser.error("--seconds and --games must be positive")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    budget_text = f"{seconds:g} s" if seconds is not None else f"{games} games"
    print(
        f"random playouts, median of {args.repeats} interleaved repeats of {budget_text} after a "
        f"warm-up, seed {args.seed}, {args.clock} clock; python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs",
        flush=True,
    )
    results: list[Result] = []
    for label, env_id, pz_module, spiel_name in GAMES:
        plays = {
            implementation: make_playout(implementation, env_id, pz_module, spiel_name, args.seed)
            for implementation in args.implementations
        }
        results += measure(
            label,
            plays,
            seconds=seconds,
            games=games,
            repeats=args.repeats,
            seed=args.seed,
            clock=CLOCKS[args.clock],
        )
    print(format_table(results))

    profile: str | None = None
    if args.profile:
        profile = profile_ours("tic_tac_toe-v0", args.profile_games, args.seed)
        print(f"\ncProfile of {args.profile_games} games of our tic_tac_toe-v0 loop:")
        print(profile)

    if args.json is not None:
        payload = {
            "benchmark": "env_playouts",
            "settings": {
                "seconds": seconds,
                "games": games,
                "repeats": args.repeats,
                "seed": args.seed,
                "clock": args.clock,
            },
            "environment": environment(),
            "results": [asdict(r) for r in results],
            "ratios": ratios(results),
            "profile": profile,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
