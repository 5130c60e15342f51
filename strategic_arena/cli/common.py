"""What every command of the CLI shares: the help format, the store option, one error line.

Light by design (the standard library and :mod:`strategic_arena.door`): every command's parser
imports it, and ``strategic-arena --help`` imports nothing heavier. Running a handler inside
the error guard is :mod:`strategic_arena.cli.guard`'s job.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

from strategic_arena.door import Refused, is_postgres, scrub, store_target
from strategic_arena.door.printable import printable_line

#: The help of every ``--db``.
DB_HELP = (
    "results store: a SQLite file, or a postgresql:// URL (credentials from PGPASSWORD or "
    "~/.pgpass, never stored)"
)


def add_api_key_option(group: argparse._ArgumentGroup) -> None:
    """``--api-key-env``: the variable holding an endpoint's key (every endpoint command's)."""
    group.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="environment variable holding the API key (never stored or printed)",
    )


Handler = Callable[[argparse.Namespace], int]
"""A command: parsed arguments in, exit status out."""


def later(module: str, name: str) -> Handler:
    """The handler ``name`` of ``module``, imported only when its command runs.

    A command's parser sets it as its handler, so that building the parser (``--help``
    included) never imports what only running the command needs.
    """

    def run(args: argparse.Namespace) -> int:
        handler = cast(Handler, getattr(importlib.import_module(module), name))
        return handler(args)

    return run


class Parser(argparse.ArgumentParser):
    """The CLI's parser: a subcommand's epilog may be written only when its help is shown.

    ``epilog_factory`` builds the epilog on the first ``--help`` (``train`` lists every config
    field, which needs the config's schema and so the ``train`` extra): the CLI starts, and
    every other command runs, without importing what only that help needs.
    """

    def __init__(
        self, *args: Any, epilog_factory: Callable[[], str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        """The help, its epilog built first where a factory gives it."""
        if self.epilog_factory is not None and self.epilog is None:
            self.epilog = self.epilog_factory()
        return super().format_help()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default only when it says something.

    Not ``None`` or a flag's ``False``, and not when the help text already states the default
    in words (argparse would print both).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default is None or action.default is False or "default" in text:
            return text
        return super()._get_help_string(action)


def turn_label(seats: Sequence[int]) -> str:
    """`` (simultaneous: seats 0, 1)`` after a move of a simultaneous turn, else nothing."""
    return f" (simultaneous: seats {', '.join(map(str, seats))})" if len(seats) > 1 else ""


def store_option(value: str) -> str:
    """``--db``'s type: a SQLite path or a PostgreSQL URL, else refused by argparse in one line.

    The refusal (:func:`strategic_arena.door.store_target`) names the accepted forms and shows
    no part of the value: a libpq keyword string is never taken for a file name.
    """
    try:
        store_target(value)
    except Refused as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def _targets(args: argparse.Namespace) -> list[str]:
    """The connection targets among a command's arguments (whose secrets no message shows)."""
    found: list[str] = []
    for value in vars(args).values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and (is_postgres(item) or "://" in item or "=" in item):
                found.append(item)
    return found


def fail(message: object, args: argparse.Namespace | None = None) -> int:
    """Print ``message`` as the command's one error line; returns the exit status 2."""
    text = str(message)
    for target in _targets(args) if args is not None else []:
        text = scrub(text, target)  # a driver's or library's message repeating a password
    print(f"strategic-arena: error: {printable_line(text)}", file=sys.stderr)
    return 2
