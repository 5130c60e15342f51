"""The episode bank on real game lengths: each game's share of a batch, and the cost of a draw.

Plays ``--games`` uniformly random self-play games of Kuhn Poker (2-3 decisions) and of Connect
Four (7-42) in OpenSpiel, turns them into episodes (every decision a trainable turn, the
returns paid at each seat's last turn) and compares, for a batch of ``--batch`` turns:

- **every turn** -- today's step without a bank: it trains on every turn of its games;
- **pooled** -- the bank with ``interleave: false`` (one pool, episodes in a random order);
- **interleaved** -- the bank with ``interleave: true`` (each game an equal share of turns),

reporting Connect Four's share of the trained turns (mean, min and max over ``--seeds`` draws)
and the median time of one draw from a bank of all the games::

    .venv/bin/python benchmarks/bench_bank.py [--games 64] [--batch 256] [--seeds 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyspiel

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.bank import BankConfig, EpisodeBank

GAMES = {"kuhn_poker-v0": "kuhn_poker", "connect_four-v0": "connect_four"}
LONG = "connect_four-v0"


def random_episode(env_id: str, rng: np.random.Generator, seed: int) -> Episode:
    """One uniformly random self-play game of ``env_id`` as a scored episode."""
    state = pyspiel.load_game(GAMES[env_id]).new_initial_state()
    turns: list[Turn] = []
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes(), strict=True)
            state.apply_action(int(rng.choice(outcomes, p=probs)))
            continue
        seat = state.current_player()
        turns.append(Turn(env_id, seat, f"player {seat}", [1], [2], [-0.1], "x", None))
        state.apply_action(int(rng.choice(state.legal_actions())))
    returns = tuple(float(r) for r in state.returns())
    for seat in (0, 1):
        mine = [turn for turn in turns if turn.seat == seat]
        mine[-1].reward = returns[seat]
    return Episode(env_id, seed, (0, 1), "self", returns, "complete", None, turns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=64, help="games per game kind")
    parser.add_argument("--batch", type=int, default=256, help="batch size in turns")
    parser.add_argument("--seeds", type=int, default=20, help="draws (bank seeds) per setting")
    parser.add_argument("--strata", type=int, default=3, help="reward strata of the bank")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    episodes = [random_episode(env, rng, i) for env in GAMES for i in range(args.games)]
    for env_id in GAMES:
        lengths = [len(e.turns) for e in episodes if e.env_id == env_id]
        print(
            f"{env_id:16s} decisions per game: mean {np.mean(lengths):.1f}, "
            f"min {min(lengths)}, max {max(lengths)}"
        )
    long_turns = sum(len(e.turns) for e in episodes if e.env_id == LONG)
    every = long_turns / sum(len(e.turns) for e in episodes)
    print(f"\n{LONG} share of the trained turns (batch {args.batch} turns)")
    print(f"{'every turn':12s} {every:.3f}")
    for name, interleave in (("pooled", False), ("interleaved", True)):
        shares, times = [], []
        config = BankConfig(
            batch_unit="turns", batch_size=args.batch, interleave=interleave, strata=args.strata
        )
        for seed in range(args.seeds):
            bank = EpisodeBank(config, seed)
            bank.add(episodes)
            started = time.perf_counter()
            batch = bank.draw(version=0)
            times.append(time.perf_counter() - started)
            shares.append(batch.metrics[f"bank/turn_share/{LONG}"])
        print(
            f"{name:12s} {np.mean(shares):.3f} (min {min(shares):.3f}, max {max(shares):.3f}); "
            f"a draw from {len(episodes)} episodes: {statistics.median(times) * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
