"""``strategic-arena grade``: arguments, one call of :func:`strategic_arena.grading.grade.grade`.

Moves of Tic-Tac-Toe and Connect Four are graded against the exact solvers; poker players (the
built-in opponents of the runs, and the model at ``--base-url`` if given) are queried K times
at every information set to measure their strategy's exploitability.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from strategic_arena.arena.defaults import DEFAULT_DB
from strategic_arena.cli.arena import model_options
from strategic_arena.cli.arena_parsers import add_model_options
from strategic_arena.cli.commands import HELP
from strategic_arena.cli.common import DB_HELP, HelpFormatter, store_option
from strategic_arena.grading import strategy_envs
from strategic_arena.grading.grade import grade
from strategic_arena.grading.moves import DEFAULT_MAX_NODES
from strategic_arena.grading.summary import render_text


def add_parsers(sub: Any) -> None:
    """Register ``grade`` on the CLI's subparsers."""
    command = sub.add_parser(
        "grade",
        help=HELP["grade"],
        formatter_class=HelpFormatter,
        description="Grade every stored Tic-Tac-Toe and Connect Four move against the exact "
        "solvers, and query each poker player (built-in opponents of the runs, and the model "
        "at --base-url if given) K times at every information set to measure its strategy's "
        "exploitability. Results go to grading tables in the same database; rerunning resumes. "
        "Definitions: docs/grading.md.",
    )
    command.add_argument(
        "--db", default=DEFAULT_DB, metavar="PATH|URL", type=store_option, help=DB_HELP
    )
    command.add_argument(
        "--run", action="append", default=None, metavar="NAME", help="only this run (repeatable)"
    )
    command.add_argument(
        "--max-nodes",
        type=int,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help="Connect Four solver nodes per position; beyond it a move is 'unknown'",
    )
    command.add_argument(
        "--samples", type=int, default=20, metavar="K", help="answers per information set"
    )
    command.add_argument(
        "--envs",
        nargs="+",
        default=list(strategy_envs()),
        choices=strategy_envs(),
        metavar="ENV",
        help="poker games whose strategies are measured",
    )
    command.add_argument("--no-moves", action="store_true", help="do not grade moves")
    command.add_argument("--no-strategies", action="store_true", help="measure no strategy")
    command.add_argument("--seed", type=int, default=0, help="seed of queries and the bootstrap")
    command.add_argument("--concurrency", type=int, default=8, help="queries in flight at once")
    command.add_argument("--json", action="store_true", help="print the grades as JSON")
    command.add_argument("--quiet", action="store_true", help="no progress line")
    add_model_options(
        command, "OpenAI-compatible base URL of a model whose poker strategies to measure"
    )
    command.set_defaults(handler=grade_main)


def grade_main(args: argparse.Namespace) -> int:
    """``grade``: grade, print the grades; 1 when some strategy queries failed (rerun)."""
    result = grade(
        args.db,
        runs=args.run,
        max_nodes=args.max_nodes,
        samples=args.samples,
        envs=args.envs,
        moves=not args.no_moves,
        strategies=not args.no_strategies,
        seed=args.seed,
        concurrency=args.concurrency,
        model=model_options(args) if args.base_url is not None else None,
        progress=not args.quiet,
    )
    if args.json:
        print(json.dumps(result.data, indent=2, sort_keys=True))
    else:
        print(render_text(result.data["moves"], result.data["strategies"]))
    return 1 if result.incomplete else 0
