"""Workers that share a run: each game is leased to one worker at a time, through the database.

Any number of ``eval`` processes, on any machines, pointed at one PostgreSQL store with the same
run, split its games between them. Nothing coordinates them but the store's ``claims`` table
(see :data:`strategic_arena.arena.store.CLAIMS_SCHEMA`):

1. **Offer.** Each worker, when it starts, adds a row for every game of the run it would play
   (not scored, under the replay limit), at the game's place in the run's secret order; rows
   already there (another worker's offer, a dead worker's lease) stay as they are.
2. **Claim.** A worker takes the first row nobody holds -- no worker, or a lease whose
   ``expires`` has passed -- with ``SELECT ... FOR UPDATE SKIP LOCKED``: two workers asking at
   once lock different rows, never wait on each other and never get the same game. The lease
   runs for ``lease_s`` seconds of the *server's* clock, so machines need not agree on time.
3. **Renew.** While it plays, a worker extends the leases it holds every ``lease_s / 3``
   seconds (:meth:`Leases.renew`).
4. **Store.** Storing a game deletes its row in the same transaction
   (:meth:`ResultsStore.add_game`), so a game is either leased or stored, never lost between.
5. **Die.** A worker killed (SIGKILL, a machine lost) renews nothing: its leases expire and the
   other workers claim those games and play them from the start, with the same seeds. A worker
   that runs out of games waits while others still hold leases, so a lease that expires is
   always taken.

A game is stored at most once whatever happens (the store's unique key on scored games): a
worker too slow to renew may see its game taken over, and then the second copy finds the key
scored and writes nothing.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence

from strategic_arena.arena.option_defaults import DEFAULT_LEASE_S as DEFAULT_LEASE_S
from strategic_arena.arena.store import ResultsStore

#: The server's clock, in seconds since the epoch (leases never read a worker's clock).
_NOW = "extract(epoch from clock_timestamp())"

#: A game of the run already scored (its claim row, if one is left, is not played).
_SCORED = (
    "EXISTS (SELECT 1 FROM games g WHERE g.run_id = c.run_id AND g.game_key = c.game_key "
    "AND g.status != 'incomplete')"
)


def worker_name() -> str:
    """This worker's name in the claims table: host, process id and a random tag."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Leases:
    """The leases one worker takes on the games of one run of a shared store.

    Args:
        store: a PostgreSQL results store (``store.shared``).
        run_id: the run.
        lease_s: how long a lease lasts without renewal.
        worker: this worker's name (default: :func:`worker_name`).
    """

    def __init__(
        self,
        store: ResultsStore,
        run_id: int,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        worker: str | None = None,
    ) -> None:
        if not store.shared:
            raise ValueError(f"{store.location} is not a store that workers can share")
        if lease_s <= 0:
            raise ValueError("lease_s must be positive")
        self.store = store
        self.run_id = run_id
        self.lease_s = lease_s
        self.worker = worker or worker_name()

    def offer(self, keys: Sequence[str]) -> None:
        """Add the games ``keys`` (in the order to play them) to the run's claims.

        A game another worker stored since this one listed its games is left out.
        """
        with self.store.transaction():
            self.store.execute_many(
                "INSERT INTO claims (run_id, game_key, position) SELECT ?, ?, ? WHERE NOT EXISTS "
                "(SELECT 1 FROM games WHERE run_id = ? AND game_key = ? "
                "AND status != 'incomplete') ON CONFLICT DO NOTHING",
                [
                    (self.run_id, key, position, self.run_id, key)
                    for position, key in enumerate(keys)
                ],
            )

    def claim(self) -> str | None:
        """The key of the next free game, now leased to this worker; ``None``: none is free."""
        row = self.store.execute(
            f"UPDATE claims SET worker = ?, expires = {_NOW} + ? "
            "WHERE run_id = ? AND game_key = ("
            "SELECT game_key FROM claims c WHERE c.run_id = ? "
            f"AND (c.worker IS NULL OR c.expires < {_NOW}) AND NOT {_SCORED} "
            "ORDER BY c.position LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING game_key",
            (self.worker, self.lease_s, self.run_id, self.run_id),
        )
        return None if row is None else str(row[0])

    def renew(self) -> None:
        """Extend every lease this worker holds by ``lease_s`` from now."""
        self.store.execute(
            f"UPDATE claims SET expires = {_NOW} + ? WHERE run_id = ? AND worker = ?",
            (self.lease_s, self.run_id, self.worker),
        )

    def others_playing(self) -> bool:
        """Whether games of the run are still held by live leases of other workers."""
        row = self.store.execute(
            "SELECT 1 FROM claims c WHERE c.run_id = ? AND c.worker != ? "
            f"AND c.expires >= {_NOW} AND NOT {_SCORED} LIMIT 1",
            (self.run_id, self.worker),
        )
        return row is not None

    def release(self) -> None:
        """Give back every game this worker still holds (it stops without playing them).

        And drop the rows of games already stored: an offer that raced with the store of its
        game leaves one behind, which no worker would play and the last one to leave removes.
        """
        self.store.execute(
            "UPDATE claims SET worker = NULL, expires = NULL WHERE run_id = ? AND worker = ?",
            (self.run_id, self.worker),
        )
        self.store.execute(f"DELETE FROM claims c WHERE c.run_id = ? AND {_SCORED}", (self.run_id,))

    def scored(self) -> int:
        """How many games of the run are scored, by every worker: the whole run's progress."""
        row = self.store.execute(
            "SELECT COUNT(*) FROM games WHERE run_id = ? AND status != 'incomplete'",
            (self.run_id,),
        )
        return 0 if row is None else int(row[0])
