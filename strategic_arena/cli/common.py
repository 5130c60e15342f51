"""What every command of the CLI shares: the help format and turning errors into one line.

Bad input never ends in a traceback: :func:`guarded` runs a command's handler and prints the
errors library functions raise for bad input as one ``strategic-arena: error: ...`` line.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable, Sequence

from strategic_arena._extras import MissingExtraError
from strategic_arena.arena import postgres
from strategic_arena.arena.replay import ReplayError
from strategic_arena.arena.store import explain, location
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


def fail(message: object) -> int:
    """Print ``message`` as the command's one error line; returns the exit status 2."""
    print(f"strategic-arena: error: {printable_line(message)}", file=sys.stderr)
    return 2


def guarded(handler: Handler, args: argparse.Namespace) -> int:
    """Run ``handler``, printing bad input (and a diverging replay) as one line, no traceback."""
    try:
        return handler(args)
    except ReplayError as error:
        print(f"strategic-arena: replay diverged: {printable_line(error)}", file=sys.stderr)
        return 1
    except sqlite3.Error as error:  # a store that fails while it is read (not SQLite, ...)
        db = getattr(args, "db", None)
        where = f" {location(db)}" if db else ""
        return fail(f"cannot read the results store{where}: {explain(error)}")
    except (ValueError, KeyError, MissingExtraError, OSError) as error:
        return fail(error.args[0] if isinstance(error, KeyError) and error.args else error)
    except Exception as error:  # PostgreSQL's driver, failing while a store is read
        if not postgres.is_driver_error(error):
            raise
        db = getattr(args, "db", None)
        where = f" {location(db)}" if db else ""
        return fail(f"cannot read the results store{where}: {postgres.explain(error)}")
