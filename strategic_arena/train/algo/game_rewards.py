"""What a game paid each seat during play, turn by turn: per-turn game rewards.

Some games pay during play, not only at the end: Hanabi pays +1 to both seats for every card
played, at the move that plays it (MARSHAL trains on exactly that signal); OpenSpiel's returns
grow as it pays. The match loop keeps the game's full action history (chance outcomes
included), so the rewards of every move are recovered here by replaying that history through
OpenSpiel and differencing the returns -- no change to the match loop, and the same numbers for
a game replayed from the store.

:func:`rewards_by_move` gives, for each decision of a finished game, what every seat received
from that decision until the next one (chance events in between included).
:func:`seat_game_rewards` turns that into one number per decision of one seat: what the seat
received from its decision until its own next decision (rewards from before its first decision
go to its first), so a seat's returns-to-go count exactly the rewards that came after each of
its choices. The zero-sum curated games pay only at the end, so their per-turn game rewards are
all 0 but the last, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from strategic_arena.games import GameSpec


def rewards_by_move(
    spec: GameSpec, history: Sequence[int], seats: Sequence[int]
) -> list[list[float]] | None:
    """Per decision (``seats[i]`` made decision i), the rewards of every seat until the next one.

    Args:
        spec: the game.
        history: OpenSpiel's action history of the game (chance outcomes included).
        seats: the seat of each decision, in order; a final decision with no action in the
            history (a forfeit) gets what nothing paid: zeros.

    Returns:
        One list of per-seat rewards per decision, or ``None`` when the history cannot be
        replayed decision by decision (a simultaneous-move game, or a history whose player
        actions do not match the decisions, or a free-text game, whose moves have no ids):
        the caller then pays everything at the end.
    """
    if not seats:
        return []  # nobody decided: nothing to attribute
    if spec.move_kind == "text":
        return None  # free-text games keep no action history; TextArena pays at the end
    num_seats = spec.num_players
    paid = [[0.0] * num_seats for _ in seats]
    state = spec.game.new_initial_state()
    before = [0.0] * num_seats
    decision = -1
    for action in history:
        if state.is_simultaneous_node():
            return None
        if not state.is_chance_node():
            decision += 1
            if decision >= len(seats) or state.current_player() != seats[decision]:
                return None
        state.apply_action(action)
        # Differences of the returns, not ``rewards()``: OpenSpiel's Hanabi repeats the last
        # move's reward after a chance event (the card drawn), which would count it twice.
        after = [float(r) for r in state.returns()]
        for seat in range(num_seats):
            paid[max(decision, 0)][seat] += after[seat] - before[seat]
        before = after
    return paid


def seat_game_rewards(
    paid: Sequence[Sequence[float]], seats: Sequence[int], seat: int
) -> list[float]:
    """One number per decision of ``seat``: what it received from that decision to its next.

    Rewards paid before the seat's first decision go to its first decision, so the numbers of a
    seat always add up to everything the game paid it.
    """
    mine = [i for i, who in enumerate(seats) if who == seat]
    result = []
    for k, start in enumerate(mine):
        first = 0 if k == 0 else start
        end = mine[k + 1] if k + 1 < len(mine) else len(seats)
        result.append(float(sum(paid[i][seat] for i in range(first, end))))
    return result
