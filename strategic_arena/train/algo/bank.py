"""The episode bank: finished games go in, balanced training batches come out.

In2AI's rolling *episodes bank* (MindGames Arena, NeurIPS 2025): generation and batching are
decoupled. Finished, scored episodes are added to the bank (:meth:`EpisodeBank.add`); a
training batch is drawn from whatever the bank holds (:meth:`EpisodeBank.draw`), not from one
step's games, so that games of very different lengths, episodes of very different lengths and
skewed reward distributions still make balanced batches. A batch is counted in ``turns`` (the
trainable turns it holds) or in ``episodes`` (``batch_unit``), and :meth:`EpisodeBank.draw`
builds it in four steps:

1. **eligibility** -- the bank's filter (a callable ``(episode, version) -> bool``, e.g. a
   bounded-staleness rule) removes the episodes no longer fit to train on; they are counted as
   *dropped*;
2. **per-game interleaving** (``interleave``) -- the batch is shared equally among the games in
   the bank, in units, so that a game of 40-turn episodes gets as many turns as a game of
   2-turn episodes; a game that holds less than its share gives all it has and the rest is
   shared among the others (water-filling, :func:`allocate`; an indivisible remainder goes to
   the games first in name order);
3. **reward-quantile strata** (``strata``) -- within a game (within the one pool when not
   interleaving), episodes are ranked by reward (:func:`episode_reward`; ties in a seeded
   random order) and cut into ``strata`` groups of (nearly) equal count, lowest rewards first;
   the game's share is split equally among them in the same way, so failures, near-misses and
   successes all reach the batch;
4. **episode coverage** (``coverage``) -- within a stratum, episodes are taken in a seeded
   random order; each contributes ``ceil(coverage * n)`` of its ``n`` trainable turns (all of
   them at ``coverage: 1``, a seeded random choice otherwise), so a batch spreads over many
   episodes rather than a few long ones. The one episode that crosses its stratum's share
   gives only the turns that fit (a seeded random choice), so a ``turns`` batch holds exactly
   ``batch_size`` turns whenever the bank has that many.

Drawn episodes leave the bank. The turns of a drawn episode left out of the batch (coverage, the
cut at a share's boundary) still count for the advantages -- the estimator sees the whole
trajectory -- and are then marked ineligible (:meth:`Batch.drop_unselected`), so the update
skips them. Undrawn episodes stay for later draws (``undrawn: keep``) or are discarded
(``undrawn: drop``: over-collect, subsample, start afresh). ``capacity`` bounds the bank in
episodes; adding beyond it evicts the oldest first. Over-collection (``over_collection``) is
:func:`fill_and_draw`'s loop, with the caller's round player: it adds games until
:meth:`EpisodeBank.ready`, i.e. until the bank holds ``over_collection * batch_size`` units
(under ``interleave``, every game its equal part of them), then draws.

Randomness: draw ``d`` (counted from 0 over the run) uses a generator seeded by
``derive_seed(seed, "bank", d)``; the bank's whole state -- its episodes, their ages, the
counters -- is plain data (:meth:`EpisodeBank.state_dict`), so a checkpoint restores it exactly.
Pure Python and numpy.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.seeding import derive_seed

log = logging.getLogger("strategic_arena.train")

#: Plays and scores a further round of the step's games (round 1, 2, ...): its episodes and how
#: many of its games were dropped.
PlayRound: TypeAlias = Callable[[int], tuple[list[Episode], int]]

BatchUnit: TypeAlias = Literal["turns", "episodes"]
Undrawn: TypeAlias = Literal["keep", "drop"]

#: Whether an episode may still be trained on when the weights are at ``version``.
EpisodeFilter: TypeAlias = Callable[[Episode, int], bool]


@dataclass
class BankConfig:
    """``bank: {...}``: draw each step's batch from a bank of episodes (docs/training.md)."""

    batch_unit: BatchUnit = "turns"
    """What batch_size counts: trainable ``turns`` (eligible turns with a response) or whole
    ``episodes``."""
    batch_size: int = 256
    """Size of a step's batch, in batch_unit."""
    over_collection: float = 1.0
    """Before a batch is drawn the bank must hold over_collection * batch_size units: a step
    plays further rounds of its games until it does (at most max_rounds), then draws a batch
    from the bank. Above 1: generate more than a batch uses, then subsample."""
    max_rounds: int = 4
    """Most rounds of games (episodes_per_game per game each) a step plays to fill the bank;
    then the batch is drawn from what there is, with a warning."""
    interleave: bool = True
    """Share the batch equally among the games (in batch_unit), so that games with long
    episodes do not dominate it; false: one pool, episodes in a random order."""
    strata: int = 1
    """Reward-quantile strata within a game: its episodes ranked by reward are cut into this
    many groups of equal count and the game's share is split equally among them (1: off)."""
    coverage: float = 1.0
    """Share of a drawn episode's trainable turns that go into the batch (ceil(coverage * n),
    a seeded random choice; 1: all of them). Lower it to spread a batch over more episodes."""
    capacity: int = 4096
    """Most episodes the bank holds; adding more evicts the oldest first."""
    undrawn: Undrawn = "keep"
    """What happens to episodes a draw leaves in the bank: ``keep`` them for later draws, or
    ``drop`` them (every batch then comes from fresh games)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = []
        for name in ("batch_size", "max_rounds", "strata", "capacity"):
            if getattr(self, name) < 1:
                problems.append(f"bank.{name} must be >= 1")
        if not self.over_collection >= 1:
            problems.append("bank.over_collection must be >= 1")
        if not 0 < self.coverage <= 1:
            problems.append("bank.coverage must lie in (0, 1]")
        if self.batch_unit == "episodes" and self.capacity < self.needed:
            problems.append(
                f"bank.capacity ({self.capacity}) cannot hold over_collection * batch_size "
                f"({self.needed}) episodes"
            )
        return problems

    @property
    def needed(self) -> int:
        """Units the bank must hold before a draw: ceil(over_collection * batch_size)."""
        return math.ceil(self.over_collection * self.batch_size - 1e-9)


def trainable_indices(episode: Episode) -> list[int]:
    """Positions in ``episode.turns`` of its trainable turns (eligible, with a response)."""
    return [i for i, turn in enumerate(episode.turns) if turn.eligible and turn.response_ids]


def episode_reward(episode: Episode) -> float:
    """The reward an episode is ranked by: its learner seats' mean return over eligible turns.

    Against a fixed opponent this is the learner's return; in self-play of a zero-sum game the
    game outcome cancels between the seats and what remains ranks games by their format and
    invalid-move rewards.
    """
    seats = episode.learner_seats or (0,)
    total = sum(turn.reward for turn in episode.turns if turn.eligible)
    return total / len(seats)


def allocate(budget: int, supplies: Sequence[int]) -> list[int]:
    """``budget`` units shared equally among groups, none getting more than its supply.

    Water-filling: each open group gets an equal share (an indivisible remainder goes one unit
    each to the first open groups), a group that cannot take its share gives all it has, and
    what it could not take is shared again among the others.

    >>> allocate(10, [2, 100, 100])
    [2, 4, 4]
    >>> allocate(7, [100, 100])
    [4, 3]
    """
    quotas = [0] * len(supplies)
    left = min(budget, sum(supplies))
    open_groups = [i for i, supply in enumerate(supplies) if supply > 0]
    while left > 0 and open_groups:
        share, extra = divmod(left, len(open_groups))
        for rank, i in enumerate(open_groups):
            give = min(share + (1 if rank < extra else 0), supplies[i] - quotas[i])
            quotas[i] += give
            left -= give
        open_groups = [i for i in open_groups if quotas[i] < supplies[i]]
    return quotas


@dataclass
class BankEntry:
    """An episode in the bank: its serial number (age order) and the version it was added at."""

    serial: int
    version: int
    episode: Episode


@dataclass
class Batch:
    """A drawn batch: episodes (in the order they entered the bank) and the turns trained on.

    Attributes:
        episodes: the drawn episodes.
        selected: for each episode, the positions in its ``turns`` that are in the batch.
        metrics: the draw's ``bank/`` metrics.
    """

    episodes: list[Episode]
    selected: list[tuple[int, ...]]
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def turns(self) -> list[Turn]:
        """The batch's turns, episode by episode."""
        pairs = zip(self.episodes, self.selected, strict=True)
        return [episode.turns[i] for episode, chosen in pairs for i in chosen]

    def drop_unselected(self) -> None:
        """Mark every turn left out of the batch ineligible (call after the advantages)."""
        for episode, chosen in zip(self.episodes, self.selected, strict=True):
            keep = set(chosen)
            for index, turn in enumerate(episode.turns):
                if index not in keep:
                    turn.eligible = False


class EpisodeBank:
    """A bank of scored episodes from which balanced batches are drawn (module docstring).

    Args:
        config: the bank's settings.
        seed: root seed of the draws.
        keep: the eligibility filter, ``keep(episode, version)``; ``None`` keeps every episode.
    """

    def __init__(self, config: BankConfig, seed: int, *, keep: EpisodeFilter | None = None) -> None:
        self.config = config
        self.seed = seed
        self.keep = keep
        self.entries: list[BankEntry] = []
        self.next_serial = 0
        self.draws = 0
        self.counts = {"added": 0, "evicted": 0, "dropped": 0}

    def __len__(self) -> int:
        return len(self.entries)

    # -- filling -------------------------------------------------------------------------------

    def units(self, episode: Episode) -> int:
        """What ``episode`` can give a batch, in batch_unit (its coverage share of turns)."""
        if self.config.batch_unit == "episodes":
            return 1
        return self._covered(len(trainable_indices(episode)))

    def _covered(self, trainable: int) -> int:
        return math.ceil(self.config.coverage * trainable - 1e-9)

    def size(self) -> int:
        """The bank's content in batch_unit."""
        return sum(self.units(entry.episode) for entry in self.entries)

    def add(self, episodes: Iterable[Episode], version: int = 0) -> None:
        """Bank scored ``episodes`` played by weights ``version``; evict beyond ``capacity``.

        ``version`` dates the episodes for the age metrics (the trainer passes its step); the
        filter reads each turn's own ``weight_version`` if it needs more.

        An episode without a trainable turn has nothing to give a batch and is not banked.
        """
        for episode in episodes:
            if not trainable_indices(episode):
                continue
            self.entries.append(BankEntry(self.next_serial, version, episode))
            self.next_serial += 1
            self.counts["added"] += 1
        excess = len(self.entries) - self.config.capacity
        if excess > 0:  # entries are kept in serial order: the oldest come first
            del self.entries[:excess]
            self.counts["evicted"] += excess

    def prune(self, version: int) -> None:
        """Remove (and count as dropped) the episodes the filter rejects at ``version``."""
        if self.keep is None:
            return
        kept = [entry for entry in self.entries if self.keep(entry.episode, version)]
        self.counts["dropped"] += len(self.entries) - len(kept)
        self.entries = kept

    def ready(self, version: int) -> bool:
        """Whether the bank holds ``over_collection * batch_size`` eligible units.

        Under ``interleave`` every game in the bank must hold its equal part of that, so that
        a game of short episodes is not left below its share of the batch.
        """
        self.prune(version)
        if not self.config.interleave:
            return self.size() >= self.config.needed
        supplies: dict[str, int] = {}
        for entry in self.entries:
            env_id = entry.episode.env_id
            supplies[env_id] = supplies.get(env_id, 0) + self.units(entry.episode)
        part = math.ceil(self.config.needed / max(len(supplies), 1))
        return bool(supplies) and min(supplies.values()) >= part

    # -- drawing -------------------------------------------------------------------------------

    def draw(self, version: int) -> Batch:
        """A balanced batch for weights ``version``; drawn episodes leave the bank."""
        cfg = self.config
        rng = np.random.default_rng(derive_seed(self.seed, "bank", self.draws))
        self.draws += 1
        self.prune(version)
        groups: dict[str, list[BankEntry]] = {}
        for entry in self.entries:
            key = entry.episode.env_id if cfg.interleave else ""
            groups.setdefault(key, []).append(entry)
        names = sorted(groups)
        strata = [self._strata(groups[name], rng) for name in names]
        supplies = [sum(self._supply(s) for s in game) for game in strata]
        chosen: dict[int, tuple[int, ...]] = {}
        for game, quota in zip(strata, allocate(cfg.batch_size, supplies), strict=True):
            shares = allocate(quota, [self._supply(s) for s in game])
            for stratum, share in zip(game, shares, strict=True):
                chosen.update(self._fill(stratum, share, rng))
        drawn = [entry for entry in self.entries if entry.serial in chosen]
        left = [entry for entry in self.entries if entry.serial not in chosen]
        discarded = len(left) if cfg.undrawn == "drop" else 0
        self.entries = [] if cfg.undrawn == "drop" else left
        batch = Batch([entry.episode for entry in drawn], [chosen[entry.serial] for entry in drawn])
        batch.metrics = self._metrics(batch, discarded)
        ages = [version - entry.version for entry in drawn]
        batch.metrics["bank/age_mean"] = float(np.mean(ages)) if ages else 0.0
        batch.metrics["bank/age_max"] = float(max(ages, default=0))
        return batch

    def _strata(self, members: list[BankEntry], rng: np.random.Generator) -> list[list[BankEntry]]:
        """``members`` ranked by reward and cut into ``strata`` groups, lowest first.

        Equal rewards are ordered at random: ranking them by age would make the strata of a
        bank whose rewards tie (zero-sum self-play) strata of age instead.
        """
        ties = rng.random(len(members))
        order = sorted(
            range(len(members)), key=lambda i: (episode_reward(members[i].episode), ties[i])
        )
        ranked = [members[i] for i in order]
        strata = self.config.strata
        cuts = [k * len(ranked) // strata for k in range(strata + 1)]
        return [ranked[lo:hi] for lo, hi in itertools.pairwise(cuts)]

    def _supply(self, members: Sequence[BankEntry]) -> int:
        return sum(self.units(entry.episode) for entry in members)

    def _fill(
        self, members: list[BankEntry], share: int, rng: np.random.Generator
    ) -> dict[int, tuple[int, ...]]:
        """Take episodes of ``members`` in a random order until ``share`` units are in."""
        chosen: dict[int, tuple[int, ...]] = {}
        if share <= 0:
            return chosen
        for position in rng.permutation(len(members)):
            entry = members[int(position)]
            turns = trainable_indices(entry.episode)
            count = self._covered(len(turns))
            if self.config.batch_unit == "turns":
                count = min(count, share)  # the boundary episode gives what fits
                share -= count
            else:
                share -= 1
            if count < len(turns):
                picked = rng.choice(len(turns), size=count, replace=False)
                turns = [turns[int(i)] for i in sorted(picked)]
            chosen[entry.serial] = tuple(turns)
            if share <= 0:
                break
        return chosen

    def _metrics(self, batch: Batch, discarded: int) -> dict[str, float]:
        """``bank/`` metrics of a draw; the counters since the previous draw restart at 0."""
        metrics = {f"bank/{name}": float(count) for name, count in self.counts.items()}
        self.counts = dict.fromkeys(self.counts, 0)
        turns = [(e.env_id, len(c)) for e, c in zip(batch.episodes, batch.selected, strict=True)]
        total_turns = sum(n for _, n in turns)
        metrics["bank/discarded"] = float(discarded)
        metrics["bank/drawn"] = float(len(batch.episodes))
        metrics["bank/batch_turns"] = float(total_turns)
        metrics["bank/episodes"] = float(len(self.entries))
        metrics["bank/units"] = float(self.size())
        for env_id in sorted({env for env, _ in turns}):
            mine = [n for env, n in turns if env == env_id]
            metrics[f"bank/turn_share/{env_id}"] = sum(mine) / max(total_turns, 1)
            metrics[f"bank/episode_share/{env_id}"] = len(mine) / len(turns)
        return metrics

    # -- checkpoints ---------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The bank's whole state as plain data (episodes included)."""
        return {
            "entries": [
                {"serial": e.serial, "version": e.version, "episode": dataclasses.asdict(e.episode)}
                for e in self.entries
            ],
            "next_serial": self.next_serial,
            "draws": self.draws,
            "counts": dict(self.counts),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.entries = [
            BankEntry(int(e["serial"]), int(e["version"]), episode_from_dict(e["episode"]))
            for e in state["entries"]
        ]
        self.next_serial = int(state["next_serial"])
        self.draws = int(state["draws"])
        self.counts = {name: int(state["counts"].get(name, 0)) for name in self.counts}


def episode_from_dict(data: Mapping[str, Any]) -> Episode:
    """The :class:`Episode` of ``dataclasses.asdict(episode)`` (tuples restored)."""
    values = dict(data)
    values["turns"] = [Turn(**turn) for turn in values["turns"]]
    for name in ("learner_seats", "returns", "final_rewards"):
        if values.get(name) is not None:
            values[name] = tuple(values[name])
    values["moves"] = tuple((int(seat), str(text)) for seat, text in values.get("moves", ()))
    return Episode(**values)


def fill_and_draw(
    bank: EpisodeBank,
    section: BankConfig,
    episodes: list[Episode],
    step: int,
    play: PlayRound,
    *,
    dropped: int,
    warn: bool = True,
) -> tuple[list[Episode], Batch]:
    """Bank step ``step``'s scored games, play more rounds until the bank is ready, draw.

    At most ``section.max_rounds`` rounds in all (the step's own is the first); a bank still
    short then draws from what it holds, with a warning (``warn``: this process logs).

    Args:
        bank: the episode bank.
        section: its section (``bank``).
        episodes: the step's scored games.
        step: the step (the version of everything it plays).
        play: plays and scores a further round.
        dropped: the games the step's first round dropped.
        warn: log the warning of a short bank.

    Returns:
        Every game played this step, and the batch drawn (``bank/rounds`` and
        ``train/dropped_games`` among its metrics).
    """
    bank.add(episodes, version=step)
    rounds = 1
    while not bank.ready(step) and rounds < section.max_rounds:
        more, lost = play(rounds)
        dropped += lost
        bank.add(more, version=step)
        episodes, rounds = [*episodes, *more], rounds + 1
    if not bank.ready(step) and warn:
        log.warning(
            "step %d: the episode bank holds %d of the %d %s wanted after %d rounds of "
            "games; drawing from what there is",
            step,
            bank.size(),
            section.needed,
            section.batch_unit,
            rounds,
        )
    batch = bank.draw(step)
    batch.metrics["bank/rounds"] = float(rounds)
    batch.metrics["train/dropped_games"] = float(dropped)
    return episodes, batch
