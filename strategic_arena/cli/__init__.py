"""The ``strategic-arena`` command: a thin layer of subcommands over library functions.

Each module registers its subcommands and a handler per subcommand (parse arguments, call one
library function, print); :func:`main` dispatches to the handler and turns bad input into one
error line (:func:`~strategic_arena.cli.common.guarded`). Before any command runs, every log line
-- the libraries' (math-verify, httpx, datasets, lm-eval) included -- is made printable and the
named API keys masked (:func:`~strategic_arena.door.guard_logs`), so no endpoint text reaches the
terminal unescaped, whoever prints it.

* ``envs``, ``play ENV_ID``, ``demo`` -- :mod:`.play`;
* ``opponents``, ``serve``, ``solve`` -- :mod:`.opponents`;
* ``eval``, ``report``, ``replay`` -- :mod:`.arena`;
* ``runs`` -- :mod:`.runs`;
* ``rank`` -- :mod:`.rank`;
* ``grade`` -- :mod:`.grade`;
* ``publish``, ``ladder`` -- :mod:`.leaderboard`;
* ``train`` -- :mod:`.train`;
* ``serve-model`` -- :mod:`.serve_model`;
* ``transfer run|report|fetch|lm-eval`` -- :mod:`.transfer`;
* ``verifier train`` -- :mod:`.verifier` (MAPoRL's learned verifier).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

# The packages that register entries of a lower layer's registry (the ``best_response``
# opponent; the ``learned`` verifier), imported before any command names one.
import strategic_arena.grading
import strategic_arena.train  # noqa: F401
from strategic_arena.cli import (
    arena,
    grade,
    leaderboard,
    opponents,
    play,
    rank,
    runs,
    serve_model,
    train,
    transfer,
    verifier,
)
from strategic_arena.cli.common import Parser, guarded
from strategic_arena.cli.play import build_player
from strategic_arena.door import add_secret, guard_logs

__all__ = ["build_player", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="strategic-arena",
        description="Text games over OpenSpiel for measuring and training language models.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    play.add_parsers(sub)
    opponents.add_parsers(sub)
    arena.add_parsers(sub)
    runs.add_parser(sub)
    rank.add_parser(sub)
    grade.add_parser(sub)
    leaderboard.add_parsers(sub)
    train.add_parsers(sub)
    serve_model.add_parser(sub)
    transfer.add_parsers(sub)
    verifier.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``strategic-arena`` command; returns the exit status."""
    guard_logs()
    args = _parser().parse_args(argv)
    for option in ("api_key_env", "opponent_api_key_env"):  # the keys a command may send
        add_secret(os.environ.get(getattr(args, option, None) or ""))
    status: int = guarded(args.handler, args)
    return status
