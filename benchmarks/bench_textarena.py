"""The TextArena adapter's cost: seeded games through ``strategic_arena.make`` vs TextArena itself.

Plays the same seeded games with the same scripted moves twice in one process -- through the
PettingZoo AEC loop of ``strategic_arena.make("textarena/<EnvId>")`` (text observation read at
every ``last()``) and through TextArena directly (``ta.make``, ``get_observation``, ``step``,
``close``) -- and prints games/s of each and the ratio ours/textarena (median of repeats).
``--clock cpu`` times the repeats by this thread's CPU time (on a shared machine wall time
also counts the time the loop waited for a core); the default is wall time, the guard's.

    .venv/bin/python benchmarks/bench_textarena.py --games 100 --repeats 3 [--clock cpu]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import textarena as ta

import strategic_arena as sa
from strategic_arena.free_text_env import FreeTextEnv

MOVES = {
    "SimpleNegotiation-v0": ("[Offer: 2 Wheat -> 1 Ore]", "Let us talk. [Deny]", "[Accept]"),
    "KuhnPoker-v0": ("[check]", "[bet]", "[call]", "[fold]"),
    "PigDice-v0": ("[roll]", "[roll]", "[hold]"),
}


def direct(env_id: str, seed: int) -> None:
    """One game with TextArena itself."""
    moves = MOVES[env_id]
    env = ta.make(env_id)
    env.reset(num_players=2, seed=seed)
    done, ply = False, 0
    while not done:
        env.get_observation()
        done, _ = env.step(action=moves[ply % len(moves)])
        ply += 1
    env.close()


def ours(env_id: str, seed: int) -> None:
    """The same game through the PettingZoo AEC loop of the adapter."""
    moves = MOVES[env_id]
    env = sa.make(f"textarena/{env_id}")
    assert isinstance(env, FreeTextEnv)  # steps with text
    env.reset(seed=seed)
    ply = 0
    for _ in env.agent_iter():
        observation, _, termination, truncation, _ = env.last()
        if termination or truncation:
            env.step(None)
            continue
        assert observation["text"] is not None
        env.step(moves[ply % len(moves)])
        ply += 1


#: The clocks a repeat can be timed by (see the module docstring).
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.thread_time, "wall": time.perf_counter}


def rate(
    play: Callable[[str, int], None],
    env_id: str,
    games: int,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Games per second over ``games`` seeded games, timed by ``clock``."""
    started = clock()
    for seed in range(games):
        play(env_id, seed)
    return games / (clock() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100, help="games per repeat")
    parser.add_argument("--repeats", type=int, default=3, help="repeats (median reported)")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall or thread CPU time"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    clock = CLOCKS[args.clock]
    print(f"{'game':24} {'ours games/s':>13} {'textarena games/s':>18} {'ratio':>7}")
    rows = []
    for env_id in MOVES:
        rate(ours, env_id, 2)  # warm-up: imports, word lists
        rate(direct, env_id, 2)
        mine_runs, peer_runs = [], []
        for _ in range(args.repeats):  # interleaved: a slow spell of the machine hits both
            mine_runs.append(rate(ours, env_id, args.games, clock))
            peer_runs.append(rate(direct, env_id, args.games, clock))
        mine, peer = statistics.median(mine_runs), statistics.median(peer_runs)
        print(f"{env_id:24} {mine:13.1f} {peer:18.1f} {mine / peer:7.2f}")
        rows.append({"env_id": env_id, "ours": mine, "textarena": peer, "ratio": mine / peer})
    if args.json is not None:
        args.json.write_text(json.dumps({"games": args.games, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
