"""``python -m strategic_arena.cli``: the ``strategic-arena`` command."""

from strategic_arena.cli import main

raise SystemExit(main())
