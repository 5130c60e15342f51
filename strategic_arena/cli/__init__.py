"""The ``strategic-arena`` command: a thin layer of subcommands over library functions.

Each module registers its subcommands and a handler per subcommand (parse arguments, call one
library function, print); :func:`main` dispatches to the handler and turns bad input into one
error line (:func:`~strategic_arena.cli.guard.guarded`). Before any command runs, every log
line -- the libraries' (math-verify, httpx, datasets, lm-eval) included -- is made printable
and the named API keys masked (:func:`~strategic_arena.door.guard_logs`), so no endpoint text
reaches the terminal unescaped, whoever prints it.

The CLI starts light: ``--help`` reads the table of :mod:`.commands`, and only the module of
the command named is imported to build its arguments; the arena's parsers
(:mod:`.arena_parsers`) import their handlers (:mod:`.arena`) only when a command runs.

* ``envs``, ``play ENV_ID``, ``demo`` -- :mod:`.play`;
* ``opponents``, ``serve``, ``solve`` -- :mod:`.opponents`;
* ``eval``, ``report``, ``replay`` -- :mod:`.arena_parsers`, run by :mod:`.arena`;
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
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from strategic_arena._lazy import lazy_attribute
from strategic_arena.cli.commands import COMMANDS, HELP
from strategic_arena.cli.common import Parser
from strategic_arena.door import add_secret, guard_logs

if TYPE_CHECKING:  # for type checkers; at run time, __getattr__ below
    from strategic_arena.cli.play import build_player

__all__ = ["build_player", "main"]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, {"build_player": "play"}, globals(), name)


def _named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (``None``: none)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser, with ``command``'s arguments (every other command by name only).

    Every command is registered, in the order of :data:`~.commands.COMMANDS`, so ``--help``
    and an unknown command's error read as they would with every parser built; only the module
    of ``command`` (``None`` or an unknown name: none) is imported to add its arguments.
    """
    parser = Parser(
        prog="strategic-arena",
        description="Text games over OpenSpiel for measuring and training language models.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((entry.module for entry in COMMANDS if entry.name == command), None)
    built: set[str] = set()
    for entry in COMMANDS:
        if entry.module != chosen:
            sub.add_parser(entry.name, help=HELP[entry.name])
        elif entry.module not in built:  # registers all of its module's commands
            built.add(entry.module)
            importlib.import_module(entry.module).add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``strategic-arena`` command; returns the exit status."""
    guard_logs()
    words = list(sys.argv[1:] if argv is None else argv)
    args = _parser(_named(words)).parse_args(words)
    # Imported once a command runs: the packages that register entries of a lower layer's
    # registry (the ``best_response`` opponent; the ``learned`` verifier), before any command
    # names one, and the guard, which knows the store's errors.
    import strategic_arena.grading
    import strategic_arena.train  # noqa: F401
    from strategic_arena.cli.guard import guarded

    for option in ("api_key_env", "opponent_api_key_env"):  # the keys a command may send
        add_secret(os.environ.get(getattr(args, option, None) or ""))
    status: int = guarded(args.handler, args)
    return status
