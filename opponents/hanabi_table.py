"""The shipped joint policy of the Hanabi partner: a table from a seat's information to a move.

:mod:`opponents.hanabi_joint` computes, for Mini Hanabi, a joint self-play policy by iterated
exact best response, and writes the decisions of self-play (every decision either seat makes
in any deal, each seat following the policy) to ``opponents/policies/<env id>.npz``.
:class:`~opponents.hanabi_bot.HanabiBot` looks its seat's information up in that table first,
and falls back to its rules for anything the table does not hold (another partner's moves lead
off the self-play path at once).

A decision is keyed by everything its seat may know and nothing else: the seat, OpenSpiel's
observation string of the seat (its partner's cards, what hints told about its own, fireworks,
tokens, discards, deck size) and the public moves so far (action ids, chance outcomes
excluded) -- exactly what the bot receives in process or behind ``serve``. The key is stored
as an 8-byte BLAKE2b digest of that text (a table of a few thousand entries, so a collision
with a key off the path is about one chance in 10^15; the looked-up move must be legal too).

The file holds ``seats`` (int8), ``digests`` (uint64), ``actions`` (int16), and metadata:
``env_id``, ``rounds`` (best-response rounds), ``deals`` (deals enumerated), ``value`` (the
exact expected self-play score over every deal) and ``rules_value`` (the rule bot's).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Where the shipped tables live (package data, beside the poker policies).
TABLE_DIR = Path(__file__).resolve().parent / "policies"


def information_key(observation: str, moves: Sequence[int]) -> str:
    """The text of a seat's information: its observation string and the public moves."""
    return f"{observation}|{','.join(str(action) for action in moves)}"


def digest(key: str) -> int:
    """The 8-byte BLAKE2b digest of ``key`` as an unsigned integer."""
    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class JointTable:
    """A joint policy's self-play decisions, by seat and information digest.

    Attributes:
        env_id: the game.
        moves: ``(seat, digest) -> action``.
        rounds: best-response rounds that built it.
        deals: deals enumerated (every distinct deal of the variant).
        value: its exact expected self-play score over those deals.
        rules_value: the rule bot's exact expected self-play score, for comparison.
    """

    env_id: str
    moves: dict[tuple[int, int], int]
    rounds: int
    deals: int
    value: float
    rules_value: float

    def action(self, seat: int, observation: str, moves: Sequence[int]) -> int | None:
        """The table's move for ``seat`` with this information, or ``None`` when it has none."""
        return self.moves.get((seat, digest(information_key(observation, moves))))


def table_path(env_id: str, directory: str | Path | None = None) -> Path:
    """The table file of ``env_id`` in ``directory`` (default: the shipped folder)."""
    return Path(directory or TABLE_DIR) / f"{env_id.removesuffix('-v0')}.npz"


def save_table(
    path: str | Path,
    env_id: str,
    decisions: Iterable[tuple[int, str, int]],
    *,
    rounds: int,
    deals: int,
    value: float,
    rules_value: float,
) -> None:
    """Write ``(seat, information key, action)`` decisions as a compressed ``.npz`` file.

    Raises:
        ValueError: two decisions share a seat and information but differ in action.
    """
    moves: dict[tuple[int, int], int] = {}
    for seat, key, action in decisions:
        entry = (seat, digest(key))
        if moves.setdefault(entry, action) != action:
            raise ValueError(f"seat {seat} has two moves for one information: {key!r}")
    entries = sorted(moves.items())
    np.savez_compressed(
        path,
        seats=np.asarray([seat for (seat, _), _ in entries], dtype=np.int8),
        digests=np.asarray([code for (_, code), _ in entries], dtype=np.uint64),
        actions=np.asarray([action for _, action in entries], dtype=np.int16),
        env_id=np.asarray(env_id),
        rounds=np.asarray(rounds, dtype=np.int64),
        deals=np.asarray(deals, dtype=np.int64),
        value=np.asarray(value, dtype=np.float64),
        rules_value=np.asarray(rules_value, dtype=np.float64),
    )


def load_table(path: str | Path) -> JointTable:
    """Read a table written by :func:`save_table`."""
    with np.load(path, allow_pickle=False) as data:
        seats = data["seats"].tolist()
        digests = data["digests"].tolist()
        actions = data["actions"].tolist()
        return JointTable(
            env_id=str(data["env_id"]),
            moves={
                (int(seat), int(code)): int(action)
                for seat, code, action in zip(seats, digests, actions, strict=True)
            },
            rounds=int(data["rounds"]),
            deals=int(data["deals"]),
            value=float(data["value"]),
            rules_value=float(data["rules_value"]),
        )


@functools.cache
def shipped_table(env_id: str) -> JointTable | None:
    """The shipped table of ``env_id``, or ``None`` when none ships (shared; do not modify)."""
    path = table_path(env_id)
    return load_table(path) if path.exists() else None
