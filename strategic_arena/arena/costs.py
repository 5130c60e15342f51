"""What the answers cost: tokens, time and money per run, per model and per matchup.

Recomputed from the store, like every figure of the report:

* **Tokens** are those the endpoints reported (``usage`` of each reply, summed over a
  decision's answers, as stored per move), over *every* stored game, incomplete ones included:
  a game a server failure stopped was paid for all the same. A player that reports no usage
  (the built-in bots) costs nothing and is not listed.
* **Model time** is the sum of the player's decision latencies (seconds spent waiting on its
  endpoint); a run's **wall time** spans from its first game's start to its last game's end
  (games overlap, so it is less than the sum of their durations).
* **Money** comes only from a price table the user gives (:func:`read_prices`,
  :func:`parse_price`): prices per million prompt and completion tokens, by player name, in
  whatever currency the user means; a player without a price has none.
* **Per matchup**: the same sums over the games of one player against one opponent at one game,
  so a sequential test (``eval --until decided``) says what its decision cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door import Refused, read_json
from strategic_arena.door.printable import printable_line


@dataclass(frozen=True)
class Price:
    """Money per million tokens: prompt (input) and completion (output)."""

    prompt: float
    completion: float

    def __post_init__(self) -> None:
        for name, value in (("prompt", self.prompt), ("completion", self.completion)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"a {name} price must be a number at least 0, not {value!r}")

    def of(self, prompt_tokens: int, completion_tokens: int) -> float:
        """What ``prompt_tokens`` and ``completion_tokens`` cost at this price."""
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1e6


def read_prices(path: str | Path) -> dict[str, Price]:
    """A price table file: ``{"PLAYER": {"prompt": P, "completion": C}, ...}`` per million tokens.

    Read through the door (a settings-sized regular file, JSON with finite numbers).

    Raises:
        Refused: the file cannot be read, or is not such a table (one line naming what).
    """
    table = read_json(path, "settings")
    if not isinstance(table, dict):
        raise Refused(f"the price table {Path(path).name} must be a JSON object of players")
    prices = {}
    for name, entry in table.items():
        if not isinstance(entry, dict) or set(entry) != {"prompt", "completion"}:
            raise Refused(
                f"the price of {printable_line(name, 80)!r} must be "
                '{"prompt": PRICE, "completion": PRICE} (per million tokens)'
            )
        shown_name = printable_line(name, 80)
        try:
            prompt, completion = float(entry["prompt"]), float(entry["completion"])
        except (TypeError, ValueError):
            raise Refused(f"the price of {shown_name!r} is not two numbers") from None
        try:
            prices[name] = Price(prompt, completion)
        except ValueError as error:
            raise Refused(f"the price of {shown_name!r}: {error}") from None
    return prices


def parse_price(text: str) -> tuple[str, Price]:
    """``NAME=PROMPT,COMPLETION`` (per million tokens) -> the name and its :class:`Price`.

    Raises:
        ValueError: not of that form, or a price below 0.
    """
    name, equals, numbers = text.rpartition("=")
    parts = numbers.split(",")
    if not equals or not name or len(parts) != 2:
        shown_text = printable_line(text)
        raise ValueError(
            f"--price takes NAME=PROMPT,COMPLETION (per million tokens), not {shown_text!r}"
        )
    try:
        return name, Price(float(parts[0]), float(parts[1]))
    except ValueError:
        raise ValueError(f"--price {printable_line(text)!r}: prices must be numbers") from None


@dataclass
class Cost:
    """Tokens, time and money of one player in one run (or one matchup of it).

    Attributes:
        run: the run.
        player: the player.
        env_id: the game (``None``: every game of the run).
        opponent: the opponent (``None``: every opponent).
        games: stored games it played (incomplete ones included).
        decisions: decisions it made.
        answers: answers it gave (retries included).
        prompt_tokens / completion_tokens: tokens its endpoint reported.
        model_time_s: seconds spent waiting on its endpoint.
        money: at the user's price (``None``: no price given for it).
    """

    run: str
    player: str
    env_id: str | None = None
    opponent: str | None = None
    games: int = 0
    decisions: int = 0
    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_time_s: float = 0.0
    money: float | None = None
    _game_ids: set[int] = field(default_factory=set, repr=False)

    @property
    def tokens_per_decision(self) -> float:
        """Prompt and completion tokens per decision (0 without decisions)."""
        tokens = self.prompt_tokens + self.completion_tokens
        return tokens / self.decisions if self.decisions else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        data = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        data["tokens_per_decision"] = self.tokens_per_decision
        return data


def _wall_time(games: Sequence[StoredGame]) -> float:
    """From the first game's start to the last game's end (0 without games)."""
    if not games:
        return 0.0
    return max(g.finished for g in games) - min(g.finished - g.duration_s for g in games)


def costs(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    prices: Mapping[str, Price] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """The report's ``costs``: per run, per player of a run, and per matchup.

    Returns:
        ``runs`` (games, wall time, tokens and money of each run), ``players`` (each player
        whose endpoint reported tokens, per run) and ``matchups`` (the same per game and
        opponent), JSON-ready.
    """
    prices = prices or {}
    runs = [run for run in store.runs() if run_names is None or run.name in run_names]
    names = {run.id: run.name for run in runs}
    games = {g.id: g for g in store.games(include_incomplete=True) if g.run_id in names}
    per_player: dict[tuple[str, str], Cost] = {}
    per_matchup: dict[tuple[str, str, str, str], Cost] = {}
    for move in store.move_stats(list(names)):
        game = games[move.game_id]
        player = game.players[move.seat]
        others = ",".join(dict.fromkeys(p for p in game.players if p != player)) or "self"
        run = names[game.run_id]
        for cost in (
            per_player.setdefault((run, player), Cost(run, player)),
            per_matchup.setdefault(
                (run, player, game.env_id, others), Cost(run, player, game.env_id, others)
            ),
        ):
            _add(cost, game.id, move.attempts, move.prompt_tokens, move.completion_tokens)
            cost.model_time_s += move.latency_s
    players = _priced([c for c in per_player.values() if _paid(c)], prices)
    matchups = _priced([c for c in per_matchup.values() if _paid(c)], prices)
    return {
        "runs": [_run_row(run.name, games.values(), run.id, players) for run in runs],
        "players": [cost.as_dict() for cost in players],
        "matchups": [cost.as_dict() for cost in matchups],
    }


def _add(cost: Cost, game_id: int, attempts: int, prompt: int, completion: int) -> None:
    cost._game_ids.add(game_id)
    cost.games = len(cost._game_ids)
    cost.decisions += 1
    cost.answers += attempts
    cost.prompt_tokens += prompt
    cost.completion_tokens += completion


def _paid(cost: Cost) -> bool:
    """Whether the player's endpoint reported any token (bots report none)."""
    return cost.prompt_tokens + cost.completion_tokens > 0


def _priced(found: list[Cost], prices: Mapping[str, Price]) -> list[Cost]:
    """The costs with their money where the player has a price, sorted by run and player."""
    for cost in found:
        price = prices.get(cost.player)
        if price is not None:
            cost.money = price.of(cost.prompt_tokens, cost.completion_tokens)
    return sorted(found, key=lambda c: (c.run, c.player, c.env_id or "", c.opponent or ""))


def _run_row(
    name: str, games: Iterable[StoredGame], run_id: int, players: Sequence[Cost]
) -> dict[str, Any]:
    mine = [game for game in games if game.run_id == run_id]
    spent = [cost for cost in players if cost.run == name]
    priced = [cost.money for cost in spent if cost.money is not None]
    return {
        "run": name,
        "games": len(mine),
        "wall_time_s": _wall_time(mine),
        "prompt_tokens": sum(cost.prompt_tokens for cost in spent),
        "completion_tokens": sum(cost.completion_tokens for cost in spent),
        "money": sum(priced) if priced else None,
        "unpriced_players": [cost.player for cost in spent if cost.money is None],
    }


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def render(data: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """The report's cost lines (nothing when no player reported tokens)."""
    players = data.get("players", [])
    if not players:
        return []
    width = max([24, *(len(printable_line(row["player"])) for row in players)])
    lines = [
        "",
        "== Cost (tokens the endpoints reported, every stored game; money at the given prices)",
        f"{'player':<{width}} {'games':>6} {'decisions':>9} {'prompt tok':>11} "
        f"{'completion tok':>14} {'tok/decision':>12} {'model s':>9} {'money':>10}",
    ]
    for run in data.get("runs", []):
        unpriced = run["unpriced_players"]
        lines.append(
            f"run {printable_line(run['run'])}: {run['games']} games in "
            f"{run['wall_time_s']:.1f} s, {run['prompt_tokens']} prompt + "
            f"{run['completion_tokens']} completion tokens, money {_money(run['money'])}"
            + (f" (no price for {', '.join(map(printable_line, unpriced))})" if unpriced else "")
        )
        for row in (row for row in players if row["run"] == run["run"]):
            lines.append(
                f"{printable_line(row['player']):<{width}} {row['games']:>6} "
                f"{row['decisions']:>9} {row['prompt_tokens']:>11} {row['completion_tokens']:>14} "
                f"{row['tokens_per_decision']:>12.1f} {row['model_time_s']:>9.1f} "
                f"{_money(row['money']):>10}"
            )
    return lines
