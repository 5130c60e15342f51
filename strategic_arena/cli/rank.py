"""``strategic-arena rank``: rank players at a game, playing only the games that settle it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from strategic_arena.arena.defaults import DEFAULT_DB
from strategic_arena.arena.leases import DEFAULT_LEASE_S
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import DB_HELP, HelpFormatter, store_option
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line
from strategic_arena.ranking import RankSettings, rank_players, render, report_rows


def add_parsers(sub: Any) -> None:
    """Register ``rank`` on the CLI's subparsers."""
    command = sub.add_parser(
        "rank",
        help=HELP["rank"],
        formatter_class=HelpFormatter,
        description="Rank several players (built-in opponents, models behind endpoints) at "
        "one two-sided game. Instead of every pairing in full, each batch plays pairs of games "
        "(one deal, both seatings) between the two neighbours in the TrueSkill ranking whose "
        "order is least certain, until every neighbour order holds with --confidence, the "
        "--budget of games is spent, or that pairing reaches --num-games. Stored like eval's "
        "runs: the same command resumes, and the schedule is reproducible from --seed "
        "(docs/arena.md, 'Adaptive match-making for a ranking').",
    )
    command.add_argument(
        "--players",
        nargs="+",
        required=True,
        metavar="SPEC",
        help="the players: opponent specs (see 'strategic-arena opponents') or "
        "model:NAME@BASE_URL (asked with the default style, prompts and sampling)",
    )
    command.add_argument("--env", required=True, metavar="ENV", help="the game (two-sided)")
    command.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="the probability each neighbour pair's order must reach under the TrueSkill posterior",
    )
    command.add_argument(
        "--num-games",
        type=int,
        default=100,
        metavar="N",
        help="the most games of one pairing (both seatings); the full schedule is every "
        "pairing played N games",
    )
    command.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="N",
        help="the most games of the whole ranking (default: the full schedule)",
    )
    command.add_argument(
        "--batch-pairs",
        type=int,
        default=2,
        metavar="K",
        help="pairs of games per batch between two re-rankings: more keep more games in "
        "flight, fewer stop closer to the answer (part of the run's schedule)",
    )
    command.add_argument("--seed", type=int, default=None, help="the run's root seed")
    command.add_argument("--concurrency", type=int, default=8, help="games in flight at once")
    command.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="environment variable holding the key sent to the model players (default none)",
    )
    command.add_argument(
        "--max-replays",
        type=int,
        default=3,
        metavar="K",
        help="how often later calls replay a game a server failure stopped",
    )
    command.add_argument(
        "--lease-s", type=float, default=DEFAULT_LEASE_S, metavar="S", help=argparse.SUPPRESS
    )
    command.add_argument("--run-name", default=None, help="the run's name (default: derived)")
    command.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    command.add_argument("--json", action="store_true", help="print the ranking as JSON")
    command.set_defaults(handler=rank_main)


def rank_main(args: argparse.Namespace) -> int:
    """``rank``: play the ranking's batches, then print where it stands."""
    if args.max_replays < 0:
        raise ValueError("--max-replays must be at least 0")
    settings = RankSettings(
        args.env, args.confidence, args.num_games, args.budget, args.batch_pairs
    )
    name, seed, result = rank_players(
        args.db,
        args.players,
        settings,
        seed=args.seed,
        concurrency=args.concurrency,
        run_name=args.run_name,
        api_key_env=args.api_key_env,
        max_replays=args.max_replays,
        lease_s=args.lease_s,
    )
    print(
        f"Run {printable_line(name)!r} (seed {seed}): {result.played} games played, "
        f"{result.incomplete} incomplete (server failures), {result.state.games} stored "
        f"-> {shown(args.db)}",
        file=sys.stderr,
    )
    with ResultsStore.for_reading(args.db) as store:
        rows = report_rows(store, [name])
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        print("\n".join(render(rows)).lstrip("\n"))
    return 1 if result.incomplete else 0
