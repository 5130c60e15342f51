"""``python -m strategic_arena.train.config COMMAND``: the config's two maintenance commands.

* ``reference [FILE]``: rewrite the generated config reference in FILE (default
  docs/training.md) between its markers (:func:`~.describe.write_reference`);
* ``migrate FILE...``: rewrite flat configs into sections in place, comments kept
  (:func:`~.migrate.migrate_file`).
"""

from __future__ import annotations

import sys

from strategic_arena.train.config.describe import write_reference
from strategic_arena.train.config.migrate import migrate_file


def main(argv: list[str]) -> int:
    """Run one command; the exit status (2: no such command)."""
    command, *paths = argv or ["reference"]
    if command == "reference":
        write_reference(paths[0] if paths else "docs/training.md")
        return 0
    if command == "migrate" and paths:
        for path in paths:
            print(f"{path}: {'migrated' if migrate_file(path) else 'already in sections'}")
        return 0
    print("usage: python -m strategic_arena.train.config reference [FILE] | migrate FILE...")
    return 2


sys.exit(main(sys.argv[1:]))
