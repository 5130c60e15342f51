"""Env ids the suites run over."""

from __future__ import annotations

import strategic_arena as sa

CURATED = sa.list_envs()
#: Generic-adapter cases (env id, OpenSpiel parameters) exercised alongside the curated games.
GENERIC: list[tuple[str, dict[str, int]]] = [
    ("openspiel/breakthrough", {"rows": 5, "columns": 5}),
    ("openspiel/liars_dice", {}),
    ("openspiel/nim", {}),
    # N seats and simultaneous turns: three-player Hanabi, blotto, three-player goofspiel.
    ("openspiel/hanabi", {"players": 3}),
    ("openspiel/blotto", {}),
    ("openspiel/goofspiel", {"num_cards": 4, "players": 3}),
    # Teams: partners 0 and 2 against 1 and 3.
    ("openspiel/tiny_bridge_4p", {}),
]
