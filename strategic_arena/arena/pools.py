"""A weighted pool of opponents: ``--opponents "pool:1*random|0.25*model:NAME@URL"``.

In2AI trained against a pool of models sampled by weight (frontier models at 0.25, the others at
1.0). In the arena such a pool is one opponent: each game draws one of its members by weight,
from the game's seed (so a rerun draws the same member for the same game), among the members
that play the game. Its members are any opponent specs ``--opponents`` takes (built-in
opponents, ``model:`` endpoints with their personas), written ``WEIGHT*SPEC`` and separated by
``|``. The pool is one entrant: stored, reported and rated under its spec, whichever member
played a game.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from strategic_arena.arena.runner import Entrant
from strategic_arena.seeding import derive_seed
from strategic_arena.turn import Player

#: The prefix of a pool's spec.
POOL_PREFIX = "pool:"


@dataclass(frozen=True)
class WeightedPool:
    """The members of a pool and their weights, as its spec gives them.

    Attributes:
        spec: the pool's spec (its name in the store and the reports).
        members: ``(weight, opponent spec)`` of each member, in the spec's order.
    """

    spec: str
    members: tuple[tuple[float, str], ...]

    @classmethod
    def parse(cls, spec: str) -> WeightedPool | None:
        """The pool of ``spec``, or ``None`` when it names no pool.

        Raises:
            ValueError: a member that is not ``WEIGHT*SPEC`` with a weight > 0 and a spec.
        """
        text = spec.strip()
        if not text.startswith(POOL_PREFIX):
            return None
        members = []
        for part in text[len(POOL_PREFIX) :].split("|"):
            weight, star, member = part.strip().partition("*")
            try:
                value = float(weight)
            except ValueError:
                value = float("nan")
            if not star or not member.strip() or not value > 0:
                raise ValueError(
                    f"pool {spec!r}: each member is WEIGHT*SPEC with a weight > 0, members "
                    "separated by |, e.g. pool:1*random|0.25*model:NAME@http://host:8001/v1"
                )
            members.append((value, member.strip()))
        return cls(text, tuple(members))

    def entrant(self, members: Sequence[Entrant]) -> Entrant:
        """The pool as one entrant over its members' entrants (in :attr:`members`' order).

        Each game draws a member by weight among those that play its game, from the game's
        seed; the member plays with a seed derived from it.
        """
        weights = np.array([weight for weight, _ in self.members], dtype=float)

        def build(env_id: str, seed: int) -> Player:
            playing = np.array([member.plays(env_id) for member in members])
            chances = weights * playing
            rng = np.random.default_rng(derive_seed(seed, "pool"))
            chosen = int(rng.choice(len(members), p=chances / chances.sum()))
            return members[chosen].build(env_id, derive_seed(seed, "pool", chosen))

        plays = [member for member in members if member.envs is not None]
        envs = None
        if len(plays) == len(members):  # every member names its games: the pool plays those
            envs = tuple(sorted({env for member in members for env in member.envs or ()}))
        prefixes = tuple(sorted({p for member in members for p in member.env_prefixes}))
        params = {
            "members": [
                {"weight": weight, "name": member.name, "kind": member.kind}
                for (weight, _), member in zip(self.members, members, strict=True)
            ]
        }
        return Entrant(self.spec, "pool", params, build, envs, prefixes)
