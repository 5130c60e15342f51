"""The leaderboard as data: one JSON-ready dict (``leaderboard.json``) that the pages render.

:func:`build` reads a results store and returns the whole leaderboard; the markdown and HTML
renderers take only this dict, so the three published files always say the same thing and
anyone can re-render the pages from the JSON. The layout is described by
``schema.json`` next to this module (:func:`schema`); :data:`SCHEMA_VERSION` is bumped on any
incompatible change.

Contents, per env:

* **competitive envs**: a row per player, ranked by TrueSkill's conservative score
  (:mod:`strategic_arena.ratings`), with its games, W/D/L, mean return against each opponent
  (95% CI), normalized score over all its games there (MARSHAL's score with the env's fixed
  worst and optimum, :func:`~strategic_arena.arena.metrics.marshal_score`; the arena report
  also shows the forfeit-referenced score) and invalid-answer rate;
* **cooperative envs** (Hanabi): ranked by mean self-play score, then by mean score with the
  partner bot (:func:`strategic_arena.ratings.cooperative_standings`), not by TrueSkill;

**Models and baselines.** A baseline is a built-in solver or bot (a player whose kind is an
opponent kind of ``opponents.registry``); every other player is a model. Rows and players carry
``baseline``, and ranks count within each group: baselines are reference points, and ``random``
having beaten a forfeiting model must not place it above every model.

A player whose server failures left more than ``max_left_out`` of its games unscored
(incomplete and given up, or still to replay) is shown but not ranked (``rank`` ``None``):
failing on purpose in lost positions would otherwise lift it. The rule applies per env and
opponent, per env and overall (:mod:`.coverage`), and a row withheld by it says why
(``unranked_reason``). ``coverage`` publishes, for every player with such games, how many were
scored and how many left out (each env's ``coverage`` the same there, with the opponents).

then an ``overall`` table (one TrueSkill pool over every competitive game, normalized score per
env), every player's public parameters, a few invalid answers per player and env as the model
wrote them (the pages escape them), and the provenance: runs with their seeds and settings and
a digest of the games, so a rerun can be checked game for game, with the command that
reproduces each run (:mod:`.reproduce`); the page's title and description; and the ``grades`` that
``strategic-arena grade`` stored (move grades per player, game and opponent; poker strategies'
exploitability), empty lists when the database was never graded (``docs/grading.md``); only
when there are team games, ``teams`` (each line-up's results against the other teams,
:func:`strategic_arena.arena.teams.team_summaries`); and, only when some player's games in
one env read different prompt versions (:mod:`strategic_arena.arena.prompt_versions`),
``prompt_mixes``, which the pages show as a warning above everything else.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from opponents.registry import KINDS
from strategic_arena import __version__
from strategic_arena.arena.costs import Price, costs
from strategic_arena.arena.metrics import (
    SELF,
    Summary,
    left_out,
    marshal_score,
    mean_ci,
    summarize,
)
from strategic_arena.arena.prompt_versions import prompt_mixes
from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.store import SCHEMA_VERSION as STORE_SCHEMA_VERSION
from strategic_arena.arena.store import ResultsStore
from strategic_arena.arena.teams import team_summaries
from strategic_arena.door import read_json
from strategic_arena.games import CURATED, get_spec
from strategic_arena.grading.report import stored_grades
from strategic_arena.leaderboard import reproduce
from strategic_arena.leaderboard._transfer import transfer_data
from strategic_arena.leaderboard.coverage import Coverage
from strategic_arena.ratings import (
    OVERALL,
    PlayerRating,
    RatingTable,
    Score,
    TrueSkillSettings,
    cooperative_standings,
    has_chance,
    rating_tables,
)

#: Version of the ``leaderboard.json`` layout (2: ``grades`` added; 3: ``coverage``; 4: coverage
#: per game and opponent, ``unranked_reason`` on every ranked row; 5: ``page``, ``baseline`` rows
#: ranked apart from the models, a reproduce ``command`` per run).
SCHEMA_VERSION = 5

#: Share of a player's games that its own server failures may leave unscored before the
#: leaderboard refuses to rank it (its rows are still shown).
MAX_LEFT_OUT = 0.05

#: The player kind whose players are the reference partners of cooperative games.
PARTNER_BOT_KIND = "hanabi_bot"

#: Invalid answers kept per player and env, and the characters kept of each (the page shows
#: the first lines and expands to the rest).
SAMPLES_PER_PLAYER = 3
RESPONSE_LIMIT = 2000

#: The pages' title when ``publish`` is given none.
DEFAULT_TITLE = "Leaderboards"

#: Decimal places of published floats (keeps the files stable and readable).
DIGITS = 4


@functools.cache
def schema() -> dict[str, Any]:
    """The JSON schema of ``leaderboard.json`` (draft 2020-12), shipped with the package."""
    loaded: dict[str, Any] = read_json(Path(__file__).with_name("schema.json"), "package")
    return loaded


def _number(value: float | None) -> float | None:
    """``value`` rounded for publication; ``None`` for missing or non-finite values."""
    if value is None or not math.isfinite(value):
        return None
    rounded = round(float(value), DIGITS)
    return 0.0 if rounded == 0 else rounded  # no "-0.0" in the files


def _rounded(value: Any) -> Any:
    """``value`` with every float rounded by :func:`_number` (dicts and lists walked)."""
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    if isinstance(value, float):
        return _number(value)
    return value


def _grades(store: ResultsStore, run_names: Sequence[str] | None) -> dict[str, Any]:
    """The stored grades of the runs' games and players, rounded for publication."""
    grades = stored_grades(store, run_names)
    strategies = [
        {key: row[key] for key in STRATEGY_FIELDS if key in row} for row in grades["strategies"]
    ]
    return {"moves": _rounded(grades["moves"]), "strategies": _rounded(strategies)}


#: The published fields of a strategy grade.
STRATEGY_FIELDS = (
    "player",
    "env_id",
    "exploitability",
    "ci95",
    "best_response",
    "distance",
    "invalid",
    "samples",
    "info_sets",
    "policy",
)


def env_order(env_id: str) -> tuple[int, str]:
    """The pages' order of games: the curated games first, in their listing order, then by id."""
    return (list(CURATED).index(env_id) if env_id in CURATED else len(CURATED), env_id)


def _reference_kinds() -> frozenset[str]:
    """Kinds of the built-in opponents (the "solvers" the pages have a column for)."""
    return frozenset(KINDS)


def _score(score: Score | None) -> dict[str, Any] | None:
    if score is None:
        return None
    return {
        "games": score.games,
        "mean": _number(score.mean),
        "ci95": _number(score.ci95),
        "normalized": _number(score.normalized),
    }


def _trueskill(rating: PlayerRating | None) -> dict[str, Any] | None:
    if rating is None:
        return None
    return {
        "mu": _number(rating.mu),
        "sigma": _number(rating.sigma),
        "conservative": _number(rating.conservative),
        "mu_spread": _number(rating.mu_spread),
    }


def _invalid(rows: Sequence[Summary]) -> dict[str, Any]:
    """Answers, invalid answers (by kind), their rate and forfeits over ``rows``."""
    answers = sum(row.answers for row in rows)
    invalid = sum(row.invalid_answers for row in rows)
    by_kind: dict[str, int] = defaultdict(int)
    for row in rows:
        for kind, count in row.invalid_by_kind.items():
            by_kind[kind] += count
    return {
        "answers": answers,
        "invalid_answers": invalid,
        "invalid_rate": _number(invalid / answers if answers else 0.0),
        "invalid_by_kind": dict(sorted(by_kind.items())),
        "forfeits": sum(row.forfeits for row in rows),
    }


def _versus(row: Summary) -> dict[str, Any]:
    return {
        "games": row.games,
        "mean": _number(row.mean_return),
        "ci95": _number(row.ci95),
        "normalized": _number(row.marshal_normalized),
        "wins": row.wins,
        "draws": row.draws,
        "losses": row.losses,
    }


def _record(rows: Sequence[Summary]) -> dict[str, int | None]:
    """Wins, draws and losses summed over competitive ``rows`` (``None`` when there are none)."""
    if not rows:
        return {"wins": None, "draws": None, "losses": None}
    return {
        "wins": sum(row.wins or 0 for row in rows),
        "draws": sum(row.draws or 0 for row in rows),
        "losses": sum(row.losses or 0 for row in rows),
    }


def _group_ranks(order: Sequence[str], baselines: frozenset[str]) -> dict[str, int]:
    """Ranks counted apart for models and baselines, in ``order``.

    A baseline (a built-in solver or bot) is a reference point, not a contestant: ``random``
    beating a forfeiting model must not make it "#1" above every model, so the models are
    ranked among themselves and the baselines among themselves.
    """
    counters = {True: 0, False: 0}
    ranks = {}
    for player in order:
        group = player in baselines
        counters[group] += 1
        ranks[player] = counters[group]
    return ranks


def _ranked(
    players: Sequence[str],
    table: RatingTable | None,
    fallback: dict[str, float],
    unranked: Collection[str],
    baselines: frozenset[str],
) -> list[tuple[int | None, str]]:
    """Players with their rank: rated ones in table order, then the rest by ``fallback``.

    Models and baselines are ranked apart (:func:`_group_ranks`). Players in ``unranked`` keep
    their place in that order but get no rank.
    """
    rated = [r.player for r in table.ratings if r.player in players] if table else []
    rest = sorted(
        (p for p in players if p not in rated),
        key=lambda p: (-fallback.get(p, -math.inf), p),
    )
    rank = _group_ranks([player for player in rated if player not in unranked], baselines)
    return [(rank.get(player), player) for player in rated] + [(None, p) for p in rest]


def _rating(table: RatingTable | None, player: str) -> PlayerRating | None:
    """``player``'s rating in ``table``, ``None`` when it has none (or there is no table)."""
    if table is None or all(rating.player != player for rating in table.ratings):
        return None
    return table[player]


def _seats(env_id: str, summaries: Sequence[Summary]) -> dict[str, Any]:
    """Each player's mean return per seat over its opponents, in games of more than two seats.

    ``{"seats": [...]}``, or ``{}`` in two-seat games, whose pages stay as they were.
    """
    if get_spec(env_id).cooperative or get_spec(env_id).num_players <= 2:
        return {}
    samples: dict[tuple[str, int], list[float]] = defaultdict(list)
    for row in summaries:
        if row.env_id == env_id and row.seat is not None and row.opponent != SELF:
            samples[(row.player, row.seat)] += row.returns
    seats = []
    for (player, seat), values in sorted(samples.items()):
        mean, half = mean_ci(values)
        seats.append(
            {
                "player": player,
                "seat": seat,
                "games": len(values),
                "mean_return": {"mean": _number(mean), "ci95": _number(half)},
            }
        )
    return {"seats": seats}


def _competitive(
    env_id: str,
    rows: dict[str, dict[str, Summary]],
    table: RatingTable | None,
    kinds: dict[str, str],
    baselines: frozenset[str],
    unranked: Mapping[str, str],
) -> dict[str, Any]:
    spec = get_spec(env_id)
    pooled: dict[str, list[float]] = {
        player: [v for opp, row in by_opp.items() if opp != SELF for v in row.returns]
        for player, by_opp in rows.items()
    }
    normalized = {
        player: marshal_score(spec, mean_ci(values)[0])
        for player, values in pooled.items()
        if values
    }
    order = _ranked(sorted(rows), table, normalized, unranked, baselines)
    entries = []
    for rank, player in order:
        by_opp = rows[player]
        versus_rows = [row for opp, row in by_opp.items() if opp != SELF]
        mean, half = mean_ci(pooled[player])
        entries.append(
            {
                "rank": rank,
                "unranked_reason": unranked.get(player),
                "player": player,
                "kind": kinds.get(player, ""),
                "baseline": player in baselines,
                "trueskill": _trueskill(_rating(table, player)),
                "games": sum(row.games for row in versus_rows),
                "wins": sum(row.wins or 0 for row in versus_rows),
                "draws": sum(row.draws or 0 for row in versus_rows),
                "losses": sum(row.losses or 0 for row in versus_rows),
                "mean_return": {"mean": _number(mean), "ci95": _number(half)},
                "normalized": _number(normalized.get(player)),
                **_invalid(list(by_opp.values())),
                "versus": {opp: _versus(row) for opp, row in sorted(by_opp.items())},
            }
        )
    return {
        "env_id": env_id,
        "title": spec.title,
        "cooperative": False,
        "normalization": {"worst": spec.worst, "optimum": spec.optimum},
        "duplicate_matches": has_chance(env_id),
        "rated_matches": table.matches if table else 0,
        "draw_probability": _number(table.draw_probability) if table else None,
        "reference_opponents": [p for _, p in order if p in baselines],
        "rows": entries,
    }


def _cooperative(
    env_id: str,
    summaries: Sequence[Summary],
    rows: dict[str, dict[str, Summary]],
    kinds: dict[str, str],
    baselines: frozenset[str],
    unranked: Mapping[str, str],
) -> dict[str, Any]:
    spec = get_spec(env_id)
    bots = sorted(name for name, kind in kinds.items() if kind == PARTNER_BOT_KIND)
    standings = cooperative_standings(summaries, env_id, bots)
    kept = [standing.player for standing in standings if standing.player not in unranked]
    ranks = _group_ranks(kept, baselines)
    entries = []
    for standing in standings:
        by_partner = rows[standing.player]
        entries.append(
            {
                "rank": ranks.get(standing.player),
                "unranked_reason": unranked.get(standing.player),
                "player": standing.player,
                "kind": kinds.get(standing.player, ""),
                "baseline": standing.player in baselines,
                "games": sum(row.games for row in by_partner.values()),
                "self_play": _score(standing.self_play),
                "with_partner_bot": _score(standing.with_partner_bot),
                "partners": {p: _score(s) for p, s in standing.partners.items()},
                **_invalid(list(by_partner.values())),
            }
        )
    return {
        "env_id": env_id,
        "title": spec.title,
        "cooperative": True,
        "normalization": {"worst": spec.worst, "optimum": spec.optimum},
        "partner_bots": bots,
        "rows": entries,
    }


def _overall(
    envs: Sequence[dict[str, Any]],
    table: RatingTable | None,
    kinds: dict[str, str],
    summaries: Sequence[Summary],
    baselines: frozenset[str],
    unranked: Mapping[str, str],
) -> dict[str, Any]:
    normalized: dict[str, dict[str, float | None]] = defaultdict(dict)
    for env in envs:
        for row in env["rows"]:
            if env["cooperative"]:
                score = row["self_play"] or row["with_partner_bot"]
                value = score["normalized"] if score else None
            else:
                value = row["normalized"]
            normalized[row["player"]][env["env_id"]] = value
    means = {
        player: float(sum(values)) / len(values)
        for player, by_env in normalized.items()
        if (values := [v for v in by_env.values() if v is not None])
    }
    by_player: dict[str, list[Summary]] = defaultdict(list)
    versus: dict[str, list[Summary]] = defaultdict(list)  # competitive, not self-play
    for summary in summaries:
        if summary.seat is None:
            by_player[summary.player].append(summary)
            if summary.wins is not None:
                versus[summary.player].append(summary)
    entries = []
    for rank, player in _ranked(sorted(normalized), table, means, unranked, baselines):
        rating = _rating(table, player)
        entries.append(
            {
                "rank": rank,
                "unranked_reason": unranked.get(player),
                "player": player,
                "kind": kinds.get(player, ""),
                "baseline": player in baselines,
                "trueskill": _trueskill(rating),
                "games": sum(row.games for row in by_player[player]),
                "rated_matches": rating.matches if rating else 0,
                **_record(versus[player]),
                "normalized": dict(normalized[player]),
                "mean_normalized": _number(means.get(player)),
                **_invalid(by_player[player]),
            }
        )
    return {
        "rated_matches": table.matches if table else 0,
        "draw_probability": _number(table.draw_probability) if table else None,
        "rows": entries,
    }


def _samples(
    store: ResultsStore, games: Sequence[StoredGame], run_names: dict[int, str], limit: int
) -> list[dict[str, Any]]:
    """Up to ``limit`` invalid final answers per player and env, in canonical game order."""
    by_id = {game.id: game for game in games}
    flagged: dict[int, set[int]] = defaultdict(set)  # game id -> seats with an invalid answer
    for stats in store.move_stats(sorted({game.run_id for game in games})):
        if stats.errors and stats.game_id in by_id:
            flagged[stats.game_id].add(stats.seat)
    for game in games:  # a forfeit by a player that records no errors (a bot's illegal move)
        if game.forfeited_by is not None:
            flagged[game.id].add(game.forfeited_by)
    order = sorted(flagged, key=lambda gid: (run_names[by_id[gid].run_id], by_id[gid].game_key))
    taken: dict[tuple[str, str], int] = defaultdict(int)
    samples: list[dict[str, Any]] = []
    for game_id in order:
        game = by_id[game_id]
        wanted = {
            seat for seat in flagged[game_id] if taken[(game.players[seat], game.env_id)] < limit
        }
        if not wanted:
            continue
        for move in store.moves(game_id):
            player = game.players[move.seat]
            key = (player, game.env_id)
            if move.seat not in wanted or move.error is None or taken[key] >= limit:
                continue
            taken[key] += 1
            response = move.response
            samples.append(
                {
                    "player": player,
                    "env_id": game.env_id,
                    "run": run_names[game.run_id],
                    "game_key": game.game_key,
                    "ply": move.ply,
                    "error_kind": move.error.kind,
                    "error_detail": move.error.detail,
                    "response": response[:RESPONSE_LIMIT],
                    "truncated": len(response) > RESPONSE_LIMIT,
                }
            )
    samples.sort(key=lambda s: (env_order(s["env_id"]), s["player"], s["run"], s["game_key"]))
    return samples


def games_digest(games: Sequence[StoredGame], run_names: dict[int, str]) -> str:
    """A SHA-256 over the games' content (run, key, env, seed, seats, returns, status, history).

    Independent of row ids, timings and storage order: two stores holding the same games have
    the same digest, so a rerun of the ladder can be checked against the published one.
    """
    lines = sorted(
        json.dumps(
            [
                run_names[g.run_id],
                g.game_key,
                g.env_id,
                g.seed,
                list(g.players),
                list(g.returns),
                g.status,
                list(g.history),
            ],
            separators=(",", ":"),
        )
        for g in games
    )
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode() + b"\n")
    return "sha256:" + digest.hexdigest()


def player_costs(
    store: ResultsStore, run_names: Sequence[str], prices: Mapping[str, Price] | None
) -> dict[str, dict[str, Any]]:
    """What each player's answers cost over the published runs (:mod:`strategic_arena.arena.costs`).

    Summed over runs: games, decisions, answers, prompt and completion tokens the endpoint
    reported, tokens per decision, model time and money (``None`` without a price). Players
    that report no tokens (the built-in bots) have none.
    """
    totals: dict[str, dict[str, Any]] = {}
    fields = ("games", "decisions", "answers", "prompt_tokens", "completion_tokens")
    for row in costs(store, run_names, prices)["players"]:
        total = totals.setdefault(
            row["player"], {**dict.fromkeys(fields, 0), "model_time_s": 0.0, "money": None}
        )
        for name in fields:
            total[name] += row[name]
        total["model_time_s"] += row["model_time_s"]
        if row["money"] is not None:
            total["money"] = (total["money"] or 0.0) + row["money"]
    for total in totals.values():
        tokens = total["prompt_tokens"] + total["completion_tokens"]
        total["tokens_per_decision"] = tokens / total["decisions"] if total["decisions"] else 0.0
    return totals


def build(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    *,
    settings: TrueSkillSettings | None = None,
    source: str | None = None,
    samples_per_player: int = SAMPLES_PER_PLAYER,
    max_left_out: float = MAX_LEFT_OUT,
    title: str | None = None,
    description: str | None = None,
    prices: Mapping[str, Price] | None = None,
) -> dict[str, Any]:
    """The leaderboard of the games of ``run_names`` (every run when ``None``).

    Args:
        store: the results store.
        run_names: runs to include.
        settings: TrueSkill parameters (defaults when ``None``).
        source: how to name the database in the output (e.g. its file name); ``None`` omits it.
        samples_per_player: invalid answers kept per player and env.
        max_left_out: the largest share of a player's games its own server failures may leave
            unscored for it to be ranked (0 ranks only players without such games).
        title: the pages' title (default :data:`DEFAULT_TITLE`).
        description: a paragraph under the title (plain text; none by default).
        prices: money per million prompt and completion tokens, by player (each player's
            ``cost.money``; none without).

    Returns:
        JSON-ready data that validates against :func:`schema`.
    """
    if not 0.0 <= max_left_out <= 1.0:
        raise ValueError(f"max_left_out must be in [0, 1], not {max_left_out}")
    settings = settings or TrueSkillSettings()
    runs = [run for run in store.runs() if run_names is None or run.name in run_names]
    if run_names is not None:
        for name in run_names:
            store.run_id(name)  # a KeyError naming the known runs
    run_ids = {run.id: run.name for run in runs}
    games = [game for run_id in run_ids for game in store.games(run_id)]
    summaries = summarize(store, [run.name for run in runs])
    tables = rating_tables(store, [run.name for run in runs], settings)
    registered = store.players()
    present = {name for game in games for name in game.players}
    kinds = {name: registered[name].kind if name in registered else "" for name in present}
    reference = _reference_kinds()
    baselines = frozenset(name for name, kind in kinds.items() if kind in reference)
    coverage = Coverage.count(games, left_out(store, [run.name for run in runs]), max_left_out)
    rows: dict[str, dict[str, dict[str, Summary]]] = defaultdict(lambda: defaultdict(dict))
    for summary in summaries:
        if summary.seat is None:
            rows[summary.env_id][summary.player][summary.opponent] = summary
    envs = []
    for env_id in sorted(rows, key=env_order):
        unranked = coverage.unranked(env_id, rows[env_id])
        if get_spec(env_id).cooperative:
            env = _cooperative(env_id, summaries, rows[env_id], kinds, baselines, unranked)
        else:
            table = tables.get(env_id)
            env = _competitive(env_id, rows[env_id], table, kinds, baselines, unranked)
        envs.append({**env, "coverage": coverage.env_rows(env_id), **_seats(env_id, summaries)})
    overall_unranked = coverage.unranked(None, present)
    spent = player_costs(store, [run.name for run in runs], prices)
    data: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "generator": {"name": "strategic-arena", "version": __version__},
        "page": {"title": title or DEFAULT_TITLE, "description": description or None},
        "source": {
            "database": source,
            "store_schema_version": STORE_SCHEMA_VERSION,
            "runs": [
                {
                    "name": run.name,
                    "seed": run.seed,
                    "settings": run.settings,
                    "command": reproduce.command(run.name, run.seed, run.settings, source),
                }
                for run in runs
            ],
            "games": len(games),
            "games_digest": games_digest(games, run_ids),
        },
        "rating": {
            "method": "trueskill",
            "ranking": "mu - 3 * sigma",
            "order": "mean over passes in seeded random orders of the canonically sorted matches",
            "matches": "a game; in games with chance, a deal played in both seatings (duplicate)",
            **settings.as_dict(),
            "draw_probability": (
                "share of drawn matches per pool, clamped to [0.01, 0.9]"
                if settings.draw_probability is None
                else settings.draw_probability
            ),
            "max_left_out_share": max_left_out,
        },
        "coverage": coverage.rows(),
        "players": {
            name: {
                "kind": kinds[name],
                "baseline": name in baselines,
                "params": dict(registered[name].params) if name in registered else {},
                "cost": spent.get(name),
            }
            for name in sorted(present)
        },
        "envs": envs,
        "overall": _overall(
            envs, tables.get(OVERALL), kinds, summaries, baselines, overall_unranked
        ),
        "invalid_samples": _samples(store, games, run_ids, samples_per_player),
        "grades": _grades(store, None if run_names is None else [run.name for run in runs]),
    }
    # Only when there are team games: a leaderboard without them stays as it was.
    teams = team_summaries(games)
    if teams:
        data["teams"] = [
            {**asdict(team), "mean_return": _number(team.mean_return)} for team in teams
        ]
    # Only when the store holds transfer runs (reasoning benchmarks): otherwise as it was.
    transfer = transfer_data(
        store, None if run_names is None else [run.name for run in runs], _rounded
    )
    if transfer is not None:
        data["transfer"] = transfer
    # Only when some row pools prompt versions: a leaderboard without mixes stays as it was.
    mixes = prompt_mixes(games)
    if mixes:
        data["prompt_mixes"] = [
            {
                "player": mix.player,
                "env_id": mix.env_id,
                "versions": [{"version": label, "games": n} for label, n in mix.versions],
            }
            for mix in mixes
        ]
    return data
