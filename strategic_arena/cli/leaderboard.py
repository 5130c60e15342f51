"""The ``publish`` and ``ladder`` commands: arguments, one library call, printing.

:func:`add_parsers` registers both on the main command's subparsers; each sets ``handler`` to
its ``*_main`` function, which the main command calls with the parsed arguments.

* ``strategic-arena publish --db PATH --out DIR`` writes the leaderboard of a results database;
* ``strategic-arena ladder --out DIR`` plays (or resumes) the baseline ladder into
  ``DIR/ladder.db`` and publishes it into ``DIR``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strategic_arena._extras import MissingExtraError
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli.arena import prices_of
from strategic_arena.cli.arena_parsers import add_price_options
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import fail, store_option
from strategic_arena.games import get_spec
from strategic_arena.leaderboard import PublishError, ladder, publish
from strategic_arena.leaderboard.data import MAX_LEFT_OUT
from strategic_arena.leaderboard.ladder import BASELINE, NUM_GAMES
from strategic_arena.leaderboard.replays import GAMES_PER_PAIR, TEXT_LIMIT
from strategic_arena.ratings import TrueSkillSettings


def _add_rating_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--passes",
        type=int,
        default=16,
        help="TrueSkill passes over the games in random orders, averaged (default 16)",
    )
    command.add_argument(
        "--rating-seed",
        type=int,
        default=0,
        help="seed of the pass orders (default 0)",
    )
    command.add_argument(
        "--max-left-out",
        type=float,
        default=MAX_LEFT_OUT,
        metavar="SHARE",
        help="rank no player whose own server failures left more than this share of its "
        f"games unscored; it is still shown, with its coverage (default {MAX_LEFT_OUT:g})",
    )


def _add_page_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--title", default=None, help="the page's title (default: Leaderboards)")
    command.add_argument(
        "--description",
        default=None,
        metavar="TEXT",
        help="a paragraph shown under the title (plain text), e.g. what was evaluated and how",
    )
    command.add_argument(
        "--replays",
        type=int,
        default=GAMES_PER_PAIR,
        metavar="N",
        help="games the page's Replays tab steps through, per pair of players in each game "
        f"(the first by run and game key, alternating seats; answers cut at {TEXT_LIMIT} "
        f"characters; default {GAMES_PER_PAIR}; 0: no Replays tab)",
    )


def add_parsers(sub: Any) -> None:
    """Register ``publish`` and ``ladder`` on the main command's subparsers."""
    publish = sub.add_parser(
        "publish",
        help=HELP["publish"],
        description="Rate every stored game with TrueSkill (per game and overall; Hanabi by "
        "mean score) and write LEADERBOARD.md, leaderboard.json (+ its JSON schema) and a "
        "static, offline index.html into --out.",
    )
    publish.add_argument(
        "--db",
        required=True,
        action="append",
        type=store_option,
        metavar="PATH|URL",
        help="the results database: a SQLite file or a postgresql:// URL; repeat it to publish "
        "the runs of several stores as one leaderboard",
    )
    publish.add_argument(
        "--out", default="leaderboards", metavar="DIR", help="output folder (default leaderboards)"
    )
    publish.add_argument(
        "--run",
        action="append",
        default=None,
        metavar="NAME",
        help="publish only this run (repeatable; default: every run in the database)",
    )
    _add_rating_options(publish)
    _add_page_options(publish)
    add_price_options(publish)
    publish.set_defaults(handler=publish_main)

    counts = ", ".join(f"{env} {n}" for env, n in NUM_GAMES.items())
    ladder = sub.add_parser(
        "ladder",
        help=HELP["ladder"],
        description="Play every baseline entrant against every other on each game it can play "
        f"({', '.join(BASELINE)}), store the games in --db (resuming if interrupted), then "
        "publish the leaderboard into --out.",
    )
    ladder.add_argument(
        "--out", default="leaderboards", metavar="DIR", help="output folder (default leaderboards)"
    )
    ladder.add_argument(
        "--db",
        default=None,
        metavar="PATH",
        type=store_option,
        help="results database (default OUT/ladder.db)",
    )
    ladder.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    ladder.add_argument(
        "--num-games",
        type=int,
        default=None,
        metavar="N",
        help=f"games per pair of entrants in every game (default per game: {counts})",
    )
    ladder.add_argument(
        "--envs", nargs="+", default=None, metavar="ENV_ID", help="games to play (default all)"
    )
    ladder.add_argument(
        "--no-publish", action="store_true", help="only play the games, do not publish"
    )
    _add_rating_options(ladder)
    _add_page_options(ladder)
    ladder.set_defaults(handler=ladder_main)


def _publish(
    args: argparse.Namespace, db: str | Sequence[str], run_names: Sequence[str] | None
) -> int:
    if args.passes < 1:
        return fail("--passes must be at least 1")
    if not 0.0 <= args.max_left_out <= 1.0:
        return fail(f"--max-left-out must be between 0 and 1, not {args.max_left_out:g}")
    if args.replays < 0:
        return fail(f"--replays must be at least 0, not {args.replays}")
    settings = TrueSkillSettings(passes=args.passes, seed=args.rating_seed)
    try:
        paths = publish(
            db,
            args.out,
            run_names,
            settings,
            max_left_out=args.max_left_out,
            title=args.title,
            description=args.description,
            replays_per_pair=args.replays,
            prices=prices_of(args) if hasattr(args, "price") else None,
        )
    except PublishError as error:
        return fail(error.strerror)
    except (FileNotFoundError, KeyError, MissingExtraError) as error:
        return fail(error.args[0] if isinstance(error, KeyError) else error)
    for path in paths.values():
        print(f"wrote {path}")
    return 0


def publish_main(args: argparse.Namespace) -> int:
    """``publish``: the leaderboard of ``--db`` into ``--out``."""
    return _publish(args, args.db, args.run)


def _command(args: argparse.Namespace, db: str) -> str:
    """The command line that replays this ladder (stored with the run and published)."""
    parts = ["strategic-arena", "ladder", "--out", args.out, "--db", db, "--seed", str(args.seed)]
    if args.num_games is not None:
        parts += ["--num-games", str(args.num_games)]
    if args.envs:
        parts += ["--envs", *args.envs]
    return shlex.join(parts)


def ladder_main(args: argparse.Namespace) -> int:
    """``ladder``: play (or resume) the baseline ladder, then publish it."""
    db = args.db or str(Path(args.out) / "ladder.db")
    if args.num_games is not None and args.num_games < 1:
        return fail("--num-games must be at least 1")
    try:
        for env_id in args.envs or ():
            get_spec(env_id)
        started = time.perf_counter()
        with ResultsStore(db) as store:
            summary = ladder.play(
                store,
                args.seed,
                env_ids=args.envs,
                num_games=args.num_games,
                command=_command(args, db),
            )
    except (ValueError, MissingExtraError) as error:
        return fail(error)
    print(
        f"ladder: {summary.played} games played, {summary.resumed} resumed, "
        f"{len(summary.failed)} failed in {time.perf_counter() - started:.0f}s -> {db}"
    )
    for key, reason in summary.failed:
        print(f"  failed {key}: {reason}", file=sys.stderr)
    if not summary.complete:
        return fail("some games failed; rerun the same command to retry them")
    if args.no_publish:
        return 0
    return _publish(args, db, [ladder.RUN_NAME])
