"""Running a command's handler so that bad input ends in one error line, never a traceback.

:func:`guarded` prints the errors library functions raise for bad input as one
``strategic-arena: error: ...`` line. It knows the arena's store and replay errors, so it is
imported only once a command is about to run (``--help`` never needs it).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

from strategic_arena._extras import MissingExtraError, missing_extra_message
from strategic_arena.arena import postgres
from strategic_arena.arena.replay import ReplayError
from strategic_arena.arena.store import explain
from strategic_arena.cli.common import Handler, fail
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line


def guarded(handler: Handler, args: argparse.Namespace) -> int:
    """Run ``handler``, printing bad input (and a diverging replay) as one line, no traceback."""
    try:
        return handler(args)
    except ReplayError as error:
        print(f"strategic-arena: replay diverged: {printable_line(error)}", file=sys.stderr)
        return 1
    except sqlite3.Error as error:  # a store that fails while it is read (not SQLite, ...)
        db = getattr(args, "db", None)
        where = f" {shown(db)}" if db else ""
        return fail(f"cannot read the results store{where}: {explain(error)}", args)
    except ModuleNotFoundError as error:  # an optional dependency a command imports itself
        if error.name is None:
            return fail(error, args)
        return fail(missing_extra_message(error.name, f"'{args.command}'"), args)
    except (ValueError, KeyError, MissingExtraError, OSError) as error:
        return fail(error.args[0] if isinstance(error, KeyError) and error.args else error, args)
    except Exception as error:  # PostgreSQL's driver, failing while a store is read
        if not postgres.is_driver_error(error):
            raise
        db = getattr(args, "db", None)
        where = f" {shown(db)}" if db else ""
        return fail(f"cannot read the results store{where}: {postgres.explain(error, db)}", args)
