"""The one way this package derives a seed from another seed and labels.

Everything random is seeded from a root seed (a run's ``--seed``, a trainer's ``seed``) and the
labels that say what the randomness is for (an env id and game index, a game key and seat, a
training step and a stage name). :func:`derive_seed` turns them into an independent 63-bit seed
that is the same in every process, Python version and platform, so a rerun or a resumed run
plays exactly the same games.

:func:`secret_seed` draws a root seed from the OS when none is fixed (an evaluated endpoint
must not be able to predict the deals).

The arena stores the seeds of its games and skips games already stored, so this function must
never change: a different digest would make every stored run and the committed ladder in
``leaderboards/`` resume with other games (a test pins known values).
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np


def derive_seed(seed: int, *parts: object) -> int:
    """A 63-bit seed from a root ``seed`` and any labels, stable across processes and Pythons.

    The labels are joined by their ``str`` with the unit separator and hashed with SHA-256
    (``hash()`` is salted per process); the first 16 bytes of the digest and the root seed
    (any non-negative int, split into 32-bit words) seed a :class:`numpy.random.SeedSequence`,
    whose first 64-bit word, shifted right by one, is the result.

    Args:
        seed: the root seed (non-negative).
        *parts: labels that name what the seed is for; their order matters.

    Returns:
        A seed in ``[0, 2**63)``: valid for ``numpy.random.default_rng``, ``torch``
        generators and this package's players.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    state = np.random.SeedSequence([seed & 0xFFFFFFFF, seed >> 32, *words])
    return int(state.generate_state(1, np.uint64)[0] >> np.uint64(1))


def secret_seed() -> int:
    """A root seed nobody can predict: 63 bits from the OS's secure generator (``secrets``).

    ``eval`` uses one unless the user fixes ``--seed``, so an endpoint that knows this code
    cannot rebuild the deals; the seed is stored with the run, so its games still replay.
    """
    return secrets.randbits(63)
