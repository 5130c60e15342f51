"""``python -m strategic_arena.train.config [FILE]``: rewrite the config reference in FILE.

FILE (default docs/training.md) holds the generated reference between its two markers
(:data:`~strategic_arena.train.config.describe.REFERENCE_START` and ``REFERENCE_END``).
"""

from __future__ import annotations

import sys

from strategic_arena.train.config.describe import write_reference

write_reference(sys.argv[1] if len(sys.argv) > 1 else "docs/training.md")
