"""Debates in the report: the majority's accuracy at every turn, as MAPoRL's Table 7 gives it.

A debate's stored return is its last turn's score; the earlier turns' scores are not stored
apart, since the stored solutions determine them: each scored debate of the runs is replayed
from the store (:func:`strategic_arena.arena.replay.replay_game`: its seed picks the problem,
its moves are the solutions) and the replayed game's turn scores are read
(:attr:`strategic_arena.games.debate.DebateState.turn_scores`: the majority vote of every turn,
a tie scoring the share of the tied answers that are right).

Rows are one per debate setting (env id) and line-up: the models in the seats, counted, in any
seating (``A + B x2``: one seat of A and two of B, whichever seat A took), each with the number
of games and the mean score of every turn, with a 95% confidence half-width.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable_line
from strategic_arena.games import get_spec
from strategic_arena.games.debate import DebateSpec, DebateState

__all__ = ["DebateAccuracy", "debate_accuracy", "lineup", "render_debates"]

Interval = Callable[[Sequence[float]], tuple[float, float | None]]
"""A sample -> its mean and the half-width of its 95% interval (``None`` below two values)."""


@dataclass(frozen=True)
class DebateAccuracy:
    """The majority's accuracy per turn of one debate setting and line-up.

    Attributes:
        env_id: the debate (agents, turns, problems).
        lineup: the models in its seats, counted (``A + B x2``).
        games: scored debates.
        accuracy: the mean majority score of each turn, turn 1 first.
        ci95: the half-width of each turn's 95% interval (``None`` below two games).
    """

    env_id: str
    lineup: str
    games: int
    accuracy: tuple[float, ...]
    ci95: tuple[float | None, ...]


def lineup(players: Sequence[str]) -> str:
    """The models of a debate, counted, in name order: ``A + B x2`` (seating aside)."""
    counts = Counter(players)
    return " + ".join(
        name if count == 1 else f"{name} x{count}" for name, count in sorted(counts.items())
    )


def debate_accuracy(
    store: ResultsStore, run_ids: Sequence[int] | None, interval: Interval
) -> list[DebateAccuracy]:
    """The accuracy per turn of every debate setting and line-up among the scored games.

    Args:
        store: the results store.
        run_ids: the runs (``None``: every run).
        interval: a sample -> its mean and 95% half-width (the report's
            :func:`~strategic_arena.arena.metrics.mean_ci`).
    """
    games = (
        store.games()
        if run_ids is None
        else [game for run_id in run_ids for game in store.games(run_id)]
    )
    scores: dict[tuple[str, str], list[tuple[float, ...]]] = defaultdict(list)
    for game in games:
        if not game.scored or not isinstance(get_spec(game.env_id), DebateSpec):
            continue
        state = replay_game(store, game.id).env.spiel_state
        assert isinstance(state, DebateState)
        scores[(game.env_id, lineup(game.players))].append(state.turn_scores)
    rows = []
    for (env_id, names), per_game in sorted(scores.items()):
        turns = list(zip(*per_game, strict=True))
        intervals = [interval(list(turn)) for turn in turns]
        rows.append(
            DebateAccuracy(
                env_id=env_id,
                lineup=names,
                games=len(per_game),
                accuracy=tuple(mean for mean, _ in intervals),
                ci95=tuple(half for _, half in intervals),
            )
        )
    return rows


def render_debates(rows: Sequence[DebateAccuracy]) -> list[str]:
    """The report's lines for the debates (none when there are none)."""
    if not rows:
        return []
    lines = ["", "== Debates: accuracy of the majority vote per turn (MAPoRL's Table 7)"]
    for row in rows:
        turns = ", ".join(
            f"turn {t + 1} {mean:.3f}" + (f" ± {half:.3f}" if half is not None else "")
            for t, (mean, half) in enumerate(zip(row.accuracy, row.ci95, strict=True))
        )
        lines.append(
            f"{printable_line(row.env_id)}: {printable_line(row.lineup)}: {row.games} games; "
            f"{turns}"
        )
    lines.append(
        "accuracy: the majority's answer right (1) or wrong (0) at the end of each turn; a "
        "tie scores the share of the tied answers that are right"
    )
    return lines
