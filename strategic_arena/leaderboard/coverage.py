"""Coverage: how many of a player's games its own server left unscored, and the ranking rule.

A game that a player's server stopped (every retry failed, no replay scored it) is in no score.
A server that fails on purpose whenever it is losing would so hide its losses, and a share
pooled over all its games would hide the trick: breaking 15% of its Kuhn games is 2.5% of a
player's games when it also plays many other games. So the left-out share is counted at three
levels, and the rule applies at each:

* **per game and opponent**: the player's games in one env against one opponent (``self`` for
  self-play); above the limit, the player is not ranked in that env;
* **per game**: its games in one env, all opponents; above the limit, not ranked in that env;
* **overall**: all its games; above the limit, or not ranked in some env (the overall pool
  holds that env's matches too), the player is not ranked overall.

A player that is not ranked keeps its rows, ratings and scores; its ``rank`` is ``None`` and its
rows say why (``unranked_reason``), so a reader never has to guess.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from strategic_arena.arena.metrics import SELF, LeftOut
from strategic_arena.arena.records import StoredGame
from strategic_arena.games import get_spec
from strategic_arena.leaderboard._format import percent


@dataclass
class Count:
    """Scored and left-out games of one player at one level (overall, env, env and opponent)."""

    scored: int = 0
    left_out: int = 0

    @property
    def total(self) -> int:
        """Scored and left-out games together."""
        return self.scored + self.left_out

    @property
    def share(self) -> float:
        """Left-out share of the games (0 without games)."""
        return self.left_out / self.total if self.total else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The published counts (``left_out_share`` rounded to 4 places, like every float)."""
        share = round(self.share, 4)
        return {
            "scored_games": self.scored,
            "left_out_games": self.left_out,
            "left_out_share": 0.0 if share == 0 else share,
        }


def _opponent(game: StoredGame, player: str) -> str:
    """``player``'s opponent in ``game``: the other seat's player, or ``self`` in self-play."""
    others = [name for name in game.players if name != player]
    return others[0] if others else SELF


@dataclass(frozen=True)
class Coverage:
    """The counts of every player at every level, and the rule with its limit.

    Attributes:
        max_left_out: the largest left-out share that still ranks a player.
        overall: player -> its counts over every game.
        by_env: env id -> player -> its counts in that env.
        by_opponent: env id -> player -> opponent -> its counts against that opponent.
    """

    max_left_out: float
    overall: dict[str, Count]
    by_env: dict[str, dict[str, Count]]
    by_opponent: dict[str, dict[str, dict[str, Count]]]

    @classmethod
    def count(
        cls, scored: Iterable[StoredGame], left_out: Iterable[LeftOut], max_left_out: float
    ) -> Coverage:
        """Count ``scored`` games and ``left_out`` ones per player, env and opponent."""
        overall: dict[str, Count] = defaultdict(Count)
        by_env: dict[str, dict[str, Count]] = defaultdict(lambda: defaultdict(Count))
        by_opponent: dict[str, dict[str, dict[str, Count]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(Count))
        )

        def counts(game: StoredGame, player: str) -> list[Count]:
            opponent = _opponent(game, player)
            env = game.env_id
            return [overall[player], by_env[env][player], by_opponent[env][player][opponent]]

        for game in scored:
            for player in set(game.players):
                for count in counts(game, player):
                    count.scored += 1
        for item in left_out:
            for count in counts(item.game, item.player):
                count.left_out += 1
        return cls(max_left_out, overall, by_env, by_opponent)

    def _over(self, count: Count) -> bool:
        return count.left_out > 0 and count.share > self.max_left_out

    def _sentence(self, count: Count, games: str) -> str:
        return (
            f"its server left {count.left_out} of its {count.total} {games} unscored "
            f"({percent(count.share)}%, above the {percent(self.max_left_out)}% allowed)"
        )

    def env_reason(self, env_id: str, player: str) -> str | None:
        """Why ``player`` is not ranked in ``env_id`` (``None``: it is ranked there)."""
        title = get_spec(env_id).title
        count = self.by_env.get(env_id, {}).get(player)
        if count is not None and self._over(count):
            return self._sentence(count, f"{title} games")
        by_opponent = self.by_opponent.get(env_id, {}).get(player, {})
        for opponent, count in sorted(by_opponent.items()):
            if self._over(count):
                against = "in self-play" if opponent == SELF else f"against {opponent}"
                return self._sentence(count, f"{title} games {against}")
        return None

    def overall_reason(self, player: str) -> str | None:
        """Why ``player`` is not ranked overall (``None``: it is ranked)."""
        count = self.overall.get(player)
        if count is not None and self._over(count):
            return self._sentence(count, "games")
        for env_id in sorted(self.by_env):
            if (reason := self.env_reason(env_id, player)) is not None:
                return f"not ranked at {get_spec(env_id).title}: {reason}"
        return None

    def unranked(self, env_id: str | None, players: Iterable[str]) -> dict[str, str]:
        """The reasons of the ``players`` not ranked in ``env_id`` (overall when ``None``)."""
        reasons = {
            player: self.env_reason(env_id, player)
            if env_id is not None
            else self.overall_reason(player)
            for player in players
        }
        return {player: reason for player, reason in reasons.items() if reason is not None}

    def rows(self) -> list[dict[str, Any]]:
        """The published overall rows: every player with left-out games, by name."""
        return [
            {"player": player, **count.as_dict(), "ranked": self.overall_reason(player) is None}
            for player, count in sorted(self.overall.items())
            if count.left_out
        ]

    def env_rows(self, env_id: str) -> list[dict[str, Any]]:
        """The published rows of one env: players with left-out games there, by name.

        Each lists the opponents it left games out against.
        """
        rows = []
        for player, count in sorted(self.by_env.get(env_id, {}).items()):
            if not count.left_out:
                continue
            opponents = self.by_opponent[env_id][player]
            rows.append(
                {
                    "player": player,
                    **count.as_dict(),
                    "ranked": self.env_reason(env_id, player) is None,
                    "opponents": [
                        {"opponent": opponent, **opponent_count.as_dict()}
                        for opponent, opponent_count in sorted(opponents.items())
                        if opponent_count.left_out
                    ],
                }
            )
        return rows
