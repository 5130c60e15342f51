"""``strategic-arena runs``: list, inspect, rename, delete and export the runs of a store."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from strategic_arena.arena.defaults import DEFAULT_DB
from strategic_arena.arena.runs import list_runs, rename_run, run_games
from strategic_arena.arena.store import existing
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import DB_HELP, HelpFormatter, fail, store_option
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line
from strategic_arena.grading.export import export_runs
from strategic_arena.grading.runs import delete_run


def add_parsers(sub: Any) -> None:
    """Register ``runs`` on the CLI's subparsers."""
    command = sub.add_parser(
        "runs",
        help=HELP["runs"],
        formatter_class=HelpFormatter,
        description="Without an action, list every run with its settings and games: scored "
        "(complete, forfeit) and incomplete (stopped by server failures, not yet replayed "
        "successfully). --games lists a run's games with the ids that 'replay' takes.",
    )
    command.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    action = command.add_mutually_exclusive_group()
    action.add_argument("--games", metavar="RUN", help="list the games of RUN (ids for replay)")
    action.add_argument("--rename", nargs=2, metavar=("RUN", "NEW"), help="give RUN the name NEW")
    action.add_argument(
        "--delete",
        metavar="RUN",
        help="delete RUN with its games, moves and move grades (players stay)",
    )
    action.add_argument(
        "--export",
        metavar="TARGET",
        help="copy every run (or each --run) with its games, moves, grades and settings into "
        "the store TARGET (a SQLite file or a postgresql:// URL), row for row",
    )
    command.add_argument(
        "--run",
        action="append",
        default=None,
        metavar="NAME",
        help="with --export: copy this run only (repeatable)",
    )
    command.add_argument("--json", action="store_true", help="print the list as JSON")
    command.set_defaults(handler=runs_main)


def runs_main(args: argparse.Namespace) -> int:
    """``runs``: one action on the store, or the list of its runs."""
    where = shown(args.db)  # its URL without credentials
    if args.rename:
        old, new = args.rename
        rename_run(args.db, old, new)
        print(f"renamed run {printable_line(old)!r} to {printable_line(new)!r} in {where}")
        return 0
    if args.delete:
        count = delete_run(args.db, args.delete)
        print(f"deleted run {printable_line(args.delete)!r} and its {count} games from {where}")
        return 0
    if args.export:
        copied = export_runs(existing(args.db), args.export, args.run)
        print(
            f"copied {len(copied.runs)} runs ({copied.games} games, {copied.moves} moves, "
            f"{copied.grades} move grades; {copied.skipped} games already there) from {where} "
            f"to {shown(args.export)}"
        )
        return 0
    if args.run:
        return fail("--run goes with --export")
    if args.games:
        games = run_games(args.db, args.games)
        if args.json:
            print(json.dumps([dataclasses.asdict(g) for g in games], indent=2, sort_keys=True))
            return 0
        print(f"{'id':>6}  {'env':18s} {'status':10s} {'returns':14s} players")
        for game in games:
            returns = ", ".join(f"{value:+g}" for value in game.returns)
            if game.status == "incomplete":
                returns = "-"
            players = printable_line(", ".join(game.players), 80)
            print(f"{game.id:>6}  {game.env_id:18s} {game.status:10s} {returns:14s} {players}")
        print(f"{len(games)} games; replay one with: strategic-arena replay ID --db {where}")
        return 0
    runs = list_runs(args.db)
    if args.json:
        print(json.dumps([dataclasses.asdict(r) for r in runs], indent=2, sort_keys=True))
        return 0
    for run in runs:
        print(
            f"{printable_line(run.name)}: {run.games} games scored ({run.complete} complete, "
            f"{run.forfeit} forfeit), {run.incomplete} incomplete, seed {run.seed}"
        )
        print(f"  settings: {printable_line(json.dumps(run.settings, sort_keys=True), 300)}")
    if not runs:
        print(f"no runs in {where}")
    return 0
