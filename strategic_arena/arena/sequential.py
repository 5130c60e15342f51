"""Sequential tests of stored games: is the evaluated model stronger than each opponent?

``eval --until decided`` (:mod:`strategic_arena.arena.sequential_run`) plays each matchup -- the
evaluated model against one opponent at one game -- pair by pair until an SPRT
(:mod:`strategic_arena.arena.sprt`) decides it or a cap of games is reached. This module reads a
test's state from the stored games alone, so ``eval`` (between its batches of games), a resumed
``eval`` after a crash and ``report`` all see the same decision.

What is tested. Game ``i`` of a matchup is played on the same deal in both seatings (the runner's
paired deals); the two games are a *pair*. A game scores 1 for the model when its (team's)
return is above the opponent's, 1/2 when equal, 0 below (in the zero-sum games here: a win, a
draw, a loss; in a general-sum game: which side gained more). The pair's score is the mean of
its two games, and the test is the GSPRT on those pair scores, pentanomial model.

The walk (:func:`decide`), the same for every reader:

1. Pairs are taken in index order, 0, 1, 2..., never in the order they were stored: the order
   games finish in (concurrency, other workers, a kill) cannot change the decision.
2. A pair whose two games are scored counts. A pair with a game given up for good (incomplete
   after ``1 + max_replays`` tries: a server failure no score counts) is left out, as every
   score leaves that game out. Any other pair -- a game not stored yet, or stopped and still to
   be replayed -- ends the walk: the test waits for it.
3. After each counted pair the LLR is computed; the first pair at which it reaches a bound
   decides the test. Pairs stored beyond it (played while the decision was not known yet)
   stay in the store and the report's tables, but not in the test.
4. A walk that passes the cap's last pair undecided ends the test as undecided at the cap.

A game the store does not hold is never evidence: the decision is a function of the stored
games only, so a run killed at any moment resumes to the same decision.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from strategic_arena.arena.option_defaults import DEFAULT_CAP as DEFAULT_CAP
from strategic_arena.arena.records import StoredGame, StoredRun
from strategic_arena.arena.sprt import (
    Sprt,
    first_crossing,
    game_score,
    logistic_elo,
    pair_category,
)
from strategic_arena.arena.store import ResultsStore
from strategic_arena.arena.teams import seat_teams, team_returns
from strategic_arena.door.printable import printable_line
from strategic_arena.games import get_spec

#: The run setting that holds a sequential run's test (:meth:`Sprt.as_dict`).
SETTING = "sequential"

#: Where a test stands: H1 or H0 accepted, undecided at the cap, or still to be played.
Status = Literal["H1", "H0", "cap", "open"]

#: A pair left out of the test (one of its games was given up).
SKIPPED = -1

#: The pentanomial categories' names, in order (the model's score: 0, 1/4, 1/2, 3/4, 1).
PAIR_NAMES = ("LL", "LD", "DD/WL", "WD", "WW")


def untestable(env_id: str) -> str | None:
    """Why ``env_id`` cannot be tested one player against one opponent (``None``: it can)."""
    spec = get_spec(env_id)
    if spec.num_players == 1:
        return f"{env_id} has one seat (no opponent)"
    if spec.cooperative:
        return f"{env_id} is cooperative (partners, not opponents)"
    sides = len(set(spec.teams))
    if sides != 2:
        return f"{env_id} has {sides} sides"
    return None


def check_testable(env_ids: Iterable[str]) -> None:
    """Refuse games a sequential test cannot compare two players on, in one line.

    Raises:
        ValueError: a game with one seat, cooperative, or with more than two sides.
    """
    reasons = [reason for env_id in env_ids if (reason := untestable(env_id)) is not None]
    if reasons:
        raise ValueError(
            "--until decided tests whether the model's return beats one opponent's on paired "
            f"deals, so it needs games of two sides: {'; '.join(reasons)}; choose --envs among "
            "the two-sided games (tic_tac_toe-v0, connect_four-v0, kuhn_poker-v0, "
            "leduc_holdem-v0...)"
        )


@dataclass(frozen=True)
class Matchup:
    """One test: the evaluated model against one opponent at one game."""

    env_id: str
    candidate: str
    opponent: str


@dataclass(frozen=True)
class MatchupTest:
    """Where one matchup's test stands, from the stored games (:func:`decide`).

    Attributes:
        matchup: the model, the opponent and the game.
        sprt: the test's hypotheses and error rates.
        status: ``H1`` or ``H0`` accepted, ``cap`` (undecided after the cap's last pair), or
            ``open`` (the test needs pairs not stored yet).
        llr: the log-likelihood ratio at the decision, or after the last counted pair.
        pairs: the pairs the test counted (up to its decision).
        counts: the counted pairs by score: LL, LD, DD or WL, WD, WW (the model's results).
        skipped: pairs left out before the decision (a game given up for good).
        stored_games: the matchup's scored games in the store (the test's and any beyond).
        cap_pairs: the most pairs the test may take.
        next_pair: the index of the first pair an open test waits for (``None`` otherwise).
    """

    matchup: Matchup
    sprt: Sprt
    status: Status
    llr: float
    pairs: int
    counts: tuple[int, ...]
    skipped: int
    stored_games: int
    cap_pairs: int
    next_pair: int | None

    @property
    def games(self) -> int:
        """The games the test counted: two per pair."""
        return 2 * self.pairs

    @property
    def score(self) -> float | None:
        """The model's mean score over the counted pairs (``None`` before the first)."""
        if not self.pairs:
            return None
        return sum(count * k / 4 for k, count in enumerate(self.counts)) / self.pairs

    @property
    def elo(self) -> float | None:
        """The logistic Elo difference of :attr:`score` (``None`` at 0, 1 or no pairs)."""
        return None if self.score is None else logistic_elo(self.score)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (what ``report --json`` lists under ``sequential``)."""
        return {
            **asdict(self.matchup),
            "test": self.sprt.as_dict(),
            "status": self.status,
            "decision": self.status if self.status in ("H0", "H1") else None,
            "llr": self.llr,
            "lower": self.sprt.lower,
            "upper": self.sprt.upper,
            "games": self.games,
            "pairs": self.pairs,
            "pentanomial": list(self.counts),
            "skipped_pairs": self.skipped,
            "stored_games": self.stored_games,
            "cap_games": 2 * self.cap_pairs,
            "score": self.score,
            "elo": self.elo,
        }


def candidate_score(game: StoredGame, candidate: str) -> float:
    """The model's score in one game: 1, 1/2 or 0 as its side's return beats the other's."""
    teams = seat_teams(game.env_id, len(game.players))
    by_team = team_returns(game.returns, teams)
    mine = {teams[seat] for seat, name in enumerate(game.players) if name == candidate}
    own = [value for team, value in by_team.items() if team in mine]
    other = [value for team, value in by_team.items() if team not in mine]
    return game_score(sum(own) / len(own), sum(other) / len(other))


def game_index(game_key: str) -> int:
    """A game's pair index: the last part of its key (``env/seat0/seat1/index``)."""
    return int(game_key.rsplit("/", 1)[1])


def matchup_of(game: StoredGame, candidate: str) -> Matchup | None:
    """The matchup of a stored game, ``None`` when the model is not in it or plays itself."""
    if candidate not in game.players:
        return None
    others = list(dict.fromkeys(name for name in game.players if name != candidate))
    if len(others) != 1:
        return None
    return Matchup(game.env_id, candidate, others[0])


def pair_outcomes(
    games: Iterable[StoredGame], candidate: str, given_up: Iterable[str]
) -> tuple[dict[Matchup, dict[int, int]], dict[Matchup, int]]:
    """Each matchup's complete pairs by index (a category, or :data:`SKIPPED`) (steps 1-2).

    Args:
        games: a run's stored games, incomplete ones included.
        candidate: the evaluated model.
        given_up: keys left incomplete for good.

    Returns:
        The outcome of every complete or skipped pair per matchup, and each matchup's count of
        scored games.
    """
    games = list(games)
    # A key given up and scored since (a later call with a larger --max-replays) counts.
    lost = set(given_up) - {game.game_key for game in games if game.scored}
    scores: dict[Matchup, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    skipped: dict[Matchup, set[int]] = defaultdict(set)
    stored: dict[Matchup, int] = defaultdict(int)
    for game in games:
        matchup = matchup_of(game, candidate)
        if matchup is None:
            continue
        index = game_index(game.game_key)
        if game.scored:
            scores[matchup][index][game.game_key] = candidate_score(game, candidate)
            stored[matchup] += 1
        elif game.game_key in lost:
            skipped[matchup].add(index)
    outcomes: dict[Matchup, dict[int, int]] = defaultdict(dict)
    for matchup, pairs in scores.items():
        for index, by_key in pairs.items():
            if len(by_key) == 2:
                outcomes[matchup][index] = pair_category(*by_key.values())
    for matchup, indices in skipped.items():
        for index in indices:
            outcomes[matchup][index] = SKIPPED
    return dict(outcomes), dict(stored)


def decide(
    matchup: Matchup,
    outcomes: Mapping[int, int],
    sprt: Sprt,
    cap_pairs: int,
    stored_games: int = 0,
) -> MatchupTest:
    """The test of one matchup from its pairs' outcomes (steps 1-4 of the module docstring).

    Args:
        matchup: the model, opponent and game.
        outcomes: the pentanomial category (or :data:`SKIPPED`) of each complete pair by index.
        sprt: the test.
        cap_pairs: the most pairs the test may take (indices ``0 .. cap_pairs - 1``).
        stored_games: the matchup's scored games (reported as they are).
    """
    counted: list[int] = []
    skipped = 0
    next_pair: int | None = None
    for index in range(cap_pairs):
        outcome = outcomes.get(index)
        if outcome is None:
            next_pair = index
            break
        if outcome == SKIPPED:
            skipped += 1
        else:
            counted.append(outcome)
    taken, values = first_crossing(sprt, counted)
    status: Status = "open" if next_pair is not None else "cap"
    if taken is not None:
        counted = counted[:taken]
        decision = sprt.decision(float(values[taken - 1]))
        assert decision is not None
        status, next_pair = decision, None
        # Skipped pairs after the decision are not the test's.
        skipped = _skipped_before(outcomes, taken)
    counts = tuple(counted.count(k) for k in range(5))
    return MatchupTest(
        matchup=matchup,
        sprt=sprt,
        status=status,
        llr=float(values[len(counted) - 1]) if counted else 0.0,
        pairs=len(counted),
        counts=counts,
        skipped=skipped,
        stored_games=stored_games,
        cap_pairs=cap_pairs,
        next_pair=next_pair,
    )


def _skipped_before(outcomes: Mapping[int, int], taken: int) -> int:
    """Skipped pairs met before the ``taken``-th counted pair."""
    skipped = seen = 0
    for index in sorted(outcomes):
        if seen == taken:
            break
        if outcomes[index] == SKIPPED:
            skipped += 1
        else:
            seen += 1
    return skipped


def run_test(run: StoredRun) -> Sprt | None:
    """The sequential test a run was started with (``None``: a run of fixed size)."""
    stored = run.settings.get(SETTING)
    return None if stored is None else Sprt(**stored)


def cap_pairs(num_games: int) -> int:
    """Pairs in a cap of ``num_games`` games (rounded up, as the runner rounds its seatings)."""
    return -(-num_games // 2)


def stored_tests(store: ResultsStore, run: StoredRun) -> list[MatchupTest]:
    """Every matchup's test of a sequential run, from its stored games (``report``).

    A matchup with no stored game yet is not listed.
    """
    sprt = run_test(run)
    if sprt is None:
        return []
    candidate = str(run.settings["candidates"][0])
    max_replays = int(run.settings.get("max_replays", 3))
    tries = store.incomplete_counts(run.id)
    given_up = [key for key, count in tries.items() if count > max_replays]
    games = store.games(run.id, include_incomplete=True)
    outcomes, stored = pair_outcomes(games, candidate, given_up)
    pairs = cap_pairs(int(run.settings["num_games"]))
    return [
        decide(matchup, outcomes.get(matchup, {}), sprt, pairs, stored.get(matchup, 0))
        for matchup in sorted(stored, key=lambda m: (m.env_id, m.opponent))
    ]


def report_rows(store: ResultsStore, run_names: Sequence[str] | None) -> list[dict[str, Any]]:
    """The ``sequential`` entry of the report: each sequential run's tests, JSON-ready."""
    rows = []
    for run in store.runs():
        if run_names is not None and run.name not in run_names:
            continue
        rows += [{"run": run.name, **test.as_dict()} for test in stored_tests(store, run)]
    return rows


def with_costs(
    rows: Sequence[dict[str, Any]], matchups: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``rows`` with the model's ``cost`` in each test's matchup: its tokens and money.

    Over every stored game of the matchup: those beyond the test and incomplete ones included.
    """
    spent = {(c["run"], c["player"], c["env_id"], c["opponent"]): c for c in matchups}
    fields = ("prompt_tokens", "completion_tokens", "money")
    joined = []
    for row in rows:
        cost = spent.get((row["run"], row["candidate"], row["env_id"], row["opponent"]))
        joined.append({**row, "cost": None if cost is None else {k: cost[k] for k in fields}})
    return joined


def describe(row: Mapping[str, Any]) -> str:
    """One line of a test's state, from :meth:`MatchupTest.as_dict` (eval's summary, report)."""
    test = row["test"]
    games = f"{row['games']} games ({row['pairs']} pairs)"
    if row["status"] == "H1":
        what = f"H1 accepted (Elo {test['elo1']:+g} rather than {test['elo0']:+g}) after {games}"
    elif row["status"] == "H0":
        what = f"H0 accepted (Elo {test['elo0']:+g} rather than {test['elo1']:+g}) after {games}"
    elif row["status"] == "cap":
        what = f"undecided at the cap of {row['cap_games']} games, after {games}"
    else:
        what = f"not decided yet after {games}: rerun the same eval to go on"
    counts = ", ".join(
        f"{name} {n}" for name, n in zip(PAIR_NAMES, row["pentanomial"], strict=True)
    )
    elo = row["elo"]
    estimate = "" if row["score"] is None else f"; score {row['score']:.3f}"
    if row["score"] is not None:
        estimate += (
            f" (Elo {round(elo):+d})" if elo is not None else " (Elo beyond any finite value)"
        )
    extra = row["stored_games"] - row["games"]
    parts = [
        f"{row['env_id']}: {printable_line(row['candidate'])} vs "
        f"{printable_line(row['opponent'])}: {what}; LLR {row['llr']:.2f} in "
        f"[{row['lower']:.2f}, {row['upper']:.2f}]; pairs {counts}{estimate}",
        f"; {row['skipped_pairs']} pairs left out (a game given up)"
        if row["skipped_pairs"]
        else "",
        f"; {extra} stored games beyond the test" if extra > 0 else "",
        _cost_text(row.get("cost")),
    ]
    return "".join(parts)


def _cost_text(cost: Mapping[str, Any] | None) -> str:
    """``; cost P + C tokens (money M)`` of a test's matchup, empty when it cost no token."""
    if not cost:
        return ""
    money = "" if cost["money"] is None else f", money {cost['money']:.4f}"
    tokens = f"{cost['prompt_tokens']} prompt + {cost['completion_tokens']} completion tokens"
    return f"; cost {tokens}{money}"


def render(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The report's lines for its ``sequential`` rows (nothing when there are none)."""
    lines: list[str] = []
    run = None
    for row in rows:
        if row["run"] != run:
            run, test = row["run"], row["test"]
            lines += [
                "",
                f"== Sequential tests of {printable_line(run)} (SPRT on game pairs, "
                f"{test['elo_model']} Elo, H0 {test['elo0']:+g}, H1 {test['elo1']:+g}, alpha "
                f"{test['alpha']:g}, beta {test['beta']:g}; at most {row['cap_games']} games each)",
            ]
        lines.append(describe(row))
    return lines
