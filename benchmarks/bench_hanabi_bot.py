"""Self-play scores of the Hanabi partner bot, its rules alone, and random play.

For each variant, the same two seats play ``--games`` games (seeds ``0 .. games-1``, which fix
the deal) through :func:`strategic_arena.arena.play_match_sync`:

- **hanabi_bot**: one :class:`opponents.hanabi_bot.HanabiBot` in both seats (on Mini Hanabi
  it plays the shipped joint policy, :mod:`opponents.hanabi_joint`);
- **rules**: the same bot with ``joint=False``, its rules alone (the bot before the joint
  policy; on Simple Hanabi, where no joint policy ships, the same as ``hanabi_bot``);
- **random**: one :class:`strategic_arena.players.RandomPlayer` seeded with the game's seed, in
  both seats (uniformly random legal moves).

Then, on Mini Hanabi, mixed pairs on the same seeds (``hanabi_bot+rules``: the bot in seat 0,
its rules alone in seat 1; and with a random partner): the joint policy is tuned to play with
itself, so these show what it does beside a partner that is not.

The table shows the mean score with a 95% confidence interval (normal approximation,
``1.96 * sd / sqrt(n)`` with the sample standard deviation), the share of games that reach the
best score, and games per second. The best reachable score is 4 in both variants (Simple
Hanabi's fireworks would hold 6, but its deck leaves only 2 cards to draw after the deal).

Reference points measured with OpenSpiel's Hanabi on Mini Hanabi (out of 4): random play 1.44,
a simple rule bot 1.99, an IGGI-style rule bot 2.33. They are quoted, not re-measured here
(our random row, with our own random player and seeds, lands close to the first).

Usage::

    python benchmarks/bench_hanabi_bot.py [--games 1000] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strategic_arena.turn import Player

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

VARIANTS = ("mini_hanabi-v0", "simple_hanabi-v0")
#: OpenSpiel's Hanabi, Mini Hanabi, mean score out of 4 (quoted reference points).
#: The goal for the partner's self-play mean on Mini Hanabi.
GOAL = 3.8
#: Mixed pairs: how the bot plays beside a partner that is not itself (its rules, random).
PAIRS = (
    "hanabi_bot+rules",
    "rules+hanabi_bot",
    "hanabi_bot+random",
    "random+hanabi_bot",
    "rules+random",
    "random+rules",
)
REFERENCES = {"random (OpenSpiel)": 1.44, "simple rule bot": 1.99, "IGGI-style rule bot": 2.33}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--games", type=int, default=1000, help="games per variant and player")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    return parser.parse_args(argv)


def _player(name: str, env_id: str) -> Callable[[int], Player]:
    """The player ``name`` (``hanabi_bot``, ``rules`` or ``random``) for the game of a seed."""
    from opponents.hanabi_bot import HanabiBot
    from strategic_arena.players import RandomPlayer

    if name == "random":
        return RandomPlayer
    bot = HanabiBot(env_id, joint=name == "hanabi_bot")
    return lambda seed: bot


def measure(env_id: str, player: str, games: int) -> dict[str, Any]:
    """``player`` on ``env_id``, seeds 0..games-1: self-play, or ``a+b`` for two players.

    A player is ``hanabi_bot``, ``rules`` or ``random``; ``hanabi_bot+rules`` seats the bot
    first and its rules alone second.
    """
    from strategic_arena.arena import play_match_sync
    from strategic_arena.games import get_spec

    first, _, second = player.partition("+")
    makers = [_player(first, env_id)] + ([_player(second, env_id)] if second else [])
    scores: list[float] = []
    started = time.perf_counter()
    for seed in range(games):
        # Self-play seats one player object twice (one random stream for both seats).
        seats = [make(seed) for make in makers] * (2 // len(makers))
        record = play_match_sync(env_id, seats, seed=seed)
        if record.status != "complete":
            raise RuntimeError(f"{player} forfeited {env_id} seed {seed}: {record.moves[-1]}")
        scores.append(record.returns[0])
    elapsed = time.perf_counter() - started
    best = get_spec(env_id).optimum
    sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
    return {
        "env_id": env_id,
        "player": player,
        "games": games,
        "mean": statistics.fmean(scores),
        "ci95": 1.96 * sd / math.sqrt(len(scores)),
        "sd": sd,
        "best": best,
        "best_share": sum(score >= best for score in scores) / len(scores),
        "histogram": {str(int(s)): scores.count(s) for s in sorted(set(scores))},
        "games_per_s": games / elapsed,
    }


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rows as an aligned text table."""
    header = (
        f"{'variant':<17} {'player':<17} {'games':>5} {'mean':>6} {'± 95% CI':>9} "
        f"{'best (4)':>8} {'games/s':>8}"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['env_id']:<17} {row['player']:<17} {row['games']:>5} {row['mean']:>6.3f} "
            f"{'± ' + format(row['ci95'], '.3f'):>9} {row['best_share']:>8.1%} "
            f"{row['games_per_s']:>8.0f}"
        )
    return "\n".join(lines)


def format_references(rows: list[dict[str, Any]]) -> str:
    """The quoted reference points, and where the bot stands against the best of them."""
    lines = ["Reference points, OpenSpiel's Hanabi on Mini Hanabi (mean score out of 4):"]
    lines += [f"  {name:<21} {score:.2f}" for name, score in REFERENCES.items()]
    goal = max(REFERENCES.values())
    for row in rows:
        if row["player"] == "hanabi_bot":
            verdict = "above" if row["mean"] - row["ci95"] > goal else "NOT clearly above"
            lines.append(
                f"hanabi_bot on {row['env_id']}: {row['mean']:.3f} ± {row['ci95']:.3f}, "
                f"{verdict} {goal:.2f}"
            )
            if row["env_id"] == "mini_hanabi-v0":
                met = "met" if row["mean"] >= GOAL else "NOT met"
                lines.append(f"  goal {GOAL:.1f} on mini_hanabi-v0: {met}")
    return "\n".join(lines)


def exact_values() -> dict[str, dict[str, float]]:
    """The shipped joint policies' exact self-play scores over every deal, by variant.

    The expectation the seeded mean estimates, read from the table file (where
    ``tests/opponents/test_hanabi_joint.py`` checks it by replaying every deal).
    """
    from opponents.hanabi_table import shipped_table

    exact = {}
    for env_id in VARIANTS:
        table = shipped_table(env_id)
        if table is not None:
            exact[env_id] = {
                "hanabi_bot": table.value,
                "rules": table.rules_value,
                "deals": table.deals,
            }
    return exact


def format_exact(exact: dict[str, dict[str, float]]) -> str:
    """One line per variant with a shipped joint policy."""
    return "\n".join(
        f"Exact self-play over all {int(row['deals'])} deals of {env_id}: hanabi_bot "
        f"{row['hanabi_bot']:.3f}, rules {row['rules']:.3f} (goal {GOAL:.1f})"
        for env_id, row in exact.items()
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table, optionally write JSON."""
    args = _parse(argv)
    if args.games < 2:
        raise SystemExit("--games must be >= 2")
    import pyspiel

    rows = [
        measure(env_id, player, args.games)
        for env_id in VARIANTS
        for player in ("hanabi_bot", "rules", "random")
    ]
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "open_spiel": getattr(pyspiel, "__version__", "unknown"),
        },
        "seeds": f"0..{args.games - 1}",
        "references_mini_hanabi": REFERENCES,
        "rows": rows,
    }
    print(f"Self-play, seeds 0..{args.games - 1}, mean score ± 95% CI (1.96 sd / sqrt n):")
    print(format_table(rows))
    print()
    print(format_references(rows))
    pairs = [measure("mini_hanabi-v0", pair, args.games) for pair in PAIRS]
    report["pairs"] = pairs
    print()
    print("With another partner (first player in seat 0), mini_hanabi-v0, same seeds:")
    print(format_table(pairs))
    exact = exact_values()
    if exact:
        report["exact_self_play"] = exact
        print()
        print(format_exact(exact))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
