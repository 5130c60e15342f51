"""The arena's default values that the CLI's parsers show, in a module that imports nothing.

Each is defined here once and imported by the module that uses it (the store, the leases, the
sequential test), so that building ``eval``'s parser -- ``eval --help`` included -- reads them
without importing the store (OpenSpiel, PettingZoo) or the test (numpy).
"""

from __future__ import annotations

#: The longest response (and reasoning) text stored per answer, by default: far above any
#: game answer, far below what a hostile endpoint may send (a 30 MB reply per move).
DEFAULT_MAX_RESPONSE_CHARS = 100_000

#: How long a lease lasts without renewal by default, in seconds: long enough for a loaded
#: machine to renew in time, short enough that a dead worker's games wait little.
DEFAULT_LEASE_S = 60.0

#: The most games of one matchup's test when ``eval --until decided`` is given no --num-games.
DEFAULT_CAP = 400

#: The Elo models the sequential test's bounds may be given in.
ELO_MODELS = ("logistic", "normalized")

#: The sequential test's defaults: H0 (the model ``SPRT_ELO0`` Elo stronger), H1
#: (``SPRT_ELO1`` stronger), the error rates, and the bounds' Elo model.
SPRT_ELO0 = 0.0
SPRT_ELO1 = 100.0
SPRT_ALPHA = 0.05
SPRT_BETA = 0.05
SPRT_ELO_MODEL = "logistic"
