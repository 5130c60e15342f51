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
* **Win / draw / loss** (competitive games, not self-play): the player's return against the
  best other seat's return.
* **Normalized score** (MARSHAL): ``100 * (mean - worst) / (optimum - worst)`` with the game's
  fixed ``worst`` and ``optimum`` from its :class:`~strategic_arena.games.GameSpec`
  (:func:`normalization` lists them: Tic-Tac-Toe and Connect Four -1/+1, Kuhn -2/+2, Leduc
  -13/+13 chips, Hanabi 0 to the best reachable score, 4 for both curated variants). MARSHAL
  divides by the worst *observed* score; a fixed worst keeps scores comparable across runs.
* **Invalid answers.** Every answer counts, retries included: the invalid rate is invalid
  answers over answers, broken down by error kind (``format``, ``illegal_action``, ``timeout``,
  ...); ``forfeits`` counts games the player lost by an invalid final answer, and
  ``failed_requests`` the requests that failed (5xx, 429, timeouts... and 4xx, which are
  not retried).
* **Tokens and latency.** Percentiles (50/90/99) over the player's moves.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from strategic_arena.arena.store import SCHEMA_VERSION, ResultsStore
from strategic_arena.games import CURATED, GameSpec, get_spec

#: Version of the JSON report layout (bumped on incompatible changes).
REPORT_SCHEMA_VERSION = 1

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
    moves: int
    answers: int
    invalid_answers: int
    invalid_rate: float
    invalid_by_kind: dict[str, int]
    forfeits: int
    failed_requests: int
    prompt_tokens: Percentiles
    completion_tokens: Percentiles
    latency_s: Percentiles
    total_tokens: int
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


def normalized_score(spec: GameSpec, mean: float) -> float:
    """MARSHAL's normalized score in percent, with the game's fixed worst and optimum."""
    return 100.0 * (mean - spec.worst) / (spec.optimum - spec.worst)


def normalization(env_ids: Iterable[str]) -> dict[str, dict[str, float]]:
    """The worst and optimum used for each env's normalized score."""
    return {
        env_id: {"worst": get_spec(env_id).worst, "optimum": get_spec(env_id).optimum}
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
    prompt_tokens: list[float] = field(default_factory=list)
    completion_tokens: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)


def _env_order(env_id: str) -> tuple[int, str]:
    order = list(CURATED)
    return (order.index(env_id) if env_id in order else len(order), env_id)


def summarize(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[Summary]:
    """Every summary over the games of ``run_names`` (all runs when ``None``)."""
    # A run named twice (``report --run a --run a``) must not count its games twice.
    run_ids = None if run_names is None else list(dict.fromkeys(map(store.run_id, run_names)))
    games = (
        store.games()
        if run_ids is None
        else [game for run_id in run_ids for game in store.games(run_id)]
    )
    moves_by_game: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for move in store.move_stats(run_ids):
        moves_by_game[move["game_id"]].append(move)
    buckets: dict[tuple[str, str, str, int | None], _Bucket] = defaultdict(_Bucket)
    for game in games:
        spec = get_spec(game["env_id"])
        players: list[str] = game["players"]
        returns: list[float] = game["returns"]
        moves = moves_by_game[game["id"]]
        for name in dict.fromkeys(players):
            seats = [seat for seat, who in enumerate(players) if who == name]
            others = [seat for seat, who in enumerate(players) if who != name]
            opponent = SELF if not others else ",".join(dict.fromkeys(players[s] for s in others))
            for seat in [None, *seats]:
                mine = seats if seat is None else [seat]
                bucket = buckets[(name, game["env_id"], opponent, seat)]
                value = float(np.mean([returns[s] for s in mine]))
                bucket.returns.append(value)
                if others and not spec.cooperative:
                    best_other = max(returns[s] for s in others)
                    outcome = "win" if value > best_other else "loss"
                    bucket.outcomes["draw" if value == best_other else outcome] += 1
                bucket.forfeits += int(game["forfeited_by"] in mine)
                for move in moves:
                    if move["seat"] not in mine:
                        continue
                    bucket.moves += 1
                    bucket.answers += move["attempts"]
                    bucket.invalid.update(move["errors"])
                    bucket.failed_requests += len(move["failures"])
                    bucket.prompt_tokens.append(move["prompt_tokens"])
                    bucket.completion_tokens.append(move["completion_tokens"])
                    bucket.latency.append(move["latency_s"])
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
                moves=bucket.moves,
                answers=bucket.answers,
                invalid_answers=invalid,
                invalid_rate=invalid / bucket.answers if bucket.answers else 0.0,
                invalid_by_kind=dict(sorted(bucket.invalid.items())),
                forfeits=bucket.forfeits,
                failed_requests=bucket.failed_requests,
                prompt_tokens=Percentiles.of(bucket.prompt_tokens),
                completion_tokens=Percentiles.of(bucket.completion_tokens),
                latency_s=Percentiles.of(bucket.latency),
                total_tokens=int(sum(bucket.prompt_tokens) + sum(bucket.completion_tokens)),
                returns=tuple(bucket.returns),
            )
        )
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


def candidates(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[str] | None:
    """The players a run evaluates (its ``candidates`` setting), or ``None`` if not recorded."""
    names: list[str] = []
    for run in store.runs():
        if run_names is not None and run["name"] not in run_names:
            continue
        names += run["settings"].get("candidates", [])
    return list(dict.fromkeys(names)) or None


def report(store: ResultsStore, run_names: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole report as JSON-ready data (what ``strategic-arena report --json`` prints)."""
    summaries = summarize(store, run_names)
    runs = [run for run in store.runs() if run_names is None or run["name"] in run_names]
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "store_schema_version": SCHEMA_VERSION,
        "runs": runs,
        "candidates": candidates(store, run_names),
        "players": store.players(),
        "normalization": normalization(sorted({s.env_id for s in summaries}, key=_env_order)),
        "summaries": [summary.as_dict() for summary in summaries],
    }


def _fmt_mean(mean: float, half: float | None) -> str:
    return f"{mean:+.3f}" + (f" ± {half:.3f}" if half is not None else "")


def render_text(data: dict[str, Any], *, all_players: bool = False) -> str:
    """A plain-text report of :func:`report`'s data: one table per env.

    Rows are the run's candidates (every player with ``all_players`` or when the runs record
    no candidates) against each opponent, both seats together, with the per-seat means beside.
    """
    wanted = None if all_players else data.get("candidates")
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_seat: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    for s in data["summaries"]:
        if wanted is not None and s["player"] not in wanted:
            continue
        if s["seat"] is None:
            rows[s["env_id"]].append(s)
        else:
            by_seat[(s["player"], s["env_id"], s["opponent"])][s["seat"]] = s
    names = ", ".join(run["name"] for run in data["runs"]) or "none"
    lines = [f"Runs: {names}"]
    if not rows:
        lines.append("No games stored yet.")
    header = (
        f"{'player':<24} {'opponent':<24} {'games':>5}  {'mean return ± 95% CI':<22}"
        f" {'seat 0':>7} {'seat 1':>7}  {'W/D/L':<11} {'norm %':>6} {'invalid %':>9}"
        f" {'tok p50':>7} {'lat p50/p90 s':>13}"
    )
    for env_id, env_rows in rows.items():
        norm = data["normalization"][env_id]
        lines += [
            "",
            f"== {env_id} (normalized: worst {norm['worst']:g}, optimum {norm['optimum']:g})",
            header,
        ]
        for s in env_rows:
            seats = by_seat[(s["player"], env_id, s["opponent"])]
            seat_means = [f"{seats[i]['mean_return']:+.3f}" if i in seats else "-" for i in (0, 1)]
            wdl = "-" if s["wins"] is None else f"{s['wins']}/{s['draws']}/{s['losses']}"
            opponent = "(self-play)" if s["opponent"] == SELF else s["opponent"]
            lat = s["latency_s"]
            lines.append(
                f"{s['player'][:24]:<24} {opponent[:24]:<24} {s['games']:>5}  "
                f"{_fmt_mean(s['mean_return'], s['ci95']):<22} {seat_means[0]:>7} "
                f"{seat_means[1]:>7}  {wdl:<11} {s['normalized']:>6.1f} "
                f"{100 * s['invalid_rate']:>9.1f} {s['completion_tokens']['p50']:>7.0f} "
                f"{lat['p50']:>6.3f}/{lat['p90']:<6.3f}"
            )
            if s["invalid_by_kind"] or s["failed_requests"]:
                kinds = ", ".join(f"{k} {v}" for k, v in s["invalid_by_kind"].items()) or "none"
                lines.append(
                    f"{'':<26}invalid answers: {kinds}; forfeits {s['forfeits']}; "
                    f"failed requests {s['failed_requests']}"
                )
    return "\n".join(lines)
