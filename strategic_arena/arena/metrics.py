"""Metrics over stored games: returns with confidence intervals, W/D/L, invalid answers, tokens.

Everything here is recomputed from the results store (:class:`ResultsStore`), never from a
run's memory, so a report can be rebuilt at any time and checked by anyone with the database.

One :class:`Summary` describes one player in one env against one opponent, in one seat or in
both (``seat=None``). Definitions:

* **Sample.** Each game gives the player one sample: its return in that seat, or, for the
  both-seats summary of a self-play game (the player in every seat), the mean of its seats'
  returns, so a self-play game counts once.
* **Mean return and 95% CI.** The sample mean and the half-width of Student's t interval,
  ``t(0.975, n-1) * s / sqrt(n)`` (``None`` below two games).
* **Win / draw / loss** (competitive games, not self-play): games, by the sign of the player's
  return (of its team's, in a team game): :func:`strategic_arena.arena.teams.player_result`,
  the one definition every table uses.
* **Normalized score**: ``100 * (mean - forfeit) / (optimum - forfeit)``, between two stated
  references: 0 is the mean return of a player that forfeits every game (its first answer
  invalid: ``-forfeit_stake``, -1 in every curated competitive game, 0 in Hanabi) and 100 the
  game's ``optimum`` from its :class:`~strategic_arena.games.GameSpec` (+1 at Tic-Tac-Toe and
  Connect Four, +2 at Kuhn, +13 chips at Leduc, Hanabi's best reachable score, 4 in both
  curated variants). Below 0 means worse than forfeiting at once (Leduc chips lost beyond the
  ante); :func:`normalization` lists the references.
* **MARSHAL's normalized score** (``marshal_normalized``): ``100 * (mean - worst) / (optimum -
  worst)`` with the game's fixed ``worst`` (-1, -2, -13 chips, 0). MARSHAL divides by the worst
  *observed* score; a fixed worst keeps scores comparable across runs. Where the worst return is
  below the forfeit's it puts a player that forfeits everything above zero (25% at Kuhn, 46% at
  Leduc), hence the score above; elsewhere the two agree.
* **MARSHAL's paper score** (``marshal_paper``, the report's ``paper %``): the normalization
  that reproduces MARSHAL's Table 3 from its appendix J raw returns (every cell of its six
  rows, tested), per seat: ``100 * (mean - worst[seat]) / (optimum[seat] - worst[seat])``
  with the references of :data:`MARSHAL_PAPER` -- the optimum is the best mean return the
  seat can get against the evaluation opponent (the seat's equilibrium value against the
  equilibrium at Kuhn, -1/18 and +1/18, and Leduc, -0.0856 and +0.0856; a win, +1, against
  MCTS; OpenSpiel's maximum score in Hanabi, 4 and 6) and the worst is the lowest mean return
  of that seat anywhere in MARSHAL's appendix J. The both-seats score is the mean of the two
  seat scores, as in the paper's main text. It exists only where the paper's references do
  (the poker games against ``nash``; any opponent elsewhere); ``None`` otherwise.
* **Game length**: decisions per game, every seat's (SPIRAL's table 11), over the summary's
  games.
* **Incomplete games** (a player's server failed after the backend's retries: see
  :mod:`strategic_arena.arena.match`) are in no summary; :func:`infrastructure` counts them.
* **Invalid answers** are the model's errors: every answer counts, retries included; the invalid
  rate is invalid answers over answers, broken down by error kind (``format``,
  ``illegal_action``, ``truncated``...); ``forfeits`` counts games the player lost by an invalid
  final answer. Infrastructure failures are apart: ``failed_requests`` counts the requests that
  failed and were retried (5xx, 429, timeouts...), ``infrastructure_errors`` the decisions that
  still failed (only in games stored before incomplete games existed).
* **Tokens and latency.** Percentiles (50/90/99) over the player's moves.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS
from strategic_arena.arena import sequential
from strategic_arena.arena.costs import Price, costs
from strategic_arena.arena.costs import render as render_costs
from strategic_arena.arena.debate_report import DebateAccuracy, debate_accuracy, render_debates
from strategic_arena.arena.prompt_versions import PromptMix, prompt_mixes
from strategic_arena.arena.records import MoveStats, StoredGame
from strategic_arena.arena.store import SCHEMA_VERSION, ResultsStore
from strategic_arena.arena.teams import player_result, seat_teams, team_returns, team_summaries
from strategic_arena.door.printable import printable_line
from strategic_arena.games import CURATED, GameSpec, get_spec
from strategic_arena.games.listing import PaperReference
from strategic_arena.games.tables import DerivedTable

#: Version of the JSON report layout (bumped on incompatible changes).
REPORT_SCHEMA_VERSION = 2

#: The opponent name of a self-play summary.
SELF = "self"


@dataclass(frozen=True)
class Percentiles:
    """50th, 90th and 99th percentiles (0 when there is nothing to measure)."""

    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles:
        """Percentiles of ``values``."""
        if not values:
            return cls()
        p50, p90, p99 = np.percentile(np.asarray(values, dtype=float), [50, 90, 99])
        return cls(float(p50), float(p90), float(p99))


@dataclass(frozen=True)
class Summary:
    """One player in one env against one opponent, in one seat (or both: ``seat=None``).

    See the module docstring for each definition.
    """

    player: str
    env_id: str
    opponent: str
    seat: int | None
    games: int
    mean_return: float
    ci95: float | None
    wins: int | None
    draws: int | None
    losses: int | None
    normalized: float
    marshal_normalized: float
    moves: int
    answers: int
    invalid_answers: int
    invalid_rate: float
    invalid_by_kind: dict[str, int]
    forfeits: int
    failed_requests: int
    infrastructure_errors: int
    prompt_tokens: Percentiles
    completion_tokens: Percentiles
    latency_s: Percentiles
    total_tokens: int
    marshal_paper: float | None = None
    game_length: float = 0.0
    returns: tuple[float, ...] = field(repr=False, default=())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (per-game returns left out)."""
        data = asdict(self)
        data.pop("returns")
        return data


def mean_ci(samples: Sequence[float]) -> tuple[float, float | None]:
    """Mean and the 95% Student-t half-width (``None`` for fewer than two samples)."""
    if not samples:
        return math.nan, None
    values = np.asarray(samples, dtype=float)
    mean = float(values.mean())
    if len(values) < 2:
        return mean, None
    from scipy.stats import t  # type: ignore[import-untyped]  # scipy comes with open_spiel

    half = float(t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return mean, half


def forfeit_return(spec: GameSpec) -> float:
    """The mean return of a player that forfeits every game (0% of the normalized score)."""
    return 0.0 if spec.cooperative else -spec.forfeit_stake


def normalized_score(spec: GameSpec, mean: float) -> float:
    """The normalized score in percent: 0 = forfeiting every game, 100 = the game's optimum."""
    forfeit = forfeit_return(spec)
    return 100.0 * (mean - forfeit) / (spec.optimum - forfeit)


def marshal_score(spec: GameSpec, mean: float) -> float:
    """MARSHAL's normalized score in percent, with the game's fixed worst and optimum."""
    return 100.0 * (mean - spec.worst) / (spec.optimum - spec.worst)


#: MARSHAL's references per game, measured from its appendix J (see :class:`PaperReference`
#: and docs/arena.md, where the paper's inconsistencies are listed): each spec's
#: ``listing.marshal_paper``.
MARSHAL_PAPER: Mapping[str, PaperReference] = DerivedTable(lambda spec: spec.listing.marshal_paper)


def marshal_paper_score(env_id: str, opponent: str, seat: int, mean: float) -> float | None:
    """MARSHAL's Table 3 score in percent of ``seat``'s mean return, or ``None`` if undefined.

    ``None`` when the paper gives no references for the game, or for that opponent (the poker
    references hold against the equilibrium only).
    """
    reference = MARSHAL_PAPER.get(env_id)
    if reference is None or seat >= len(reference.worst):
        return None
    if reference.opponents is not None and opponent not in reference.opponents:
        return None
    worst, optimum = reference.worst[seat], reference.optimum[seat]
    return 100.0 * (mean - worst) / (optimum - worst)


def normalization(env_ids: Iterable[str]) -> dict[str, dict[str, float]]:
    """The references of each env's scores: forfeit and optimum, and MARSHAL's worst."""
    return {
        env_id: {
            "forfeit": forfeit_return(get_spec(env_id)),
            "optimum": get_spec(env_id).optimum,
            "worst": get_spec(env_id).worst,
        }
        for env_id in env_ids
    }


@dataclass
class _Bucket:
    """Accumulates the samples of one summary."""

    returns: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    moves: int = 0
    answers: int = 0
    invalid: Counter[str] = field(default_factory=Counter)
    forfeits: int = 0
    failed_requests: int = 0
    infrastructure_errors: int = 0
    prompt_tokens: list[float] = field(default_factory=list)
    completion_tokens: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)


def _env_order(env_id: str) -> tuple[int, str]:
    order = list(CURATED)
    return (order.index(env_id) if env_id in order else len(order), env_id)


def _games(store: ResultsStore, run_ids: Sequence[int] | None, **kwargs: bool) -> list[StoredGame]:
    """The games of ``run_ids`` (every run when ``None``)."""
    if run_ids is None:
        return store.games(**kwargs)
    return [game for run_id in run_ids for game in store.games(run_id, **kwargs)]


def _run_ids(store: ResultsStore, run_names: Sequence[str] | None) -> list[int] | None:
    # A run named twice (``report --run a --run a``) must not count its games twice.
    return None if run_names is None else list(dict.fromkeys(map(store.run_id, run_names)))


def summarize(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[Summary]:
    """Every summary over the scored games of ``run_names`` (all runs when ``None``)."""
    run_ids = _run_ids(store, run_names)
    games = _games(store, run_ids)
    moves_by_game: dict[int, list[MoveStats]] = defaultdict(list)
    for move in store.move_stats(run_ids):
        moves_by_game[move.game_id].append(move)
    buckets: dict[tuple[str, str, str, int | None], _Bucket] = defaultdict(_Bucket)
    for game in games:
        spec = get_spec(game.env_id)
        players, returns = game.players, game.returns
        moves = moves_by_game[game.id]
        teams = seat_teams(game.env_id, len(players))
        by_team = team_returns(returns, teams)
        for name in dict.fromkeys(players):
            seats = [seat for seat, who in enumerate(players) if who == name]
            others = [seat for seat, who in enumerate(players) if who != name]
            opponent = SELF if not others else ",".join(dict.fromkeys(players[s] for s in others))
            for seat in [None, *seats]:
                mine = seats if seat is None else [seat]
                bucket = buckets[(name, game.env_id, opponent, seat)]
                value = float(np.mean([returns[s] for s in mine]))
                bucket.returns.append(value)
                # W/D/L by the sign of the player's (team's) return, where there is a rival
                # team: teammates are no rivals, and a self-play game has none.
                own_teams = {teams[s] for s in mine}
                rivals = [team for team in by_team if team not in own_teams]
                if others and rivals and not spec.cooperative:
                    bucket.outcomes[player_result(returns, teams, mine)] += 1
                bucket.forfeits += int(game.forfeited_by in mine)
                bucket.lengths.append(len(moves))
                for move in moves:
                    if move.seat not in mine:
                        continue
                    bucket.moves += 1
                    bucket.answers += move.attempts
                    for kind in move.errors:
                        if kind in INFRASTRUCTURE_ERROR_KINDS:
                            bucket.infrastructure_errors += 1
                        else:
                            bucket.invalid[kind] += 1
                    bucket.failed_requests += len(move.failures)
                    bucket.prompt_tokens.append(move.prompt_tokens)
                    bucket.completion_tokens.append(move.completion_tokens)
                    bucket.latency.append(move.latency_s)
    summaries = []
    for (name, env_id, opponent, seat), bucket in buckets.items():
        mean, half = mean_ci(bucket.returns)
        competitive = opponent != SELF and not get_spec(env_id).cooperative
        invalid = sum(bucket.invalid.values())
        summaries.append(
            Summary(
                player=name,
                env_id=env_id,
                opponent=opponent,
                seat=seat,
                games=len(bucket.returns),
                mean_return=mean,
                ci95=half,
                wins=bucket.outcomes["win"] if competitive else None,
                draws=bucket.outcomes["draw"] if competitive else None,
                losses=bucket.outcomes["loss"] if competitive else None,
                normalized=normalized_score(get_spec(env_id), mean),
                marshal_normalized=marshal_score(get_spec(env_id), mean),
                moves=bucket.moves,
                answers=bucket.answers,
                invalid_answers=invalid,
                invalid_rate=invalid / bucket.answers if bucket.answers else 0.0,
                invalid_by_kind=dict(sorted(bucket.invalid.items())),
                forfeits=bucket.forfeits,
                failed_requests=bucket.failed_requests,
                infrastructure_errors=bucket.infrastructure_errors,
                prompt_tokens=Percentiles.of(bucket.prompt_tokens),
                completion_tokens=Percentiles.of(bucket.completion_tokens),
                latency_s=Percentiles.of(bucket.latency),
                total_tokens=int(sum(bucket.prompt_tokens) + sum(bucket.completion_tokens)),
                marshal_paper=None
                if seat is None
                else marshal_paper_score(env_id, opponent, seat, mean),
                game_length=float(np.mean(bucket.lengths)),
                returns=tuple(bucket.returns),
            )
        )
    summaries = _with_paper_means(summaries)
    summaries.sort(
        key=lambda s: (
            _env_order(s.env_id),
            s.player,
            s.opponent != SELF,
            s.opponent,
            -1 if s.seat is None else s.seat,
        )
    )
    return summaries


def _with_paper_means(summaries: list[Summary]) -> list[Summary]:
    """Give each both-seats summary the mean of its seats' paper scores (MARSHAL's main text)."""
    by_seat: dict[tuple[str, str, str], list[float | None]] = defaultdict(list)
    for summary in summaries:
        if summary.seat is not None:
            key = (summary.player, summary.env_id, summary.opponent)
            by_seat[key].append(summary.marshal_paper)
    result = []
    for summary in summaries:
        scores = by_seat.get((summary.player, summary.env_id, summary.opponent), [])
        if summary.seat is None and scores and all(score is not None for score in scores):
            mean = float(np.mean([score for score in scores if score is not None]))
            summary = dataclasses.replace(summary, marshal_paper=mean)
        result.append(summary)
    return result


@dataclass(frozen=True)
class InfrastructureSummary:
    """The server and network failures of one player's endpoint: scored nowhere, shown apart.

    Attributes:
        player: whose server failed.
        incomplete_games: games stopped by a failure of this player's server (each try counts).
        unresolved: of their keys, those still without a scored game.
        given_up: of the unresolved keys, those ``eval`` will not replay again: they have had
            ``1 + max_replays`` tries (the run's stored ``max_replays``, else eval's default 3).
        failed_requests: requests that failed, in every game (most succeeded on a retry).
        timeouts: of those, requests cut at the deadline (``--timeout``).
        errors: decisions that still failed after the retries, by kind (``endpoint``,
            ``timeout``).
        examples: up to three error details.
    """

    player: str
    incomplete_games: int
    unresolved: int
    failed_requests: int
    errors: dict[str, int]
    examples: tuple[str, ...]
    given_up: int = 0
    timeouts: int = 0


#: ``eval``'s ``--max-replays`` default, for runs that did not store theirs.
DEFAULT_MAX_REPLAYS = 3


def infrastructure(
    store: ResultsStore, run_names: Sequence[str] | None = None
) -> list[InfrastructureSummary]:
    """Infrastructure failures per player over ``run_names`` (players with none left out)."""
    run_ids = _run_ids(store, run_names)
    games = {game.id: game for game in _games(store, run_ids, include_incomplete=True)}
    scored = {(game.run_id, game.game_key) for game in games.values() if game.scored}
    limits = {run.id: run.settings.get("max_replays", DEFAULT_MAX_REPLAYS) for run in store.runs()}
    failed: Counter[str] = Counter()
    timeouts: Counter[str] = Counter()
    last_move: dict[int, MoveStats] = {}
    for move in store.move_stats(run_ids):
        game = games.get(move.game_id)
        if game is None:
            continue
        failed[game.players[move.seat]] += len(move.failures)
        timeouts[game.players[move.seat]] += sum(f.startswith("timeout") for f in move.failures)
        last_move[move.game_id] = move  # rows come in ply order
    incomplete: Counter[str] = Counter()
    errors: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    unresolved: dict[str, Counter[tuple[int, str]]] = defaultdict(Counter)
    for game in games.values():
        if game.scored or game.id not in last_move:
            continue
        player = game.players[last_move[game.id].seat]
        incomplete[player] += 1
        detail = game.infrastructure_error or "endpoint: unknown"
        errors[player][detail.split(":", 1)[0]] += 1
        if len(examples[player]) < 3:
            examples[player].append(detail)
        if (game.run_id, game.game_key) not in scored:
            unresolved[player][(game.run_id, game.game_key)] += 1  # its tries
    names = sorted(name for name in {*failed, *incomplete} if failed[name] or incomplete[name])
    return [
        InfrastructureSummary(
            player=name,
            incomplete_games=incomplete[name],
            unresolved=len(unresolved[name]),
            failed_requests=failed[name],
            errors=dict(sorted(errors[name].items())),
            examples=tuple(examples[name]),
            given_up=sum(
                tries > limits.get(run_id, DEFAULT_MAX_REPLAYS)
                for (run_id, _), tries in unresolved[name].items()
            ),
            timeouts=timeouts[name],
        )
        for name in names
    ]


@dataclass(frozen=True)
class LeftOut:
    """A game no score counts: its key has only incomplete tries, stopped by ``player``'s server.

    Attributes:
        player: whose server stopped it (the seat of the failed, last decision).
        game: its latest incomplete try (env, seats and key of the game left out).
    """

    player: str
    game: StoredGame


def left_out(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[LeftOut]:
    """Every game key of ``run_names`` left out of the scores by a player's own server.

    One entry per player and key (a key two servers broke counts for both), in storage order;
    the leaderboard counts them per player, game and opponent (its coverage rule).
    """
    run_ids = _run_ids(store, run_names)
    games = _games(store, run_ids, include_incomplete=True)
    scored = {(game.run_id, game.game_key) for game in games if game.scored}
    last_seat = {move.game_id: move.seat for move in store.move_stats(run_ids)}  # ply order
    found: dict[tuple[str, int, str], StoredGame] = {}
    for game in games:
        if game.scored or game.id not in last_seat or (game.run_id, game.game_key) in scored:
            continue
        found[(game.players[last_seat[game.id]], game.run_id, game.game_key)] = game
    return [LeftOut(player, game) for (player, _, _), game in found.items()]


def candidates(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[str] | None:
    """The players a run evaluates (its ``candidates`` setting), or ``None`` if not recorded."""
    names: list[str] = []
    for run in store.runs():
        if run_names is not None and run.name not in run_names:
            continue
        names += run.settings.get("candidates", [])
    return list(dict.fromkeys(names)) or None


def report(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    prices: Mapping[str, Price] | None = None,
) -> dict[str, Any]:
    """The whole report as JSON-ready data (what ``strategic-arena report --json`` prints).

    ``prices`` (money per million tokens by player) price the ``costs`` entry
    (:mod:`strategic_arena.arena.costs`) and each sequential test's ``cost``.
    """
    summaries = summarize(store, run_names)
    spent = costs(store, run_names, prices)
    runs = [run for run in store.runs() if run_names is None or run.name in run_names]
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "store_schema_version": SCHEMA_VERSION,
        "runs": [asdict(run) for run in runs],
        "candidates": candidates(store, run_names),
        "players": {name: asdict(p) for name, p in store.players().items()},
        "normalization": normalization(sorted({s.env_id for s in summaries}, key=_env_order)),
        "summaries": [summary.as_dict() for summary in summaries],
        "infrastructure": [asdict(item) for item in infrastructure(store, run_names)],
        "teams": [
            asdict(team) for team in team_summaries(_games(store, _run_ids(store, run_names)))
        ],
        "prompt_mixes": [
            asdict(mix) for mix in prompt_mixes(_games(store, _run_ids(store, run_names)))
        ],
        # MAPoRL's debates: the majority's accuracy per turn (Table 7).
        "debates": [
            asdict(row) for row in debate_accuracy(store, _run_ids(store, run_names), mean_ci)
        ],
        # eval --until decided: each matchup's sequential test, from the stored games, with
        # what the model spent on its games.
        "sequential": sequential.with_costs(
            sequential.report_rows(store, run_names), spent["matchups"]
        ),
        "costs": spent,
    }


def _fmt_optional(value: float | None) -> str:
    """One decimal, or ``-`` where the score is not defined."""
    return "-" if value is None else f"{value:.1f}"


def _fmt_mean(mean: float, half: float | None) -> str:
    return f"{mean:+.3f}" + (f" ± {half:.3f}" if half is not None else "")


#: What the report's ``paper %`` is, and why it may leave 0-100 (printed under the tables).
PAPER_NOTE = (
    "paper %: MARSHAL's Table 3 score, normalised per seat against the paper's own references "
    "(0 = the lowest mean return of that seat in MARSHAL's appendix J, 100 = the seat's best "
    "mean return against the evaluation opponent, e.g. Kuhn's equilibrium value -1/18 or "
    "+1/18), both seats averaged; '-' where the paper gives no reference"
)

#: Why a ``paper %`` or ``norm %`` outside 0-100 is no error.
OUT_OF_RANGE_NOTE = (
    "scores outside 0-100 are not errors: paper % can exceed either end (a seat below every "
    "model the paper saw, or above its reference; at Kuhn and Leduc the references lie a "
    "fraction of a chip apart, so a few games of card luck move it far: read it with the "
    "mean's CI), and norm % is below 0 for a player that loses more than forfeiting at once "
    "would (Leduc chips lost beyond the ante)"
)


def _score_notes(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The legend of ``paper %``, and why a score leaves 0-100 when one shown does."""
    papers = [s.get("marshal_paper") for s in summaries]
    if all(score is None for score in papers):
        return []
    scores = [score for score in papers if score is not None]
    scores += [s["normalized"] for s in summaries]
    outside = any(not 0.0 <= score <= 100.0 for score in scores)
    return [PAPER_NOTE, *([OUT_OF_RANGE_NOTE] if outside else [])]


def render_text(data: dict[str, Any], *, all_players: bool = False) -> str:
    """A plain-text report of :func:`report`'s data: one table per env.

    Rows are the run's candidates (every player with ``all_players`` or when the runs record
    no candidates) against each opponent, every seat together, with the per-seat means beside
    (one column per seat of the game: ``seat 0``, ``seat 1``, ``seat 2``...).
    """
    wanted = None if all_players else data.get("candidates")
    rows, by_seat = _rows_by_env(data["summaries"], wanted)
    names = (
        ", ".join(f"{printable_line(run['name'])} (seed {run['seed']})" for run in data["runs"])
        or "none"
    )
    lines = [f"Runs: {names}"]
    if not rows:
        lines.append("No scored games yet.")
    # Columns as wide as the longest name: names are never cut.
    shown = [s for env_rows in rows.values() for s in env_rows]
    # Names came from endpoints (a model id) or the store: escaped before they are printed.
    width = max([24, *(len(printable_line(s["player"])) for s in shown)])
    op_width = max([24, *(len(printable_line(s["opponent"])) for s in shown)])
    for env_id, env_rows in rows.items():
        table = _EnvTable(env_id, data["normalization"][env_id], width, op_width)
        lines += table.lines(env_rows, by_seat)
    if rows:
        lines += [
            "",
            "invalid %: answers that were not a legal move, retries included; tok p50: median "
            "completion tokens per decision (a retried decision's answers summed); lat p50/p90 "
            "s: seconds per decision (median, 90th percentile)",
            *_score_notes(shown),
        ]
    lines += _rating_lines(data.get("ratings", {}), width)
    lines += render_debates([DebateAccuracy(**row) for row in data.get("debates", [])])
    lines += sequential.render(data.get("sequential", []))
    lines += render_costs(data.get("costs", {}))
    lines += _team_lines(data.get("teams", []))
    for mix in data.get("prompt_mixes", []):
        lines += [
            "",
            "WARNING: " + PromptMix(mix["player"], mix["env_id"], mix["versions"]).describe(),
        ]
    lines += _infrastructure_lines(data.get("infrastructure", []), wanted)
    return "\n".join(lines)


# A summary row's key among the per-seat ones: (player, env id, opponent).
_SeatKey = tuple[str, str, str]


def _rows_by_env(
    summaries: Sequence[Mapping[str, Any]], wanted: Collection[str] | None
) -> tuple[dict[str, list[Mapping[str, Any]]], dict[_SeatKey, dict[int, Mapping[str, Any]]]]:
    """The wanted players' every-seat summaries by env, and their per-seat ones by seat."""
    rows: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    by_seat: dict[_SeatKey, dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for s in summaries:
        if wanted is not None and s["player"] not in wanted:
            continue
        if s["seat"] is None:
            rows[s["env_id"]].append(s)
        else:
            by_seat[(s["player"], s["env_id"], s["opponent"])][s["seat"]] = s
    return rows, by_seat


@dataclass(frozen=True)
class _EnvTable:
    """One env's table of :func:`render_text`: its title, header and a line per summary."""

    env_id: str
    norm: Mapping[str, Any]
    width: int
    op_width: int

    def lines(
        self,
        env_rows: Sequence[Mapping[str, Any]],
        by_seat: Mapping[_SeatKey, Mapping[int, Mapping[str, Any]]],
    ) -> list[str]:
        """The table: a blank line, the title, the header, then each summary's line(s)."""
        seat_range = range(get_spec(self.env_id).num_players)
        norm = self.norm
        lines = [
            "",
            f"== {self.env_id} (norm: 0 = forfeit every game ({norm['forfeit']:+g}), 100 = "
            f"optimum ({norm['optimum']:+g}); MARSHAL: 0 = worst ({norm['worst']:+g}))",
            self._header(seat_range),
        ]
        for s in env_rows:
            seats = by_seat.get((s["player"], self.env_id, s["opponent"]), {})
            lines.append(self._row(s, seats, seat_range))
            if s["invalid_by_kind"]:
                kinds = ", ".join(f"{k} {v}" for k, v in s["invalid_by_kind"].items())
                lines.append(
                    f"{'':<2}invalid answers (the model's): {kinds}; forfeits {s['forfeits']}"
                )
        return lines

    def _header(self, seat_range: range) -> str:
        seat_titles = " ".join(f"{f'seat {i}':>7}" for i in seat_range)
        return (
            f"{'player':<{self.width}} {'opponent':<{self.op_width}} {'games':>5}  "
            f"{'mean return ± 95% CI':<22} {seat_titles}  {'W/D/L':<11} "
            f"{'norm %':>6} {'MARSHAL %':>9} {'paper %':>7} {'turns':>5} {'invalid %':>9} "
            f"{'tok p50':>7} {'lat p50/p90 s':>13}"
        )

    def _row(
        self, s: Mapping[str, Any], seats: Mapping[int, Mapping[str, Any]], seat_range: range
    ) -> str:
        means = [f"{seats[i]['mean_return']:+.3f}" if i in seats else "-" for i in seat_range]
        seat_means = " ".join(f"{mean:>7}" for mean in means)
        wdl = "-" if s["wins"] is None else f"{s['wins']}/{s['draws']}/{s['losses']}"
        opponent = "(self-play)" if s["opponent"] == SELF else printable_line(s["opponent"])
        lat = s["latency_s"]
        return (
            f"{printable_line(s['player']):<{self.width}} {opponent:<{self.op_width}} "
            f"{s['games']:>5}  "
            f"{_fmt_mean(s['mean_return'], s['ci95']):<22} {seat_means}  "
            f"{wdl:<11} {s['normalized']:>6.1f} "
            f"{s['marshal_normalized']:>9.1f} {_fmt_optional(s.get('marshal_paper')):>7} "
            f"{s.get('game_length', 0.0):>5.1f} {100 * s['invalid_rate']:>9.1f} "
            f"{s['completion_tokens']['p50']:>7.0f} {lat['p50']:>6.3f}/{lat['p90']:<6.3f}"
        )


def _rating_lines(ratings: Mapping[str, Mapping[str, Any]], width: int) -> list[str]:
    """The TrueSkill pools of :func:`render_text`: a title each, then a line per player."""
    lines: list[str] = []
    for scope, pool in ratings.items():
        lines += [
            "",
            f"== TrueSkill: {scope} ({pool['matches']} rated matches; ranked by mu - 3 sigma)",
        ]
        for rating in pool["ratings"]:
            lines.append(
                f"{printable_line(rating['player']):<{width}} mu {rating['mu']:6.2f} ± "
                f"{rating['sigma']:5.2f}  mu-3sigma {rating['conservative']:6.2f}  matches "
                f"{rating['matches']} (games {rating['wins'] + rating['draws'] + rating['losses']})"
                f"  W/D/L {rating['wins']}/{rating['draws']}/{rating['losses']}"
            )
    return lines


def _team_lines(team_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The team games of :func:`render_text`: a title, then a line per line-up."""
    if not team_rows:
        return []
    lines = ["", "== Teams (team games: each line-up against the other teams)"]
    for team in team_rows:
        lines.append(
            f"{team['env_id']}: {' + '.join(printable_line(p) for p in team['players'])} vs "
            f"{' + '.join(printable_line(p) for p in team['opponents'])}: {team['games']} games, "
            f"mean return {team['mean_return']:+.3f}, W/D/L "
            f"{team['wins']}/{team['draws']}/{team['losses']}"
        )
    return lines


def _infrastructure_lines(
    items: Sequence[Mapping[str, Any]], wanted: Collection[str] | None
) -> list[str]:
    """The servers' failures of :func:`render_text` (the wanted players'), with examples."""
    infra = [item for item in items if wanted is None or item["player"] in wanted]
    if not infra:
        return []
    lines = ["", "== Infrastructure failures (the servers', not the models': not scored)"]
    for item in infra:
        lines.append(_infrastructure_line(item))
        lines += [f"  e.g. {printable_line(example)}" for example in item["examples"]]
    return lines


def _infrastructure_line(item: Mapping[str, Any]) -> str:
    """One player's failed requests, and what became of the games they stopped."""
    kinds = ", ".join(f"{printable_line(k)} {v}" for k, v in item["errors"].items())
    stopped, unresolved = item["incomplete_games"], item["unresolved"]
    timeouts = item.get("timeouts", 0)
    text = (
        f"{printable_line(item['player'])}: {item['failed_requests']} failed requests"
        f"{f' ({timeouts} cut at the --timeout deadline)' if timeouts else ''}"
    )
    games = "game" if stopped == 1 else "games"
    if stopped and not unresolved:  # every stopped game was replayed and scored since
        text += (
            f"; {stopped} {games} stopped by them ({kinds}), all replayed since and scored: "
            "none is left out"
        )
    elif stopped:
        given_up = item.get("given_up", 0)
        replayable = unresolved - given_up
        text += (
            f"; {stopped} {games} stopped by them ({kinds}); {unresolved} still unscored "
            "and left out of every score"
        )
        if replayable:
            text += f": {replayable} will be replayed by rerunning the same eval command"
        if given_up:
            text += f"{',' if replayable else ':'} {given_up} given up (--max-replays reached)"
    return text
