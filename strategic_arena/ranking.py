"""Adaptive match-making for a ranking: play next the games that most reduce its uncertainty.

A fixed ranking plays every pairing of N players in full (``round_robin``). ``strategic-arena
rank`` plays the same games -- the same keys, paired deals and seeds, up to a cap per pairing --
but only those that settle the ranking, in batches, reading the TrueSkill posterior the arena
already keeps (:mod:`strategic_arena.ratings`) after each:

1. Rate the run's stored games (TrueSkill, :func:`strategic_arena.ratings.rate`) and order the
   players by ``mu`` (then name).
2. For each two neighbours in that order, the posterior probability that their order is right:
   with independent Gaussian skills ``N(mu, sigma^2)`` (Herbrich, Minka and Graepel, "TrueSkill",
   NeurIPS 2006), ``P(skill_a > skill_b) = Phi((mu_a - mu_b) / sqrt(sigma_a^2 + sigma_b^2))``.
3. The ranking is *settled* when every neighbour pair's probability is at least the stated
   confidence (each adjacent order is right with that probability; the whole order then holds
   by transitivity).
4. Otherwise play the neighbour pair whose order is least certain -- the games that most reduce
   the ranking's uncertainty, as Chatbot Arena samples the pairs whose comparison is least known
   -- for the next batch of pairs of games (both seatings of each deal, the arena's paired
   deals), and go back to 1.
5. Stop when settled, when the budget of games is spent, or when the least certain pair has
   played its cap; each ends with its reason.

Everything is read from the store and TrueSkill's passes run in a seeded order, so the choice
of games is a function of the stored games: a run killed at any moment resumes where it stopped,
and the run is reproducible from its seed. The state is reported by ``report`` (``ranking`` in
``--json``) with the games played and their share of the full schedule (every pairing played to
its cap).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from strategic_arena.arena import runner
from strategic_arena.arena.endpoint import ModelOptions
from strategic_arena.arena.leases import DEFAULT_LEASE_S
from strategic_arena.arena.model_opponents import ModelOpponent
from strategic_arena.arena.records import StoredGame, StoredRun
from strategic_arena.arena.runner import Entrant, GameTask, round_robin
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable_line
from strategic_arena.games import get_spec
from strategic_arena.ratings import Outcome, PlayerRating, TrueSkillSettings, outcomes, rate

#: The run setting that makes a run a ranking (its settings for :func:`ranking_state`).
SETTING = "ranking"

#: TrueSkill's passes between batches: fewer than the report's, as they run after every batch.
PASSES = 4

#: Why a ranking stopped, or that it goes on.
Status = Literal["settled", "budget", "cap", "open"]


def order_probability(better: PlayerRating, worse: PlayerRating) -> float:
    """``P(skill_better > skill_worse)`` under the TrueSkill posterior (step 2)."""
    spread = math.sqrt(better.sigma**2 + worse.sigma**2)
    return 0.5 * math.erfc(-(better.mu - worse.mu) / (spread * math.sqrt(2.0)))


@dataclass(frozen=True)
class RankingState:
    """A ranking run's state, from its stored games.

    Attributes:
        env_id: the game.
        ranking: the players best first (by ``mu``), rated; unrated players last, by name.
        order_probabilities: for each neighbour pair, the probability its order is right.
        confidence: the probability every neighbour pair needs.
        games: stored scored games of the run.
        pair_games: scored games per pairing (names in alphabetical order).
        num_games: the cap of games per pairing.
        budget: the most games of the whole run.
        status: ``settled``, ``budget`` (spent), ``cap`` (the least certain pair is capped) or
            ``open``.
        next_pairing: the pairing to play next (``open`` only).
    """

    env_id: str
    ranking: tuple[PlayerRating, ...]
    order_probabilities: tuple[float, ...]
    confidence: float
    games: int
    pair_games: Mapping[tuple[str, str], int]
    num_games: int
    budget: int
    status: Status
    next_pairing: tuple[str, str] | None

    @property
    def full_schedule(self) -> int:
        """Games of the full schedule: every pairing played to its cap."""
        players = len(self.ranking)
        return players * (players - 1) // 2 * self.num_games

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``ranking`` in ``report --json``)."""
        return {
            "env_id": self.env_id,
            "ranking": [
                {"player": r.player, "mu": r.mu, "sigma": r.sigma, "matches": r.matches}
                for r in self.ranking
            ],
            "order_probabilities": list(self.order_probabilities),
            "confidence": self.confidence,
            "status": self.status,
            "games": self.games,
            "full_schedule": self.full_schedule,
            "share_of_full_schedule": self.games / self.full_schedule,
            "budget": self.budget,
            "next_pairing": list(self.next_pairing) if self.next_pairing else None,
        }


def _pairing(first: str, second: str) -> tuple[str, str]:
    return (first, second) if first <= second else (second, first)


def _unrated(name: str, settings: TrueSkillSettings) -> PlayerRating:
    return PlayerRating(name, settings.mu, settings.sigma, 0.0, 0, 0, 0, 0)


def state_of(
    setting: Mapping[str, Any],
    games: Sequence[StoredGame],
    matches: Sequence[Outcome],
    left: Mapping[tuple[str, str], int] | None = None,
) -> RankingState:
    """Steps 1-5 on some scored games of a ranking run (a pure function of them).

    Args:
        setting: the run's :data:`SETTING` (players, game, confidence, cap, budget).
        games: the scored games counted.
        matches: their rated matches (:func:`strategic_arena.ratings.outcomes`).
        left: pairs each pairing may still play (``None``: its cap minus its games, halved).
    """
    players: list[str] = list(setting["players"])
    settings = TrueSkillSettings(passes=PASSES)
    rated = {r.player: r for r in rate(matches, settings).ratings} if matches else {}
    ordered = sorted(
        (rated.get(name) or _unrated(name, settings) for name in players),
        key=lambda r: (-r.mu, r.player),
    )
    probabilities = tuple(order_probability(a, b) for a, b in itertools.pairwise(ordered))
    pair_games: dict[tuple[str, str], int] = defaultdict(int)
    for game in games:
        names = sorted(set(game.players))
        if len(names) == 2:
            pair_games[(names[0], names[1])] += 1
    cap, budget = int(setting["num_games"]), int(setting["budget"])
    confidence = float(setting["confidence"])
    status: Status = "open"
    next_pairing = None
    uncertain = sorted((p, index) for index, p in enumerate(probabilities) if p < confidence)
    if not uncertain:
        status = "settled"
    elif len(games) >= budget:
        status = "budget"
    else:
        _, index = uncertain[0]
        pairing = _pairing(ordered[index].player, ordered[index + 1].player)
        room = (cap - pair_games[pairing]) // 2 if left is None else left[pairing]
        status, next_pairing = ("open", pairing) if room > 0 else ("cap", None)
    return RankingState(
        env_id=str(setting["env_id"]),
        ranking=tuple(ordered),
        order_probabilities=probabilities,
        confidence=confidence,
        games=len(games),
        pair_games=dict(pair_games),
        num_games=cap,
        budget=budget,
        status=status,
        next_pairing=next_pairing,
    )


def ranking_state(store: ResultsStore, run: StoredRun) -> RankingState:
    """:func:`state_of` every scored game of ``run`` (``report``)."""
    return state_of(run.settings[SETTING], store.games(run.id), outcomes(store, [run.name]))


def ranking_tasks(
    entrants: Sequence[Entrant], env_id: str, num_games: int, seed: int
) -> list[GameTask]:
    """Every game a ranking may play: the round robin of ``entrants`` up to the cap per pairing.

    Raises:
        ValueError: a game the ranking cannot order players at (one seat, cooperative, or more
            than two sides), or fewer than two players.
    """
    spec = get_spec(env_id)
    if spec.num_players == 1 or spec.cooperative or len(set(spec.teams)) != 2:
        raise ValueError(
            f"rank orders players by who beats whom in two-sided games; {env_id} is not one"
        )
    if len(entrants) < 2:
        raise ValueError("rank needs at least two players")
    return round_robin(entrants, [env_id], num_games, seed)


def _pairs_by_pairing(
    tasks: Sequence[GameTask],
) -> dict[tuple[str, str], dict[int, list[GameTask]]]:
    grouped: dict[tuple[str, str], dict[int, list[GameTask]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for task in tasks:
        names = sorted({entrant.name for entrant in task.seats})
        grouped[(names[0], names[1])][task.index].append(task)
    return grouped


@dataclass(frozen=True)
class RankResult:
    """What :func:`rank` did: the final state and the games this call played."""

    state: RankingState
    played: int
    incomplete: int


async def rank_async(
    store: ResultsStore,
    run_name: str,
    tasks: Sequence[GameTask],
    *,
    seed: int,
    concurrency: int = 8,
    settings: Mapping[str, Any] | None = None,
    max_replays: int = 3,
    lease_s: float = DEFAULT_LEASE_S,
) -> RankResult:
    """Play run ``run_name``'s ranking batch by batch until it stops (steps 1-5).

    The schedule is replayed from the start on every call: batch ``k + 1`` is chosen from the
    games of batches ``1 .. k`` only, so a batch a kill cut short is finished before anything
    new is chosen, and the games played are a function of the seed and the outcomes (neither
    the moment of a kill nor ``concurrency`` changes them). A batch is the run's
    ``batch_pairs`` next pairs of the chosen pairing (fewer near the budget). A game a server
    failure stopped in this call is not replayed in it (the runner's rule): the call ends
    there, and the next one replays it and goes on; a game given up for good counts as played.
    """
    by_pairing = _pairs_by_pairing(tasks)
    run = next(r for r in store.runs() if r.name == run_name)
    setting = run.settings[SETTING]
    width = int(setting["batch_pairs"])
    scheduled: set[str] = set()  # the keys of the batches replayed so far
    tried: set[str] = set()
    played = incomplete = 0
    view = await asyncio.to_thread(_View.read, store, run, max_replays)
    while True:
        left = {
            pairing: sum(not any(t.key in scheduled for t in pair) for pair in pairs.values())
            for pairing, pairs in by_pairing.items()
        }
        state = state_of(setting, *view.counted(scheduled), left)
        if state.status != "open" or state.next_pairing is None:
            return RankResult(state, played, incomplete)
        room = max(1, (state.budget - state.games) // 2)
        batch = _next_pairs(by_pairing[state.next_pairing], scheduled, min(width, room))
        missing = [task for task in batch if view.playable(task.key)]
        if not missing:
            scheduled |= {task.key for task in batch}
            continue
        if any(task.key in tried for task in missing):  # waits for the next call's replay
            return RankResult(state, played, incomplete)
        summary = await runner.run_async(
            store,
            run_name,
            tasks,
            seed=seed,
            concurrency=concurrency,
            settings=settings,
            progress=False,
            max_replays=max_replays,
            lease_s=lease_s,
            only={task.key for task in missing},
        )
        played += summary.played
        incomplete += summary.incomplete
        tried |= {task.key for task in missing}
        view = await asyncio.to_thread(_View.read, store, run, max_replays)


@dataclass(frozen=True)
class _View:
    """The store's games of a ranking run, read once per batch."""

    games: tuple[StoredGame, ...]
    matches: tuple[Outcome, ...]
    scored: frozenset[str]
    tries: Mapping[str, int]
    max_replays: int

    @classmethod
    def read(cls, store: ResultsStore, run: StoredRun, max_replays: int) -> _View:
        games = tuple(store.games(run.id))
        scored = frozenset(game.game_key for game in games)
        matches = tuple(outcomes(store, [run.name]))
        return cls(games, matches, scored, store.incomplete_counts(run.id), max_replays)

    def counted(self, keys: set[str]) -> tuple[list[StoredGame], list[Outcome]]:
        """The scored games and rated matches among ``keys``."""
        games = [game for game in self.games if game.game_key in keys]
        matches = [match for match in self.matches if set(match.game_keys) <= keys]
        return games, matches

    def playable(self, key: str) -> bool:
        """Not stored, and not given up (fewer incomplete tries than ``1 + max_replays``)."""
        return key not in self.scored and self.tries.get(key, 0) <= self.max_replays


def _next_pairs(
    pairs: Mapping[int, Sequence[GameTask]], scheduled: set[str], width: int
) -> list[GameTask]:
    """The games of the first ``width`` pairs (by index) not scheduled yet (step 4)."""
    fresh = [index for index in sorted(pairs) if not any(t.key in scheduled for t in pairs[index])]
    return [task for index in fresh[:width] for task in pairs[index]]


def rank(
    store: ResultsStore, run_name: str, tasks: Sequence[GameTask], **kwargs: Any
) -> RankResult:
    """:func:`rank_async` for synchronous callers (one event loop for every batch)."""
    return asyncio.run(rank_async(store, run_name, tasks, **kwargs))


def player_entrants(
    specs: Sequence[str], env_id: str, api_key_env: str | None, seed: int | None
) -> list[Entrant]:
    """The ranked players: built-in opponents, and models behind endpoints after their preflight.

    A ``model:NAME@BASE_URL`` spec is asked with the default settings (answer style, prompts,
    sampling) and sent the key in ``api_key_env`` (``None``: no key).

    Raises:
        ValueError: a bad spec, or a player named twice.
        PreflightError: an endpoint that cannot serve the game (nothing is stored).
    """
    entrants = []
    for spec in specs:
        model = ModelOpponent.parse(spec)
        if model is None:
            entrants.append(Entrant.opponent(spec))
        else:
            options = ModelOptions(api_key_env=api_key_env)
            entrants.append(model.entrant(options, api_key_env, seed, env_id))
    names = [entrant.name for entrant in entrants]
    if len(set(names)) != len(names):
        raise ValueError(f"rank names a player twice: {', '.join(names)}")
    return entrants


@dataclass(frozen=True)
class RankSettings:
    """What a ranking is: its game, its confidence and its limits.

    Attributes:
        env_id: the game.
        confidence: the probability each neighbour pair's order needs (below 1).
        num_games: the cap of games per pairing (both seatings of each deal).
        budget: the most games of the whole run (``None``: the full schedule).
        batch_pairs: pairs of games per batch: more keep more games in flight, fewer stop
            closer to the answer (part of the schedule, so stored with the run).
    """

    env_id: str
    confidence: float = 0.95
    num_games: int = 100
    budget: int | None = None
    batch_pairs: int = 2

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(
                f"--confidence must be at least 0.5 and below 1, not {self.confidence:g}"
            )
        if self.num_games < 2:
            raise ValueError("--num-games must be at least 2 (a pair of games)")
        if self.budget is not None and self.budget < 2:
            raise ValueError("--budget must be at least 2 (a pair of games)")
        if self.batch_pairs < 1:
            raise ValueError("--batch-pairs must be at least 1")


def rank_players(
    db: str,
    specs: Sequence[str],
    ranking: RankSettings,
    *,
    seed: int | None = None,
    concurrency: int = 8,
    run_name: str | None = None,
    api_key_env: str | None = None,
    max_replays: int = 3,
    lease_s: float = DEFAULT_LEASE_S,
) -> tuple[str, int, RankResult]:
    """Rank the players of ``specs`` at ``ranking.env_id``, playing only what settles it.

    Returns:
        The run's name, its root seed and what this call did.

    Raises:
        ValueError: bad settings or specs; PreflightError: an endpoint that cannot play.
    """
    if concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    entrants = player_entrants(specs, ranking.env_id, api_key_env, seed)
    pairings = len(entrants) * (len(entrants) - 1) // 2
    budget = ranking.budget or pairings * ranking.num_games
    names = [entrant.name for entrant in entrants]
    settings: dict[str, Any] = {
        "candidates": names,
        "num_games": ranking.num_games,
        SETTING: {
            "players": names,
            "env_id": ranking.env_id,
            "confidence": ranking.confidence,
            "num_games": ranking.num_games,
            "budget": budget,
            "batch_pairs": ranking.batch_pairs,
        },
    }
    ranking_tasks(entrants, ranking.env_id, ranking.num_games, 0)  # refused before any store
    label = "secret" if seed is None else seed
    params = [[entrant.name, dict(entrant.params)] for entrant in entrants]
    digest = hashlib.sha256(json.dumps([settings, params, label], sort_keys=True).encode())
    name = run_name or f"rank-{ranking.env_id}-{digest.hexdigest()[:8]}"
    settings["max_replays"] = max_replays

    def make_tasks(root: int) -> list[GameTask]:
        return ranking_tasks(entrants, ranking.env_id, ranking.num_games, root)

    with ResultsStore(db) as store:
        root_seed, tasks = runner.prepare(store, name, seed, settings, make_tasks)
        result = rank(
            store,
            name,
            tasks,
            seed=root_seed,
            concurrency=concurrency,
            settings=settings,
            max_replays=max_replays,
            lease_s=lease_s,
        )
    return name, root_seed, result


def report_rows(store: ResultsStore, run_names: Sequence[str] | None) -> list[dict[str, Any]]:
    """The ``ranking`` entry of the report: each ranking run's state, JSON-ready."""
    return [
        {"run": run.name, **ranking_state(store, run).as_dict()}
        for run in store.runs()
        if SETTING in run.settings and (run_names is None or run.name in run_names)
    ]


def render(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's lines for its ``ranking`` rows."""
    lines: list[str] = []
    reasons = {
        "settled": "settled",
        "budget": "stopped: the budget of games is spent",
        "cap": "stopped: the least certain pair played its cap",
        "open": "not settled yet: rerun the same rank to go on",
    }
    for row in rows:
        lines += [
            "",
            f"== Ranking of {printable_line(row['run'])} at {row['env_id']}: "
            f"{reasons[row['status']]} after {row['games']} games, "
            f"{100 * row['share_of_full_schedule']:.0f}% of the full schedule "
            f"({row['full_schedule']}); each neighbour order needs P >= {row['confidence']:g}",
        ]
        probabilities = [*row["order_probabilities"], None]
        for place, (entry, p) in enumerate(zip(row["ranking"], probabilities, strict=True), 1):
            after = "" if p is None else f"   P(above the next) {p:.3f}"
            lines.append(
                f"{place}. {printable_line(entry['player'])}: mu {entry['mu']:.2f} ± "
                f"{entry['sigma']:.2f} ({entry['matches']} matches){after}"
            )
    return lines
